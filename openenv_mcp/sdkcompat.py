"""The one place openenv-mcp reaches into private parts of the MCP SDKs (``mcp`` 2.3, ``fastmcp`` 4.2).

Everything else uses public APIs. Each use below has no public equivalent in those versions (checked
against their installed sources); when an SDK release adds one, switch to it here and nowhere else.
The SDKs are imported when a function is called, so importing this module costs nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

__all__ = ["lowlevel_server", "mcp_http_client", "run_fastmcp_tool", "session_manager_class"]


def mcp_http_client(headers: dict[str, str] | None = None, timeout: Any = None) -> Any:
    """An HTTP client with the timeouts the SDK's transports use by default (30 s, 300 s reads for
    held-open streams), for ``streamable_http_client(url, http_client=...)`` with our own headers.

    mcp 2.3: ``mcp.shared._httpx_utils.create_mcp_http_client`` (a private module; the transports
    build their default client with it and export no public factory).
    """
    from mcp.shared._httpx_utils import create_mcp_http_client

    return create_mcp_http_client(headers=headers, timeout=timeout)


def run_fastmcp_tool(tool: Any, arguments: dict[str, Any]) -> Coroutine[Any, Any, Any]:
    """Run a FastMCP tool the way a FastMCP server does for ``tools/call`` (its ``ToolResult``).

    fastmcp 4.2: ``Tool._run``, "the server entry point": the public ``Tool.run`` skips the marking of
    non-object structured results (wrapped under ``result`` on the wire) and provider dispatch, so
    the in-process boundary's results would differ from the same server's over the wire.
    """
    return tool._run(arguments)


def lowlevel_server(server: Any) -> Any:
    """The ``mcp.server.Server`` behind a FastMCP server (``server`` itself when it is one already).

    fastmcp 4.2: ``FastMCP._mcp_server`` (no public accessor).
    """
    return getattr(server, "_mcp_server", server)


@functools.cache
def session_manager_class() -> type:
    """The SDK's ``StreamableHTTPSessionManager`` with an ``on_session_end(session_id)`` hook (an
    async callable attribute, ``None`` by default) awaited after the SDK discards a session.

    mcp 2.3: overrides ``StreamableHTTPSessionManager._discard_session``, the one method every way a
    session ends goes through (DELETE, idle timeout, transport failure); there is no public hook.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    class EndAwareSessionManager(StreamableHTTPSessionManager):
        on_session_end: Callable[[str], Awaitable[None]] | None = None

        async def _discard_session(self, session_id: str, transport: Any) -> None:
            await super()._discard_session(session_id, transport)
            if self.on_session_end is not None:
                await self.on_session_end(session_id)

    return EndAwareSessionManager
