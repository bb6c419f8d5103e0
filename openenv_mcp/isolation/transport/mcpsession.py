"""One persistent MCP client session to an out-of-process tool server.

Boundaries that talk MCP over a transport (``process`` and ``sandbox`` over
stdio, ``remote`` over streamable HTTP, ``docker``) share this module:

* :class:`SessionHost` runs the transport and the official SDK
  :class:`~mcp.client.session.ClientSession` in one long-lived task of its own,
  so the session outlives any single call and any caller task (episodes are
  driven from many tasks: ``step()``, MCP requests, the control plane).
* :class:`McpConnection` is a :class:`Connection` over a ``SessionHost``: it
  starts the server, converts every transport failure into a
  :class:`BoundaryError` that names the cause, restarts a dead server on the
  next call, and caps oversized tool output with a visible marker.

The host task is an ``asyncio`` task: the framework runs on asyncio (anyio's
asyncio backend).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Implementation,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    Tool,
    ToolListChangedNotification,
)
from mcp_types import CONNECTION_CLOSED

from openenv_mcp.definitions.surface import ERROR_MESSAGE_LIMIT, INSTRUCTIONS_LIMIT, bounded
from openenv_mcp.errors import BoundaryError, ToolServerError
from openenv_mcp.isolation.base import Connection
from openenv_mcp.types import error_result

__all__ = ["TRUNCATED_META", "McpConnection", "SessionHost", "cap_result", "server_error", "truncation_marker"]

CLIENT_INFO = Implementation(name="openenv-mcp", version=version("openenv-mcp"))  # the one version: metadata

TransportFactory = Callable[[], contextlib.AbstractAsyncContextManager[Any]]
"""Returns an async context manager yielding ``(read_stream, write_stream)``."""


TRUNCATED_META = "openenv-mcp/truncated"
"""``_meta`` key of a result already cut (its value: the bytes the tool produced)."""


def truncation_marker(limit: int, size: int) -> str:
    """The visible marker appended to a tool output cut at ``limit`` bytes."""
    return f"\n[output truncated: the tool produced {size} bytes, the limit is {limit} bytes]"


def cap_result(result: CallToolResult, limit: int) -> CallToolResult:
    """``result`` with its text cut to ``limit`` bytes in total (binary parts
    past the budget dropped), a :func:`truncation_marker` appended."""
    if result.meta and TRUNCATED_META in result.meta:
        return result
    sizes = []
    for item in result.content:
        text = getattr(item, "text", None)
        if text is not None:
            sizes.append(len(text.encode()))
        else:
            sizes.append(len(getattr(item, "data", "") or getattr(item, "blob", "") or ""))
    total = sum(sizes)
    if result.structured_content is not None:
        structured = len(json.dumps(result.structured_content))
        total_with = total + structured
    else:
        structured, total_with = 0, total
    if total_with <= limit:
        return result
    budget = limit
    content: list[Any] = []
    for item, size in zip(result.content, sizes, strict=True):
        if budget <= 0:
            break
        text = getattr(item, "text", None)
        if text is not None:
            if size > budget:
                text = text.encode()[:budget].decode(errors="ignore")
                item = item.model_copy(update={"text": text})
            content.append(item)
            budget -= min(size, budget)
        elif size <= budget:
            content.append(item)
            budget -= size
        else:
            budget = 0
    content.append(TextContent(type="text", text=truncation_marker(limit, total_with)))
    keep_structured = result.structured_content if structured and structured <= budget else None
    return result.model_copy(update={"content": content, "structured_content": keep_structured})


class SessionHost:
    """A transport and its SDK ``ClientSession``, hosted in one dedicated task."""

    def __init__(self, name: str, transport: TransportFactory) -> None:
        self.name = name
        self._transport = transport
        self.session: ClientSession | None = None
        self.tools: list[Tool] = []
        self.tools_stale = False
        """The server sent ``notifications/tools/list_changed`` since :attr:`tools` was listed."""
        self.on_tools_changed: Callable[[], None] | None = None
        self.capabilities: Any = None
        self.instructions: str | None = None
        """The server's ``instructions`` (cut at :data:`INSTRUCTIONS_LIMIT` characters)."""
        self._task: asyncio.Task[None] | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._error: BaseException | None = None
        self.ended = False

    async def start(self, timeout: float) -> None:
        """Open the transport, ``initialize``, list the tools (bounded by ``timeout``)."""
        self._task = asyncio.get_running_loop().create_task(self._host(), name=f"openenv-mcp:{self.name}")
        try:
            with anyio.fail_after(timeout):
                await self._ready.wait()
        except TimeoutError:
            await self.close()
            raise self.failure("timeout", TimeoutError(f"did not answer initialize within {timeout:g} s")) from None
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close()
            raise
        if self.session is None:
            await self.close()
            raise self.failure("start", self._error)

    async def _host(self) -> None:
        try:
            async with self._transport() as (read, write):
                async with ClientSession(
                    read, write, client_info=CLIENT_INFO, message_handler=self._on_message
                ) as session:
                    result = await session.initialize()
                    self.capabilities = result.capabilities
                    if isinstance(result.instructions, str):
                        self.instructions = bounded(result.instructions, INSTRUCTIONS_LIMIT, "instructions")
                    self.tools = await self.list_all_tools(session)
                    self.session = session
                    self._ready.set()
                    await self._stop.wait()
        except BaseException as e:  # noqa: BLE001 - recorded, reported as BoundaryError
            if not isinstance(e, asyncio.CancelledError):
                self._error = e
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self.ended = True
            self.session = None
            self._ready.set()

    async def _on_message(self, message: Any) -> None:
        """Server notifications: a changed tool list marks :attr:`tools` stale and tells the episode."""
        message = getattr(message, "root", message)
        if isinstance(message, ToolListChangedNotification):
            self.tools_stale = True
            if self.on_tools_changed is not None:
                self.on_tools_changed()

    async def refresh_tools(self) -> list[Tool]:
        """List the tools again if the server said they changed; the current list."""
        session = self.session
        if self.tools_stale and session is not None:
            self.tools_stale = False
            self.tools = await self.list_all_tools(session)
        return self.tools

    @staticmethod
    async def list_all_tools(session: ClientSession) -> list[Tool]:
        """Every page of the server's ``tools/list``."""
        tools: list[Tool] = []
        cursor = None
        while True:
            from mcp.types import PaginatedRequestParams

            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    def failure(self, phase: str, error: BaseException | None = None) -> BoundaryError:
        """A :class:`BoundaryError` saying why the server is gone.

        ``phase`` is ``start``, ``timeout`` (no answer to ``initialize``) or
        ``call`` (it went away during a call). Subclasses know more (exit
        status, stderr) through :meth:`why` and :meth:`stderr`.
        """
        if isinstance(error, BoundaryError):
            return error
        why = self.why()
        if phase == "timeout":
            text = f"tool server {self.name!r} {error or 'did not answer initialize'}"
        elif phase == "start":
            if why:
                text = f"tool server {self.name!r} {why} before answering initialize"
            else:
                text = f"tool server {self.name!r} failed to start: {describe(error) if error else 'no session'}"
        else:
            text = (
                f"tool server {self.name!r} {why or 'closed the connection'} during the call; "
                "it is restarted on the next call"
            )
        stderr = self.stderr()
        if stderr:
            text += f"; stderr: {stderr}"
        return BoundaryError(text)

    def why(self) -> str | None:
        """What ended the server (e.g. ``exited with code 1``), if known."""
        return None

    def stderr(self) -> str:
        """The end of the server's stderr, if captured."""
        return ""

    @property
    def alive(self) -> bool:
        return self.session is not None and not self.ended

    async def close(self) -> None:
        """End the session and the transport (idempotent, bounded)."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(5):
                await asyncio.wait({task})
            if not task.done():
                task.cancel()
                with anyio.move_on_after(2):
                    await asyncio.wait({task})


ERROR_DATA_LIMIT = 1024
"""Bytes of a server error's ``data`` (as JSON) passed through; larger ``data`` is dropped."""


