"""What an episode shows besides tool results: the channels the episode rules watch.

A *snapshot* of an episode reads, without changing anything, every channel through which
state could show: the resource list and each resource's contents, the prompt list, and the
trajectory's read-only tool calls (tools annotated ``readOnlyHint``). Rewards come with the
steps (see :func:`rewards`). Each channel has a label that the findings name
(``resource file:///notes``, ``tool read_note {"key": "k"}``, ``prompts/list``), and the
same label keys the values :mod:`openenv_mcp.conformance.volatility` learned to ignore.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import Tool

from openenv_mcp.types import CallTool, canonical_json

__all__ = ["read_only_calls", "read_only_tools", "shown", "shown_pair", "snapshot", "tool_label"]

MAX_RESOURCES = 12
"""Resources read per snapshot (the first ones listed)."""


def read_only_tools(tools: list[dict[str, Any]]) -> set[str]:
    """Names of the tools that say they change nothing (``annotations.readOnlyHint``)."""
    out = set()
    for t in tools:
        tool = Tool.model_validate(t)
        if tool.annotations is not None and tool.annotations.read_only_hint:
            out.add(tool.name)
    return out


def read_only_calls(actions: list[CallTool], read_only: set[str]) -> list[CallTool]:
    """The trajectory's calls of read-only tools, each once."""
    seen: dict[str, CallTool] = {}
    for action in actions:
        if action.name in read_only:
            seen.setdefault(f"{action.name} {canonical_json(action.arguments)}", action)
    return list(seen.values())


def tool_label(action: CallTool) -> str:
    return f"tool {action.name} {json.dumps(action.arguments, sort_keys=True)}"


async def snapshot(handle: Any, reads: list[CallTool] | None = None) -> dict[str, str]:
    """Channel label -> what it shows now (canonical JSON). ``reads``: read-only calls to make
    through ``step()`` (they count as steps: make the same ones in every episode compared)."""
    out: dict[str, str] = {}
    for action in reads or []:
        if handle.ended:
            break
        obs = await handle.step(action)
        out[tool_label(action)] = canonical_json(obs.result)
    async with handle.mcp() as client:
        try:
            resources = (await client.list_resources()).resources
        except Exception:  # no resources capability (Method not found): the channel is absent
            resources = None
        if resources is not None:
            out["resources/list"] = canonical_json(
                [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in resources]
            )
            for resource in resources[:MAX_RESOURCES]:
                try:
                    contents = (await client.read_resource(str(resource.uri))).contents
                    out[f"resource {resource.uri}"] = canonical_json(
                        [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents]
                    )
                except Exception as e:  # an error is what the channel shows
                    out[f"resource {resource.uri}"] = canonical_json({"error": str(e)})
        try:
            prompts = (await client.list_prompts()).prompts
        except Exception:
            prompts = None
        if prompts is not None:
            out["prompts/list"] = canonical_json(
                [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in prompts]
            )
    return out


def shown(canonical: str, limit: int = 100) -> str:
    """A channel's value as a person reads it: the text of resource contents or a tool result."""
    try:
        data = json.loads(canonical)
    except json.JSONDecodeError:
        return canonical[:limit]
    texts: list[str] = []
    if isinstance(data, dict) and "content" in data:
        texts = [c.get("text", f"<{c.get('type')}>") for c in data["content"] if isinstance(c, dict)]
    elif isinstance(data, list) and data and all(isinstance(c, dict) and "uri" in c for c in data):
        texts = [str(c.get("text", c.get("blob", "<blob>"))) for c in data]
    text = " ".join(texts) if texts else canonical
    return json.dumps(text if len(text) <= limit else text[: limit - 1] + "…")


def shown_pair(a: str, b: str, limit: int = 100) -> tuple[str, str]:
    """Two values of one channel as a person reads their difference. A listing (``resources/list``,
    ``prompts/list``: JSON lists of objects) is shown as its length and the entries the other
    lacks, named by ``uri`` or ``name`` (``13 entries, among them ["note://notes/k-3fa2c1"]``);
    anything else as :func:`shown` shows it."""
    try:
        la, lb = json.loads(a), json.loads(b)
    except json.JSONDecodeError:
        return shown(a, limit), shown(b, limit)
    if not (_listing(la) and _listing(lb)):
        return shown(a, limit), shown(b, limit)
    keys_a = {json.dumps(e, sort_keys=True) for e in la}
    keys_b = {json.dumps(e, sort_keys=True) for e in lb}

    def side(entries: list[dict[str, Any]], other: set[str]) -> str:
        only = [str(e.get("uri", e.get("name", "?"))) for e in entries if json.dumps(e, sort_keys=True) not in other]
        text = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
        return text + (f", among them {json.dumps(only[:5])}" if only else "")

    return side(la, keys_b), side(lb, keys_a)


def _listing(value: Any) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(e, dict) and ("uri" in e or "name" in e) for e in value)
        and not (
            value and all("text" in e or "blob" in e for e in value)  # resource contents, not a listing
        )
    )
