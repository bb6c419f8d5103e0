"""In-process boundary: a trusted FastMCP server object in the environment's process.

The fastest boundary, and the one ``step()`` short-cuts: a call runs the
FastMCP tool directly (no JSON-RPC framing, no memory transport; RFC 003's
"double marshaling" avoided) and is converted to the very ``CallToolResult``
FastMCP's own ``tools/call`` handler would send. The parity tests hold that.

Isolation here is a convention, not a wall: the server shares the process.
Use ``process``, ``sandbox`` or ``docker`` for code you do not trust.
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any

import anyio
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, NotFoundError
from mcp.types import CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, TextContent, Tool

from ..errors import BoundaryError, ConfigError
from ..core.spec import ToolServerSpec, load_object
from .base import Connection, ServerContext
from .process import run_plain

__all__ = ["InProcessConnection", "error_result"]


def error_result(message: str) -> CallToolResult:
    """An MCP error result carrying ``message`` (what the agent sees)."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _normalize(result: Any) -> CallToolResult:
    # Same conversion as fastmcp's tools/call wire handler (_normalize_call_tool_result).
    if isinstance(result, CallToolResult):
        return result
    if isinstance(result, tuple):
        content, structured = result
        return CallToolResult(content=content, structured_content=structured)
    return CallToolResult(content=result)


_LISTED: weakref.WeakKeyDictionary[FastMCP, tuple[dict[str, Any], list[Tool], list[Prompt]]] = (
    weakref.WeakKeyDictionary())
"""Tools and prompts of *shared* server objects (not factory-made), listed once per process:
starting an episode then costs no FastMCP listing (thousands of concurrent episodes). A server
whose tools change at run time should be a per-episode factory."""


_LISTING: weakref.WeakKeyDictionary[FastMCP, anyio.Lock] = weakref.WeakKeyDictionary()


async def _list(server: FastMCP) -> tuple[dict[str, Any], list[Tool], list[Prompt]]:
    tools = {t.name: t for t in await server.list_tools()}
    return tools, [t.to_mcp_tool() for t in tools.values()], [p.to_mcp_prompt() for p in await server.list_prompts()]


class InProcessConnection(Connection):
    """A FastMCP server object (or a per-episode factory) run in-process."""

    async def run_command(self, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        """A command reward's command, as a plain child process in the workspace (the server is trusted)."""
        return await run_plain(argv, {**self.ctx.env, **env}, str(self.ctx.workspace), timeout)

    def __init__(self, spec: ToolServerSpec, ctx: ServerContext, base_dir=None) -> None:
        super().__init__(spec, ctx)
        self._base_dir = base_dir
        self.server: FastMCP | None = None
        self._tools: dict[str, Any] = {}
        self._mcp_tools: list[Tool] = []
        self._prompts: list[Prompt] = []

    async def start(self) -> None:
        obj = load_object(self.spec.object, self._base_dir)
        shared = isinstance(obj, FastMCP)
        if not shared and callable(obj):
            obj = obj(self.ctx)
            if inspect.isawaitable(obj):
                obj = await obj
        if not isinstance(obj, FastMCP):
            raise ConfigError(
                f"tool server {self.spec.name!r}: object {self.spec.object!r} is {type(obj).__name__}, "
                "expected a FastMCP server or a factory returning one"
            )
        self.server = obj
        self._owned = not shared
        if not shared:
            listed = await _list(obj)
        elif (listed := _LISTED.get(obj)) is None:
            # many episodes starting at once must not all list the same server
            async with _LISTING.setdefault(obj, anyio.Lock()):
                if (listed := _LISTED.get(obj)) is None:
                    listed = _LISTED[obj] = await _list(obj)
        self._tools, self._mcp_tools, self._prompts = listed

    def _require(self) -> FastMCP:
        if self.server is None:
            raise BoundaryError(f"tool server {self.spec.name!r} is not started")
        return self.server

    async def list_tools(self) -> list[Tool]:
        self._require()
        return list(self._mcp_tools)

    async def call_tool(self, name: str, arguments: dict[str, Any], label: str) -> CallToolResult:
        self._require()
        tool = self._tools.get(name)
        if tool is None:
            return error_result(f"Unknown tool: {label!r}")
        try:
            result = await tool._run(arguments)
        except FastMCPError as e:
            return error_result(str(e) or f"Error calling tool {label!r}")
        except Exception as e:  # a tool that raises is the agent's problem, not a crash
            return error_result(f"Error calling tool {label!r}: {e}")
        return _normalize(result.to_mcp_result())

    async def list_resources(self) -> list[Resource]:
        return [r.to_mcp_resource() for r in await self._require().list_resources()]

    async def read_resource(self, uri: str) -> ReadResourceResult:
        try:
            result = await self._require().read_resource(uri)
        except NotFoundError:
            raise KeyError(uri) from None
        return result.to_mcp_result(uri)

    async def list_prompts(self) -> list[Prompt]:
        self._require()
        return list(self._prompts)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        try:
            result = await self._require().render_prompt(name, arguments)
        except NotFoundError:
            raise KeyError(name) from None
        return result.to_mcp_prompt_result()

    async def close(self) -> None:
        server, self.server = self.server, None
        self._tools = {}
        # a server a factory made for this episode may release what it holds (connections, databases)
        closer = getattr(server, "openenv_close", None) if getattr(self, "_owned", False) else None
        if closer is not None:
            result = closer()
            if inspect.isawaitable(result):
                await result
