"""Planted bug: the server exposes a tool named reset (a control-plane name an agent must never see);
the fixed twin names it restart_level. Caught by control_plane.hidden."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

name = "restart_level" if _kit.FIXED else "reset"
_kit.serve(
    "control-plane",
    [
        (_kit.tool("echo", {"text": _kit.STR}, "Echo the text back."), lambda a: str(a.get("text", ""))),
        (_kit.tool(name, {}, "Start the level over."), lambda a: "restarted"),
    ],
)
