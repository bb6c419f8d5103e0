"""Planted bug: tags() joins a set of strings, whose order follows the per-process hash seed; the fixed twin
sorts them. Caught by env.determinism naming the differing order."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

TAGS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}


def tags(a):
    return ", ".join(sorted(TAGS) if _kit.FIXED else TAGS)


_kit.serve("hash-order", [(_kit.tool("tags", {}, "The tags of the catalogue."), tags)])
