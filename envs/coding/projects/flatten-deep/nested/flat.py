"""Flatten nested lists."""


def flatten(value):
    """All non-list elements of a nested list, in order."""
    out = []
    for item in value:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return out
