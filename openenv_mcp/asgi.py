"""Serving an ASGI app in this event loop on a free loopback port: the one helper behind
:func:`openenv_mcp.testing.serving` (tests, environment authors' tests) and the conformance
checker's in-process HTTP subjects. uvicorn and anyio load when it is used, so every layer may
import this module."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["serving"]


@asynccontextmanager
async def serving(
    app: Any, startup_timeout: float = 20.0, shutdown_timeout: float = 10.0, **config: Any
) -> AsyncIterator[str]:
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
    task = asyncio.ensure_future(server.serve(sockets=[sock]))  # not a task group: the block's errors stay its own
    try:
        with anyio.fail_after(startup_timeout):
            while not server.started:
                if task.done():
                    task.result()  # it failed to start: say why
                    raise RuntimeError("uvicorn stopped before it started serving")
                await anyio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        # a clean shutdown, also when the block raised or was cancelled: a server cancelled midway would
        # leave its listening socket, closed below, watched by the event loop under a number the next
        # socket is given (which then never accepts)
        server.should_exit = True
        with anyio.CancelScope(shield=True):
            await asyncio.wait({task}, timeout=shutdown_timeout)
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: uvicorn logged any serving error; the block's own outcome stands
        _forget(sock)
        sock.close()


def _forget(sock: socket.socket) -> None:
    """Take ``sock`` off the running asyncio loop's watch list, if it is still there (a server that
    could not shut down cleanly in time)."""
    with contextlib.suppress(Exception):
        asyncio.get_running_loop().remove_reader(sock.fileno())
