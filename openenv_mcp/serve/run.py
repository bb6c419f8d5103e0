"""Running a served environment: with uvicorn until stopped (``openenv-mcp serve``), or as one
episode over stdin/stdout (``openenv-mcp stdio``). In this event loop, for a test or a conformance
check: :func:`openenv_mcp.asgi.serving`."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from openenv_mcp.core.environment import Environment
from openenv_mcp.errors import ConfigError
from openenv_mcp.serve.app import create_app
from openenv_mcp.serve.edge import DEFAULT_MAX_REQUEST_BYTES
from openenv_mcp.serve.manager import default_max_episodes

__all__ = ["bind", "serve", "serve_stdio", "tune_gc"]


def tune_gc(threshold: int = 100_000) -> None:
    """Garbage-collection settings for a busy server.

    Every request allocates many short-lived objects; with the default
    threshold (700) the collector runs constantly and its full passes walk
    every live episode. Freezing what startup allocated and collecting the
    young generation every ``threshold`` allocations cut the server's CPU per
    episode by ~45% in the concurrency sweep. Cycles are still collected.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(threshold, 50, 100)


def serve(
    target: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    mode: str = "sim",
    log_level: str = "warning",
    extra_routes: Callable[[Environment, str, str | None], Sequence[BaseRoute]] | None = None,
    workspace: str | Path | None = None,
    read_only: bool = False,
    on_ready: Callable[[str, int], None] | None = None,
    **options: Any,
) -> None:
    """Load ``target`` (a name, env file or folder) in ``mode`` and serve it with uvicorn until stopped.

    ``extra_routes(environment, mode, token)`` may add routes (the playground);
    ``on_ready(host, port)`` is called once the port is bound (the CLI's banner: never for a port
    that is taken, which raises :class:`ConfigError`); other keyword arguments go to
    :func:`create_app`. Without ``max_episodes`` the cap is
    :func:`~openenv_mcp.serve.manager.default_max_episodes` (``max_episodes=None``: no cap).
    """
    import uvicorn

    from openenv_mcp.client.registry import load_environment

    options.setdefault("max_episodes", default_max_episodes())  # never unbounded by default
    environment = load_environment(target, mode=mode, workspace=workspace, read_only=read_only)
    routes = list(extra_routes(environment, mode, options.get("token")) if extra_routes else ())
    app = create_app(environment, mode=mode, host=host, extra_routes=routes, **options)
    tune_gc()
    max_bytes = options.get("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        ws_max_size=max_bytes + 1024,
        ws_per_message_deflate=False,
        backlog=8192,
        timeout_keep_alive=30,
        access_log=False,
        server_header=False,
    )
    sock = bind(host, port)
    with sock:
        if on_ready is not None:
            on_ready(host, sock.getsockname()[1])
        uvicorn.Server(config).run(sockets=[sock])


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (uvicorn listens on it); :class:`ConfigError` saying what
    to do when the port is taken or the address is not this machine's."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as e:
        raise ConfigError(
            f"cannot serve on {host}:{port}: {e.strerror}; give --host an address of this machine"
        ) from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a TIME_WAIT port is free; a listening one is not
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(
            f"cannot serve on {host}:{port}: {e.strerror or e}; choose another --port (--port 0: any free one) "
            "or stop what uses it"
        ) from None
    return sock


async def serve_stdio(
    target: Any,
    *,
    mode: str = "sim",
    seed: int | None = None,
    task_id: str | None = None,
    workspace: str | Path | None = None,
    read_only: bool = False,
    streams: tuple[Any, Any] | None = None,
) -> None:
    """Serve one episode of ``target`` as an MCP server over stdin/stdout (IDE and desktop clients);
    in production on the user's folder ``workspace`` (see ``docs/deploy.md``). ``streams``: the
    client's lines and a writer for the SDK's ``stdio_server(stdin, stdout)`` instead of fd 0 and 1
    (``openenv_mcp.cli.stdio.Wire``, which took them before the environment started)."""
    from mcp.server.stdio import stdio_server

    from openenv_mcp.client.registry import load_environment
    from openenv_mcp.serve.mcp_server import episode_server

    environment = load_environment(target, mode=mode, workspace=workspace, read_only=read_only)
    episode = await environment.new_episode(seed=seed, task_id=task_id)
    try:
        server = episode_server(episode)
        async with stdio_server(*(streams or ())) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await episode.close()
        aclose = getattr(environment, "aclose", None)
        if aclose is not None:
            await aclose()
