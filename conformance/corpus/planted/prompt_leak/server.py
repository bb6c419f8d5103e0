"""Planted bug: every saved note becomes a prompt (recall-KEY), from a file shared by every episode.
Tool results never show them: caught on the prompt channel (prompts/list and prompts/get)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

STORE = _kit.shared_dir("prompt_leak") / "notes.json"


def save_note(a):
    _kit.put(STORE, a["key"], a["text"])
    return "saved"


_kit.serve(
    "prompt-leak",
    [(_kit.tool("save_note", {"key": _kit.STR, "text": _kit.STR}, "Save a note (recall it as a prompt)."), save_note)],
    prompts=lambda: [(f"recall-{key}", text) for key, text in sorted(_kit.load(STORE).items())],
)
