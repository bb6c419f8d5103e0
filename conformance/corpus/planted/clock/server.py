"""Planted bug: status() prints the wall-clock time ("4:45:36 PM"); the fixed twin prints a fixed build time.
Caught by env.determinism (replayed with time passing), as nondeterminism naming the time value."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402


def status(a):
    now = time.localtime(1764000000) if _kit.FIXED else time.localtime()
    return "server up, local time " + time.strftime("%I:%M:%S %p", now).lstrip("0")


_kit.serve("clock", [(_kit.tool("status", {}, "The server's status line."), status)])
