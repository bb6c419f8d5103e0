"""Planted bug: saved notes are readable only as resources (note://notes/KEY), from a file shared by every episode.
Tool results never show them: caught on the resource channel (resources/list and resources/read)."""

import sys
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

STORE = _kit.shared_dir("resource_leak") / "notes.json"


def save_note(a):
    _kit.put(STORE, a["key"], a["text"])
    return "saved"


_kit.serve(
    "resource-leak",
    [(_kit.tool("save_note", {"key": _kit.STR, "text": _kit.STR}, "Save a note (read it as note://KEY)."), save_note)],
    resources=lambda: [(f"note://notes/{quote(key, safe='')}", text) for key, text in sorted(_kit.load(STORE).items())],
)
