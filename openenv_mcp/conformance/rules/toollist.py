"""Tool-list rules: a list that changes while an episode runs is announced, so both faces follow; each
tool's title and annotations reach both faces as its server declared them (``tools.annotations``).

A server may add or remove tools at run time; it must then declare ``tools.listChanged``
and send ``notifications/tools/list_changed``, on which the episode composes its list
again and the MCP face tells its client. A change it does not announce leaves every
client with a stale list: the agent never sees the new tool. The rule replays the
trajectory, asks the servers themselves for their lists after each call (whatever they
announced) and, when a list changed, checks that both faces (``tools/list`` over MCP, less
the framework's own ``run_code``, and ``step(ListTools)``) offer it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openenv_mcp.conformance.base import Context, Failed, Skipped, fail_if, rule
from openenv_mcp.conformance.replay import actions_for, call_text, replay
from openenv_mcp.core.codeact import RUN_CODE
from openenv_mcp.types import ListTools, canonical_json


def _wire(tools: Iterable[Any]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return sorted(str(t.get("name")) for t in tools)


def _change(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str:
    added = sorted(set(_names(after)) - set(_names(before)))
    removed = sorted(set(_names(before)) - set(_names(after)))
    parts = [f"added {added}" if added else "", f"removed {removed}" if removed else ""]
    return ", ".join(p for p in parts if p) or "changed a tool's definition"


@rule(
    "tools.list_changed",
    "error",
    "a tool list that changes during an episode is announced (notifications/tools/list_changed) "
    "and both faces offer the new list",
    needs=("episodes",),
    timeout=120,
)
async def check_list_changed(ctx: Context) -> str | None:
    handle = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        listed = await handle.server_tools()
        if listed is None:
            raise Skipped("needs the environment loaded locally (the servers' own tool lists)")
        changes = 0
        async with handle.mcp() as client:
            for i, action in enumerate(await actions_for(ctx, handle), 1):
                if handle.ended:
                    break
                await replay(handle, [action])
                now = await handle.server_tools() or []
                if canonical_json(now) == canonical_json(listed):
                    continue
                changes += 1
                what = _change(listed, now)
                listed = now
                stepped = (await handle.step(ListTools())).tools or []
                faces = {
                    "tools/list over MCP": _wire(t for t in (await client.list_tools()).tools if t.name != RUN_CODE),
                    "step(list_tools)": _wire(stepped),
                }
                for face, offered in faces.items():
                    if canonical_json(offered) != canonical_json(now):
                        raise Failed(
                            f"after step {i} {call_text(action)} the servers list tools {_names(now)} ({what}), "
                            f"but {face} still offers {_names(offered)}: the change was not announced with "
                            "notifications/tools/list_changed (a server whose tools change must declare "
                            "tools.listChanged and send it), so no client sees it"
                        )
    finally:
        await handle.close()
    if ctx.subject.tally.calls == 0:
        raise Skipped("no tool calls were made (no tools, or the episode ended at once): nothing could change")
    if changes:
        return f"the tool list changed {changes} time(s) and each change was announced: both faces followed"
    return f"the tool list stayed the same over {ctx.subject.tally.calls} calls"


ANNOTATED = ("title", "annotations")
"""The tool fields a harness decides by (approval, display): they reach both faces as the server sent them."""


def _declared(tool: dict[str, Any]) -> str:
    return canonical_json({k: tool[k] for k in ANNOTATED if k in tool})


@rule(
    "tools.annotations",
    "error",
    "every tool's title and annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint) reach "
    "both faces unchanged from its server",
    needs=("episodes",),
)
async def check_annotations(ctx: Context) -> str | None:
    handle = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        listed = await handle.server_tools()
        if listed is None:
            raise Skipped("needs the environment loaded locally (the servers' own tool lists)")
        async with handle.mcp() as client:
            faces = {
                "tools/list over MCP": _wire((await client.list_tools()).tools),
                "step(list_tools)": _wire((await handle.step(ListTools())).tools or []),
            }
    finally:
        await handle.close()
    problems = []
    for face, offered in faces.items():
        by_name = {str(t.get("name")): t for t in offered}
        for tool in listed:
            got = by_name.get(str(tool.get("name")))
            if got is not None and _declared(got) != _declared(tool):
                problems.append(
                    f"tool {tool.get('name')!r}: its server declares {_declared(tool)} but {face} offers "
                    f"{_declared(got)}: a harness that approves or shows tools by their annotations (Codex "
                    "unattended runs only tools marked safe) sees another tool than the server's"
                )
    fail_if(problems)
    hinted = sum(1 for t in listed if t.get("annotations"))
    return f"{hinted} of {len(listed)} tools carry annotations; both faces show each tool's as its server declared it"
