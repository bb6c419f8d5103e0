"""Planted bug: notes are kept in a file shared by every episode (the fixed twin keeps them in its workspace).
Caught by env.reset_restores and env.episode_isolation on the tool-result channel."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

STORE = _kit.shared_dir("file_leak") / "notes.json"


def write_note(a):
    _kit.put(STORE, a["key"], a["text"])
    return "ok"


def read_note(a):
    return _kit.load(STORE).get(a["key"], "(none)")


_kit.serve(
    "file-leak",
    [
        (_kit.tool("write_note", {"key": _kit.STR, "text": _kit.STR}, "Write a note under a key."), write_note),
        (_kit.tool("read_note", {"key": _kit.STR}, "Read the note under a key ('(none)' if missing)."), read_note),
    ],
)
