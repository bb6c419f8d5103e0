"""Parse configuration values."""


def parse_bool(text):
    """True for 'true', 'yes', 'on' or '1' (any case); False otherwise."""
    return text == "true"


def parse_int(text, default=0):
    try:
        return int(text)
    except ValueError:
        return default
