"""Planted bug: a shared store whose keys must match ^[A-Z]{3}-[0-9]{4}$ (e.g. ABC-1234); any other key is
rejected, so naive generated arguments never reach the store and a leak checker passes on nothing.
Caught by env.episode_isolation / env.reset_restores once generated arguments satisfy the pattern."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

STORE = _kit.shared_dir("pattern_leak") / "items.json"
CODE = {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$", "description": "Item code such as ABC-1234"}


def _code(a):
    code = a.get("code")
    if not isinstance(code, str) or not re.fullmatch(r"[A-Z]{3}-[0-9]{4}", code):
        raise ValueError(f"invalid item code {code!r}: expected three capitals, a dash, four digits (ABC-1234)")
    return code


def put_item(a):
    _kit.put(STORE, _code(a), str(a.get("label", "")))
    return "stored"


def get_item(a):
    return _kit.load(STORE).get(_code(a), "(no such item)")


_kit.serve(
    "pattern-leak",
    [
        (_kit.tool("put_item", {"code": CODE, "label": _kit.STR}, "Store an item's label under its code."), put_item),
        (_kit.tool("get_item", {"code": CODE}, "The label stored under an item code."), get_item),
    ],
)
