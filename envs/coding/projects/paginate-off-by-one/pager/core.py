"""Split a list into pages."""


def paginate(items, page, size):
    """Items on 1-based page ``page`` of ``size`` items each."""
    if page < 1 or size < 1:
        raise ValueError("page and size start at 1")
    start = page * size
    return list(items[start:start + size])


def page_count(items, size):
    return (len(items) + size - 1) // size