def server_error(error: MCPError) -> ToolServerError:
    """A server's JSON-RPC error as a :class:`ToolServerError`: its code, its message (bounded),
    its ``data`` when small."""
    data = error.error.data if hasattr(error, "error") else None
    try:
        if data is not None and len(json.dumps(data)) > ERROR_DATA_LIMIT:
            data = None
    except (TypeError, ValueError):
        data = None
    return ToolServerError(error.code, bounded(error.message, ERROR_MESSAGE_LIMIT, "error message"), data)


def describe(error: BaseException) -> str:
    """One line for an exception (groups unwrapped to their first cause)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError):
        return error.message
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class McpConnection(Connection):
    """A :class:`Connection` over one :class:`SessionHost` (restarted on demand).

    Subclasses implement :meth:`_new_host`. A server that died (crashed, was
    killed at its time limit, closed its pipe) is started again at once in
    the background; the call that saw it die gets a :class:`BoundaryError`
    saying why, and the next call waits for the restart if it is not done.
    """

    host: SessionHost | None = None
    closed = False
    _lock: anyio.Lock | None = None
    _restart: asyncio.Task[None] | None = None

    @abc.abstractmethod
    def _new_host(self) -> SessionHost:
        """The backend's way to launch the server and open its MCP session."""

    async def start(self) -> None:
        await self._ensure()

    async def _ensure(self, from_restart: bool = False) -> SessionHost:
        if self.closed:
            raise BoundaryError(f"tool server {self.spec.name!r} is closed")
        host = self.host
        if host is not None and host.alive:
            return host
        restart = self._restart
        if not from_restart and restart is not None and not restart.done():
            await asyncio.wait({restart})  # a cancelled caller does not cancel the restart
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            host = self.host
            if host is not None and host.alive:
                return host
            if host is not None:
                await self._discard(host)
            if self.closed:
                raise BoundaryError(f"tool server {self.spec.name!r} is closed")
            host = self._new_host()
            host.on_tools_changed = self._tools_changed
            self.host = host
            try:
                await host.start(self.spec.limits.start_timeout)
            except BaseException:
                if self.host is host:
                    self.host = None
                raise
            return host

    def _restart_soon(self) -> None:
        """Start the server again in the background (its errors surface on the next call)."""
        if self.closed or (self._restart is not None and not self._restart.done()):
            return

        async def restart() -> None:
            try:
                await self._ensure(from_restart=True)
            except Exception:  # reported by the next call, which tries again
                pass

        self._restart = asyncio.get_running_loop().create_task(restart(), name=f"restart:{self.spec.name}")

    async def _discard(self, host: SessionHost) -> None:
        if self.host is host:
            self.host = None
        await host.close()

    def _tools_changed(self) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    @property
    def instructions(self) -> str | None:
        return self.host.instructions if self.host is not None else None

    @property
    def capabilities(self) -> Any:
        return self.host.capabilities if self.host is not None else None

    async def list_tools(self) -> list[Tool]:
        host = await self._ensure()
        return list(await self._request(host, lambda s: host.refresh_tools()))

    async def list_tools_now(self) -> list[Tool]:
        host = await self._ensure()
        return list(await self._request(host, SessionHost.list_all_tools))

    async def _request(self, host: SessionHost, call: Callable[[ClientSession], Any]) -> Any:
        session = host.session
        if session is None:
            raise await self._died(host)
        try:
            return await call(session)
        except MCPError as e:
            if not host.alive or e.code == CONNECTION_CLOSED:
                raise await self._died(host) from None
            raise

    async def _died(self, host: SessionHost) -> BoundaryError:
        with anyio.CancelScope(shield=True):
            await self._discard(host)
        self._restart_soon()
        return host.failure("call", host._error)

    async def call_tool(self, name: str, arguments: dict[str, Any], label: str) -> CallToolResult:
        host = await self._ensure()
        try:
            # sent as is, not through ClientSession.call_tool: that validates structuredContent
            # against the outputSchema and raises, so a server's own answer would reach both faces
            # as the wrapper's error; a faithful wrapper passes it on (call.content judges it)
            request = CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments))
            result = await self._request(host, lambda s: s.send_request(request, CallToolResult))
        except MCPError as e:
            return error_result(f"Error calling tool {label!r}: {e.message}")
        except BoundaryError:
            raise
        except Exception as e:  # an invalid result from the server is the server's fault, not a crash
            return error_result(f"Error calling tool {label!r}: {describe(e)}")
        return cap_result(result, self.spec.limits.output_bytes)

    async def interrupted(self) -> None:
        """The call hit its time limit: kill the server and start it again in the background.

        A server still starting (the call timed out waiting for a restart) is left to finish."""
        host = self.host
        if host is not None and host.session is not None:
            with anyio.CancelScope(shield=True):
                await self._discard(host)
            self._restart_soon()

    def _has(self, capability: str) -> bool:
        host = self.host
        return bool(host and host.capabilities and getattr(host.capabilities, capability, None))

    async def list_resources(self) -> list[Resource]:
        host = await self._ensure()
        if not self._has("resources"):
            return []
        return list((await self._request(host, lambda s: s.list_resources())).resources)

    async def read_resource(self, uri: str) -> ReadResourceResult:
        host = await self._ensure()
        if not self._has("resources"):
            raise KeyError(uri)
        try:
            return await self._request(host, lambda s: s.read_resource(uri))
        except MCPError as e:
            raise server_error(e) from None

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        host = await self._ensure()
        if not self._has("resources"):
            return []
        try:
            return list((await self._request(host, lambda s: s.list_resource_templates())).resource_templates)
        except MCPError:  # a server with resources but no templates may answer "Method not found"
            return []

    async def complete(self, ref: Any, argument: dict[str, str], context: dict[str, str] | None) -> CompleteResult:
        host = await self._ensure()
        if not self._has("completions"):
            raise KeyError(getattr(ref, "name", None) or getattr(ref, "uri", ""))
        try:
            return await self._request(host, lambda s: s.complete(ref, argument, context))
        except MCPError as e:
            raise server_error(e) from None

    async def list_prompts(self) -> list[Prompt]:
        host = await self._ensure()
        if not self._has("prompts"):
            return []
        return list((await self._request(host, lambda s: s.list_prompts())).prompts)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        host = await self._ensure()
        if not self._has("prompts"):
            raise KeyError(name)
        try:
            return await self._request(host, lambda s: s.get_prompt(name, arguments))
        except MCPError as e:
            raise server_error(e) from None

    async def healthy(self) -> bool:
        host = self.host
        if host is None or not host.alive or host.session is None:
            return False
        try:
            with anyio.fail_after(5):
                await host.session.send_ping()
            return True
        except Exception:
            return False

    async def close(self) -> None:
        self.closed = True
        restart, self._restart = self._restart, None
        with anyio.CancelScope(shield=True):
            if restart is not None and not restart.done():
                restart.cancel()
                await asyncio.wait({restart})
            host, self.host = self.host, None
            if host is not None:
                await host.close()
