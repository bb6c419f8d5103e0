"""In-process boundary: a trusted FastMCP server object in the environment's process.

The fastest boundary, and the one ``step()`` short-cuts: a call runs the
FastMCP tool directly (no JSON-RPC framing, no memory transport; RFC 003's
"double marshaling" avoided) and is converted to the very ``CallToolResult``
FastMCP's own ``tools/call`` handler would send. The parity tests hold that.

Isolation here is a convention, not a wall: the server shares the process.
Use ``process``, ``sandbox`` or ``docker`` for code you do not trust.

Time: a tool written as a plain (sync) function never runs on the caller's
event loop. Its whole FastMCP call (validation, body, result conversion) runs
in a worker thread and the caller only awaits the outcome, abandoning it when
cancelled: when the episode's ``call_timeout`` passes, the wait ends at once,
the agent gets the same timeout error result every boundary gives, and the
server keeps answering meanwhile. A thread cannot be
killed, so the abandoned body runs on to its end: a sync tool must bound its
own work (the filesystem server caps every read, walk and edit, and matches
regular expressions with RE2, in linear time). An ``async`` tool runs on the
caller's loop and is cancelled at its next ``await``; one that blocks without
awaiting blocks the loop, so write blocking work as a sync function.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from typing import Any

import anyio
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, NotFoundError
from fastmcp.utilities.async_utils import is_coroutine_function
from mcp.types import (
    CallToolResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

from openenv_mcp.definitions.spec import ToolServerSpec, load_object
from openenv_mcp.definitions.surface import INSTRUCTIONS_LIMIT, bounded
from openenv_mcp.errors import BoundaryError, ConfigError
from openenv_mcp.isolation.base import Connection, ServerContext
from openenv_mcp.isolation.transport.commands import run_plain
from openenv_mcp.sdkcompat import run_fastmcp_tool
from openenv_mcp.types import error_result

__all__ = ["InProcessConnection", "error_result"]  # error_result: from ..types, importable here as before


def _normalize(result: Any) -> CallToolResult:
    # Same conversion as fastmcp's tools/call wire handler (_normalize_call_tool_result).
    if isinstance(result, CallToolResult):
        return result
    if isinstance(result, tuple):
        content, structured = result
        return CallToolResult(content=content, structured_content=structured)
    return CallToolResult(content=result)


_Listed = tuple[dict[str, Any], dict[str, Any], list[Tool], list[Prompt]]
"""Tools by name, their threaded copies (sync tools only), the MCP tools and prompts."""

_LISTED: weakref.WeakKeyDictionary[FastMCP, _Listed] = weakref.WeakKeyDictionary()
"""Tools and prompts of *shared* server objects (not factory-made), listed once per process:
starting an episode then costs no FastMCP listing (thousands of concurrent episodes). A server
whose tools change at run time should be a per-episode factory."""


_LISTING: weakref.WeakKeyDictionary[FastMCP, anyio.Lock] = weakref.WeakKeyDictionary()


def _public_meta(component: Any) -> dict[str, Any] | None:
    """A FastMCP component's ``_meta`` without FastMCP's own bookkeeping (``fastmcp``: tags, version).

    An in-process server has no wire of its own: that key is the library's, not the server's, and
    the faces show what a server would say over MCP (a harness puts ``_meta`` in front of its model)."""
    meta = {k: v for k, v in component.get_meta().items() if k != "fastmcp"}
    return meta or None


def _wire(component: Any) -> Any:
    """The MCP form of a FastMCP tool, prompt, resource or template, :func:`_public_meta` as its ``_meta``."""
    for method in ("to_mcp_tool", "to_mcp_prompt", "to_mcp_resource", "to_mcp_template"):
        if hasattr(component, method):
            return getattr(component, method)(_meta=_public_meta(component))
    raise TypeError(f"not a FastMCP component: {component!r}")


async def _list(server: FastMCP) -> _Listed:
    tools = {t.name: t for t in await server.list_tools()}
    threaded = {name: copy for name, t in tools.items() if (copy := _threaded(t)) is not None}
    return (
        tools,
        threaded,
        [_wire(t) for t in tools.values()],
        [_wire(p) for p in await server.list_prompts()],
    )


def _sync_tool(tool: Any) -> bool:
    """Whether ``tool`` is a FastMCP function tool whose body is a plain function run in a thread."""
    fn = getattr(tool, "fn", None)
    return (
        fn is not None
        and getattr(tool, "run_in_thread", False)
        and not is_coroutine_function(fn)
        and not inspect.isasyncgenfunction(fn)
    )


def _threaded(tool: Any) -> Any:
    """For a sync tool, a copy that calls its body in the calling thread (we call it in a worker thread)."""
    return tool.model_copy(update={"run_in_thread": False}) if _sync_tool(tool) else None


def _drive(inline: Any, tool: Any, arguments: dict[str, Any]) -> Any:
    """Run a sync tool's FastMCP call to its end in this (worker) thread."""
    coro = run_fastmcp_tool(inline, arguments)
    try:
        coro.send(None)  # validation and the body run inline: nothing to wait for
    except StopIteration as done:
        return done.value
    coro.close()  # it awaited something (an async dependency): run the call on a loop of this thread
    return asyncio.run(run_fastmcp_tool(tool, arguments))


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
        self._threaded: dict[str, Any] = {}
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
        self._tools, self._threaded, self._mcp_tools, self._prompts = listed

    def _require(self) -> FastMCP:
        if self.server is None:
            raise BoundaryError(f"tool server {self.spec.name!r} is not started")
        return self.server

    async def list_tools(self) -> list[Tool]:
        self._require()
        return list(self._mcp_tools)

    async def list_tools_now(self) -> list[Tool]:
        return [_wire(t) for t in await self._require().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], label: str) -> CallToolResult:
        self._require()
        tool = self._tools.get(name)
        if tool is None:
            return error_result(f"Unknown tool: {label!r}")
        try:
            inline = self._threaded.get(name)
            if inline is None:
                result = await run_fastmcp_tool(tool, arguments)
            else:  # cancelling the wait (call_timeout) returns at once; the thread runs on to its end
                result = await anyio.to_thread.run_sync(_drive, inline, tool, arguments, abandon_on_cancel=True)
        except FastMCPError as e:
            return error_result(str(e) or f"Error calling tool {label!r}")
        except Exception as e:  # a tool that raises is the agent's problem, not a crash
            return error_result(f"Error calling tool {label!r}: {e}")
        return _normalize(result.to_mcp_result())

    @property
    def instructions(self) -> str | None:
        text = self.server.instructions if self.server is not None else None
        return bounded(text, INSTRUCTIONS_LIMIT, "instructions") if isinstance(text, str) and text else None

    async def list_resources(self) -> list[Resource]:
        return [_wire(r) for r in await self._require().list_resources()]

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return [_wire(t) for t in await self._require().list_resource_templates()]

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

    async def snapshot(self) -> Any:
        """The server's own ``openenv_snapshot()`` (sync or async), if a factory-made server has one:
        the fork hook of in-process servers (docs/fork.md); ``None`` without one."""
        hook = getattr(self._require(), "openenv_snapshot", None) if getattr(self, "_owned", False) else None
        if hook is None:
            return None
        state = hook()
        return await state if inspect.isawaitable(state) else state

    async def restore(self, state: Any) -> None:
        """The server's own ``openenv_restore(state)`` with what the original's snapshot returned."""
        hook = getattr(self._require(), "openenv_restore", None) if getattr(self, "_owned", False) else None
        if hook is None:
            return
        done = hook(state)
        if inspect.isawaitable(done):
            await done

    async def close(self) -> None:
        server, self.server = self.server, None
        self._tools, self._threaded = {}, {}
        # a server a factory made for this episode may release what it holds (connections, databases)
        closer = getattr(server, "openenv_close", None) if getattr(self, "_owned", False) else None
        if closer is not None:
            result = closer()
            if inspect.isawaitable(result):
                await result
