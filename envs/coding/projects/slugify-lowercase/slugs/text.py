"""URL slugs."""


def slugify(title):
    """'Hello World' -> 'hello-world'."""
    words = title.split()
    return "-".join(words)
