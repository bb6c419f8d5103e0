"""List helpers."""


def unique(items):
    """``items`` without duplicates, in the order they first appear."""
    return list(set(items))
