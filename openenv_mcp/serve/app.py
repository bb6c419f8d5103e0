"""``create_app``: one Starlette app with both faces of an environment.

Routes (simulation mode; production mode keeps only the first three):

* ``/mcp`` — the MCP face, streamable HTTP (both protocol generations), see
  :mod:`openenv_mcp.serve.mcp_http`;
* ``GET /health`` — liveness, live episodes, tool-server health (never behind
  the token), see :mod:`openenv_mcp.serve.health`;
* ``GET /metrics`` — Prometheus text, see :mod:`openenv_mcp.serve.metrics`;
* ``/ws``, ``POST /episodes``, ``GET /episodes``, ``POST /episodes/{id}/reset``,
  ``POST /episodes/{id}/step``, ``GET /episodes/{id}/state``,
  ``DELETE /episodes/{id}`` — the control plane, see :mod:`openenv_mcp.serve.control`;
* ``/episodes/{id}/mcp`` — the MCP face bound to one episode;
* OpenEnv's ``/metadata``, ``/schema``, ``/openapi.json`` and (simulation) ``/reset``, ``/step``,
  ``/state``, its ``{"type": ...}`` messages on ``/ws`` and its session posts on ``/mcp``, see
  :mod:`openenv_mcp.serve.openenv_compat`.

Extra routes (e.g. the playground at ``/``) come in through ``extra_routes``.
Every request first passes :class:`~openenv_mcp.serve.edge.Edge` (Host/Origin, bearer token,
size cap). Running the app (uvicorn, stdio) is :mod:`openenv_mcp.serve.run`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Literal

import anyio
import anyio.to_thread
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from openenv_mcp.core.environment import Environment
from openenv_mcp.errors import ConfigError
from openenv_mcp.isolation import finish_removals
from openenv_mcp.serve.control import ControlPlane
from openenv_mcp.serve.edge import DEFAULT_MAX_REQUEST_BYTES, LOOPBACK_HOSTS, Edge, public_matcher
from openenv_mcp.serve.health import health_report
from openenv_mcp.serve.manager import EpisodeManager, default_max_mcp_episodes
from openenv_mcp.serve.mcp_http import DEFAULT_MAX_SESSIONS_PER_EPISODE, McpFace
from openenv_mcp.serve.metrics import Metrics
from openenv_mcp.serve.openenv_compat import OpenEnvMcp, openenv_routes
from openenv_mcp.serve.peer import PeerJudge

__all__ = ["create_app"]

_WILDCARD_BINDS = ("0.0.0.0", "::", "")


def create_app(
    environment: Environment,
    *,
    mode: str | None = None,
    token: str | None = None,
    admin_token: str | None = None,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    max_episodes: int | None = None,
    max_mcp_episodes: int | Literal["auto"] | None = "auto",
    max_sessions_per_episode: int | None = DEFAULT_MAX_SESSIONS_PER_EPISODE,
    trust_local_peers: bool = True,
    idle_timeout: float | None = 1800.0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    extra_routes: Sequence[BaseRoute] = (),
    public_paths: Sequence[str] = ("/health",),
    json_response: bool = True,
) -> Starlette:
    """The ASGI app serving ``environment``.

    Args:
        environment: the loaded environment (its ``mode`` decides the routes
            unless ``mode`` is given, which must then agree).
        mode: ``sim`` (control plane + MCP) or ``prod`` (MCP, health, metrics).
        token: require ``Authorization: Bearer <token>`` on every route but
            ``public_paths`` and an episode's own MCP address (its key is its credential).
            Without it the trainer is a trusted local peer (``trust_local_peers``), and anyone else
            may use only an episode's own MCP address and bare ``/mcp``.
        admin_token: ``Authorization: Bearer <admin_token>`` is accepted too and sees and
            drives every episode; other callers reach only their own (see ``docs/protocol.md``).
        host: the address the server binds; a specific one is allowed as Host.
        allowed_hosts: more Host values (``name`` or ``name:port``; ``*`` allows
            any). Loopback names are always allowed.
        allowed_origins: more Origin values (``scheme://host[:port]``; ``*``
            allows any). Loopback origins are always allowed.
        max_episodes: cap on live episodes (``None``: none).
        max_mcp_episodes: cap on live episodes (and sessions) of bare ``/mcp``, within
            ``max_episodes`` (``"auto"``: a quarter of it, at least 1; ``None``: no cap of its own).
        max_sessions_per_episode: cap on MCP sessions open at once on one episode's address
            (``None``: none).
        trust_local_peers: without ``token``, trust a loopback peer of the server's own uid (or
            root) in its mount namespace as the trainer (:mod:`openenv_mcp.serve.peer`);
            ``False``: without a token, nobody reaches the control plane.
        idle_timeout: close episodes (and MCP sessions) unused this long, in
            seconds (``None``: never).
        max_request_bytes: cap on a request body or WebSocket message.
        extra_routes: more routes (the playground's ``/``...), added last.
        public_paths: paths served without Host/Origin/token checks; an entry
            ending in ``/`` is a prefix.
        json_response: answer MCP POSTs with JSON (``False``: SSE streams).

    The app exposes ``app.state.manager`` (:class:`EpisodeManager`),
    ``app.state.metrics``, ``app.state.mcp`` (:class:`McpFace`) and
    ``app.state.environment``.
    """
    mode = mode or environment.mode
    if mode not in ("sim", "prod"):
        raise ConfigError(f"mode must be 'sim' or 'prod', got {mode!r}")
    if mode != environment.mode:
        raise ConfigError(
            f"the environment was loaded in {environment.mode!r} mode but the server runs in "
            f"{mode!r} mode; load it with Environment(spec, mode={mode!r})"
        )
    if max_request_bytes <= 0:
        raise ConfigError("max_request_bytes must be a positive number of bytes")

    if max_mcp_episodes == "auto":
        max_mcp_episodes = default_max_mcp_episodes(max_episodes)
    metrics = Metrics()
    manager = EpisodeManager(
        environment,
        max_episodes=max_episodes,
        max_mcp_episodes=max_mcp_episodes,
        idle_timeout=idle_timeout,
        metrics=metrics,
    )
    metrics.live = manager.__len__
    face = McpFace(
        manager,
        metrics,
        name=environment.name,
        instructions=environment.spec.description or None,
        security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_bytes=max_request_bytes,
        idle_timeout=idle_timeout,
        json_response=json_response,
        max_sessions_per_episode=max_sessions_per_episode,
    )
    peers = PeerJudge() if trust_local_peers and token is None else None

    async def health(request: Request) -> Response:
        return JSONResponse(await health_report(environment, manager, mode))

    async def metrics_route(request: Request) -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    routes: list[BaseRoute] = [
        Route("/health", health, methods=["GET"], name="health"),
        Route("/metrics", metrics_route, methods=["GET"], name="metrics"),
    ]
    control = ControlPlane(manager, metrics, max_request_bytes=max_request_bytes) if mode == "sim" else None
    if control is not None:
        routes += control.routes()
    plane = control or ControlPlane(manager, metrics, max_request_bytes=max_request_bytes)  # no routes in prod
    routes += openenv_routes(plane, environment, mode)  # OpenEnv's /reset /step /state /metadata /schema /openapi.json
    routes += list(extra_routes)

    hosts = [*LOOPBACK_HOSTS, *allowed_hosts]
    if host not in _WILDCARD_BINDS:
        hosts.append(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    origins = [f"{scheme}://{h}" for scheme in ("http", "https") for h in LOOPBACK_HOSTS]
    origins += list(allowed_origins)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.running(), face.running():
                yield
        finally:
            aclose = getattr(environment, "aclose", None)
            if aclose is not None:
                await aclose()
            # uvicorn re-raises SIGTERM after shutdown, so atexit never runs: finish removals here
            await anyio.to_thread.run_sync(finish_removals)

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(
                Edge,
                mcp=OpenEnvMcp(face, plane, peers),
                ws=control.websocket if control else None,
                metrics=metrics,
                allowed_hosts=hosts,
                allowed_origins=origins,
                token=token,
                admin_token=admin_token,
                capability=manager.capability_ok,
                peers=peers,
                max_request_bytes=max_request_bytes,
                public=public_matcher(public_paths),
                episode_mcp=mode == "sim",
            )
        ],
    )
    app.state.environment = environment
    app.state.manager = manager
    app.state.metrics = metrics
    app.state.mcp = face
    app.state.mode = mode
    return app
