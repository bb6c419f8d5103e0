"""One front door (both faces, one URL) in front of a :class:`~openenv_mcp.ray.pool.RayPool`.

``openenv-mcp serve ENV --ray ADDRESS`` serves this app: the control plane (``/ws``), the MCP face
(``/mcp`` and every episode's ``/episodes/{id}/{agent_key}/mcp``), ``/health``. It keeps every
protection of ``openenv-mcp serve`` by running the same :class:`~openenv_mcp.serve.edge.Edge`
(Host/Origin validation, bearer token, admin token, body cap) and routes each request to the
replica that holds its episode:

* a ``create`` (or a new MCP session) goes to the least-loaded live replica; the episode id (or
  MCP session id) is then pinned to that replica;
* every other operation goes to the replica of its episode; a replica that died answers
  ``episode_lost`` at once;
* the caller's credentials are re-checked by the replica: a request that passed the front door
  with its bearer token is forwarded with the pool's cluster token (its admin token for an admin
  caller), one that passed only by its episode capability (an agent key in the MCP address) is
  forwarded without any token, so the replica checks the key against that episode. An agent key
  for an episode on replica A therefore opens nothing on replica B.

Each client WebSocket gets its own upstream connection per replica, so a trainer still sees only
the episodes of its own connection (or key), as on a single server, and its episodes close when
it disconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from openenv_mcp.ray.controlplane import serve_websocket
from openenv_mcp.ray.door import FrontDoor
from openenv_mcp.ray.pool import RayPool
from openenv_mcp.serve.edge import DEFAULT_MAX_REQUEST_BYTES, LOOPBACK_HOSTS, Edge, public_matcher
from openenv_mcp.serve.metrics import Metrics
from openenv_mcp.serve.peer import PeerJudge

__all__ = ["FrontDoor", "create_front_door", "serve_front_door"]


def create_front_door(
    pool: RayPool,
    *,
    token: str | None = None,
    admin_token: str | None = None,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    health_interval: float = 2.0,
) -> Starlette:
    """The front door's ASGI app (the pool must be started already; it is closed with the app)."""
    door = FrontDoor(
        pool,
        token=token,
        admin_token=admin_token,
        health_interval=health_interval,
        max_request_bytes=max_request_bytes,
    )
    metrics = Metrics()

    async def health(request: Request) -> Response:
        await pool.check()
        replicas = [{"url": r.url, "node_id": r.node_id, "episodes": r.episodes} for r in pool.live()]
        status = "healthy" if replicas else "unhealthy"
        return JSONResponse({"status": status, "env": pool.target, "replicas": replicas}, 200 if replicas else 503)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watcher = asyncio.get_running_loop().create_task(door.watch())
        try:
            yield
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await door.http.aclose()
            await pool.aclose()

    hosts = [*LOOPBACK_HOSTS, *allowed_hosts]
    if host not in ("0.0.0.0", "::", ""):
        hosts.append(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    origins = [f"{scheme}://{h}" for scheme in ("http", "https") for h in LOOPBACK_HOSTS] + list(allowed_origins)
    app = Starlette(
        routes=[Route("/health", health, methods=["GET"])],
        lifespan=lifespan,
        middleware=[
            Middleware(
                Edge,
                mcp=door.mcp,
                ws=partial(serve_websocket, door),
                metrics=metrics,
                allowed_hosts=hosts,
                allowed_origins=origins,
                token=token,
                admin_token=admin_token,
                capability=door.capability,
                peers=PeerJudge() if token is None else None,  # without a token: the trainer on this machine
                max_request_bytes=max_request_bytes,
                public=public_matcher(("/health",)),
                episode_mcp=True,
            )
        ],
    )
    app.state.front_door = door
    app.state.pool = pool
    return app


def serve_front_door(
    target: str,
    *,
    address: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    admin_token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    log_level: str = "warning",
    **pool_options: Any,
) -> None:
    """``openenv-mcp serve ENV --ray ADDRESS``: start a pool on the cluster and serve its front door until stopped."""
    import uvicorn

    async def main() -> None:
        pool = await RayPool(target, address=address, **pool_options).start()
        app = create_front_door(
            pool,
            token=token,
            admin_token=admin_token,
            host=host,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_request_bytes=max_request_bytes,
        )
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            ws_max_size=max_request_bytes + 1024,
            ws_per_message_deflate=False,
            access_log=False,
            server_header=False,
            backlog=8192,
        )
        await uvicorn.Server(config).serve()

    asyncio.run(main())
