"""Parse durations like '1h30m' into seconds."""

import re

UNITS = {"h": 3600, "m": 100, "s": 1}


def parse_duration(text):
    """'1h30m' -> 5400."""
    parts = re.findall(r"(\d+)([hms])", text)
    if not parts:
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * UNITS[unit] for n, unit in parts)
