"""Remote boundary: a tool server already running elsewhere, over streamable HTTP.

Each episode opens its own MCP session to ``url`` (the official SDK's
``streamable_http_client``) and closes it (``DELETE``) when the episode ends;
what the server keeps per session is the server's business. Nothing is
started, limited or killed here: the remote side owns its isolation. A server
that cannot be reached, or drops the session, is a :class:`BoundaryError`; the
next call opens a new session.

``env`` entries named ``header:NAME`` are sent as HTTP headers of the
session, e.g. ``env = { "header:Authorization" = "Bearer ..." }``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import BoundaryError, ConfigError
from openenv_mcp.isolation.base import ServerContext
from openenv_mcp.isolation.transport.mcpsession import McpConnection, SessionHost
from openenv_mcp.sdkcompat import mcp_http_client

__all__ = ["HEADER_PREFIX", "RemoteConnection"]

HEADER_PREFIX = "header:"
"""``env`` keys with this prefix become HTTP headers of the remote session."""


class RemoteConnection(McpConnection):
    """An MCP session to a streamable-HTTP server at ``spec.url``."""

    boundary = "remote"

    def __init__(self, spec: ToolServerSpec, ctx: ServerContext, base_dir: Path | None = None) -> None:
        super().__init__(spec, ctx)
        if not spec.url:
            raise ConfigError(f"tool server {spec.name!r}: isolation 'remote' needs a url")
        self.url = spec.url
        self.headers = {k[len(HEADER_PREFIX) :]: v for k, v in ctx.env.items() if k.startswith(HEADER_PREFIX)}

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        timeout = httpx2.Timeout(self.spec.limits.start_timeout, read=None)
        async with mcp_http_client(headers=self.headers or None, timeout=timeout) as client:
            async with streamable_http_client(self.url, http_client=client) as (read, write):
                yield read, write

    async def run_command(self, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        raise BoundaryError(
            f"tool server {self.spec.name!r} is remote: a reward command cannot run inside it; "
            "give the reward command's server as reward.server, or use a Python reward"
        )

    def _new_host(self) -> SessionHost:
        return SessionHost(self.spec.name, self._transport)
