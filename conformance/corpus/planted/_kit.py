"""Shared plumbing of the planted-bug fixtures: a raw MCP server (the official SDK's low-level ``Server``)
over stdio, built from plain tool functions, plus the shared-state folder the buggy variants leak through.

Every fixture is ``planted/<name>/server.py``: run as ``server.py`` it is the buggy server, as
``server.py --fixed`` its fixed twin; ``planted/<name>/env.toml`` wraps the first and
``planted/<name>/fixed/env.toml`` the second. Nothing here is imported by openenv-mcp itself.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
)

FIXED = "--fixed" in sys.argv
"""True for the fixed twin."""

ToolFn = Callable[[dict[str, Any]], Any]


def shared_dir(name: str) -> Path:
    """A folder every episode of every uid can read and write: the channel a buggy fixture leaks through.
    The fixed twin uses its own working directory (the episode's workspace) instead."""
    if FIXED:
        return Path.cwd()
    path = Path("/tmp/openenv-mcp-planted") / name
    old = os.umask(0)
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o777)
    finally:
        os.umask(old)
    return path


def load(path: Path) -> dict[str, str]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def put(path: Path, key: str, value: str) -> None:
    """Set ``key`` to ``value`` in the JSON store at ``path`` (written whole, then renamed in)."""
    data = load(path)
    data[key] = value
    _save(path, data)


def _save(path: Path, data: dict[str, str]) -> None:
    old = os.umask(0)
    try:
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data, sort_keys=True))
        tmp.replace(path)
    finally:
        os.umask(old)


def text_result(text: str, *, error: bool = False, structured: Any = None) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error, structured_content=structured)


def _resource_handlers(resources: Callable[[], list[tuple[str, str]]]) -> dict[str, Any]:
    """The ``Server`` handlers listing and reading ``resources()`` (``[(uri, text)]``)."""

    async def list_resources(ctx: Any, params: Any) -> ListResourcesResult:
        return ListResourcesResult(resources=[Resource(uri=u, name=u.split("/")[-1]) for u, _ in resources()])

    async def read_resource(ctx: Any, params: Any) -> ReadResourceResult:
        for uri, text in resources():
            if uri == str(params.uri):
                return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=text)])
        raise ValueError(f"no resource {params.uri}")

    return {"on_list_resources": list_resources, "on_read_resource": read_resource}


def _prompt_handlers(prompts: Callable[[], list[tuple[str, str]]]) -> dict[str, Any]:
    """The ``Server`` handlers listing and getting ``prompts()`` (``[(name, text)]``)."""

    async def list_prompts(ctx: Any, params: Any) -> ListPromptsResult:
        return ListPromptsResult(prompts=[Prompt(name=n, description=f"Recall {n}") for n, _ in prompts()])

    async def get_prompt(ctx: Any, params: Any) -> GetPromptResult:
        for n, text in prompts():
            if n == params.name:
                return GetPromptResult(
                    messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))]
                )
        raise ValueError(f"no prompt {params.name}")

    return {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}


def serve(
    name: str,
    tools: list[tuple[Tool, ToolFn]],
    *,
    resources: Callable[[], list[tuple[str, str]]] | None = None,
    prompts: Callable[[], list[tuple[str, str]]] | None = None,
    tools_changed: bool = False,
    on_call: Callable[[Any], Awaitable[None]] | None = None,
) -> None:
    """Serve ``tools`` (and optional resources ``[(uri, text)]`` / prompts ``[(name, text)]``) on stdio."""
    table = {tool.name: (tool, fn) for tool, fn in tools}

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[t for t, _ in table.values()])

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        if params.name not in table:
            return text_result(f"Unknown tool: {params.name}", error=True)
        try:
            out = table[params.name][1](dict(params.arguments or {}))
        except ValueError as e:
            return text_result(str(e), error=True)
        if on_call is not None:
            await on_call(ctx)
        return out if isinstance(out, CallToolResult) else text_result(str(out))

    handlers: dict[str, Any] = {}
    if resources is not None:
        handlers |= _resource_handlers(resources)
    if prompts is not None:
        handlers |= _prompt_handlers(prompts)
    server = Server(name, on_list_tools=list_tools, on_call_tool=call_tool, **handlers)
    server.add = lambda tool, fn: table.__setitem__(tool.name, (tool, fn))  # type: ignore[attr-defined]
    serve.server = server  # type: ignore[attr-defined]

    async def main() -> None:
        async with stdio_server() as (read, write):
            options = server.create_initialization_options(NotificationOptions(tools_changed=tools_changed))
            await server.run(read, write, options)

    anyio.run(main)


def tool(name: str, properties: dict[str, Any], description: str, **extra: Any) -> Tool:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return Tool(name=name, description=description, input_schema=schema, **extra)


STR = {"type": "string", "maxLength": 64}
