"""Serving an ASGI app in this event loop on a free loopback port: the one helper behind
:func:`openenv_mcp.testing.serving` (tests, environment authors' tests) and the conformance
checker's in-process HTTP subjects. uvicorn and anyio load when it is used, so every layer may
import this module."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["serving"]


@asynccontextmanager
async def serving(app: Any, startup_timeout: float = 20.0, **config: Any) -> AsyncIterator[str]:
    """Serve an ASGI app with uvicorn in this event loop on a free loopback port; yields
    ``http://127.0.0.1:PORT``. The app's lifespan runs; the server stops when the block ends.

    ``config``: more :class:`uvicorn.Config` options (default ``log_level="warning"``, no WebSocket
    compression). The port is bound before uvicorn starts, so no other process can take it between.
    """
    import anyio
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config.setdefault("log_level", "warning")
    config.setdefault("ws_per_message_deflate", False)
    server = uvicorn.Server(uvicorn.Config(app, **config))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(sockets=[sock]))
            with anyio.fail_after(startup_timeout):
                while not server.started:
                    await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()
