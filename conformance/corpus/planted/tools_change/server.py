"""Planted bug: after its first call the server adds a tool (bonus) without declaring tools.listChanged or
sending notifications/tools/list_changed, so a client's tool list goes stale. The fixed twin declares the
capability and notifies; a faithful wrapper then refreshes both faces."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

BONUS = _kit.tool("bonus", {}, "Appears after the first call.")


async def on_call(ctx):
    server = _kit.serve.server  # type: ignore[attr-defined]
    if getattr(server, "_bonus_added", False):
        return
    server._bonus_added = True
    server.add(BONUS, lambda a: "bonus!")
    if _kit.FIXED:
        await ctx.session.send_tool_list_changed()


_kit.serve(
    "tools-change",
    [(_kit.tool("hello", {}, "Say hello."), lambda a: "hello")],
    tools_changed=_kit.FIXED,
    on_call=on_call,
)
