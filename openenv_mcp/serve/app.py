"""``openenv-mcp serve``: one Starlette app with both faces of an environment.

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
Every request first passes :class:`Edge`: Host/Origin validation against DNS
rebinding (loopback allowed by default), the bearer token, and the request
size cap — each refusal a clear JSON error.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..core.environment import Environment
from ..errors import ConfigError, RequestTooLarge
from ..isolation import finish_removals
from .control import ControlPlane
from .health import health_report
from .manager import ADMIN_SCOPE_KEY, EpisodeManager, default_max_episodes
from .mcp_http import EPISODE_KEY_SCOPE_KEY, EPISODE_SCOPE_KEY, McpFace
from .metrics import Metrics
from .openenv_compat import OpenEnvMcp, openenv_routes

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "LOOPBACK_HOSTS", "Edge", "create_app", "serve", "serve_stdio", "tune_gc"]

DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Default cap on one request body or WebSocket message (4 MiB)."""

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""Host names always allowed (with any port) unless ``allowed_hosts`` contains ``*``."""

_WILDCARD_BINDS = ("0.0.0.0", "::", "")


def _split_host(host: str) -> str:
    """``example.com:8000`` -> ``example.com``; ``[::1]:80`` -> ``[::1]``."""
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end >= 0 else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _json_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps({"error": {"code": code, "message": message}})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


class Edge:
    """ASGI middleware in front of every route: Host/Origin, bearer token, size cap.

    It also routes ``/mcp`` (and ``/episodes/{id}/mcp`` when ``episode_mcp``, and ``/ws``) to
    the MCP face directly, skipping the router on the hottest path.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        mcp: ASGIApp,
        ws: ASGIApp | None,
        metrics: Metrics,
        allowed_hosts: Sequence[str],
        allowed_origins: Sequence[str],
        token: str | None,
        max_request_bytes: int,
        public: Callable[[str], bool],
        episode_mcp: bool,
        admin_token: str | None = None,
        capability: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.app = app
        self.mcp = mcp
        self.ws = ws
        self.metrics = metrics
        self.any_host = "*" in allowed_hosts
        self.hosts = {h.lower() for h in allowed_hosts}
        self.any_origin = "*" in allowed_origins
        self.origins = {o.lower().rstrip("/") for o in allowed_origins}
        self.auth = f"Bearer {token}".encode() if token else None
        self.admin = f"Bearer {admin_token}".encode() if admin_token else None
        self.capability = capability
        self.max_bytes = max_request_bytes
        self.public = public
        self.episode_mcp = episode_mcp
        self.allowed_text = ", ".join(sorted(self.hosts))

    # -- checks ----------------------------------------------------------------
    def _host_ok(self, host: str) -> bool:
        if self.any_host:
            return True
        host = host.lower()
        return host in self.hosts or _split_host(host) in self.hosts

    def _origin_ok(self, origin: str) -> bool:
        if self.any_origin:
            return True
        origin = origin.lower().rstrip("/")
        if origin in self.origins:
            return True
        scheme, sep, rest = origin.partition("://")
        if not sep:
            return False
        return f"{scheme}://{_split_host(rest)}" in self.origins

    async def _refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        status: int,
        code: str,
        message: str,
        reason: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.metrics.rejected_request(reason)
        if scope["type"] == "websocket":
            # Before accept: uvicorn answers the handshake with HTTP 403.
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        await _json_error(status, code, message, headers)(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if self.public(path):
            await self.app(scope, receive, send)
            return
        host = origin = auth = length = None
        for key, value in scope["headers"]:
            if key == b"host":
                host = value
            elif key == b"origin":
                origin = value
            elif key == b"authorization":
                auth = value
            elif key == b"content-length":
                length = value
        if host is None or not self._host_ok(host.decode("latin-1")):
            shown = host.decode("latin-1") if host is not None else "(none)"
            await self._refuse(
                scope,
                receive,
                send,
                421,
                "invalid_host",
                f"Invalid Host header {shown!r}: this server answers for {self.allowed_text} "
                "(DNS-rebinding protection); start it with --allowed-host NAME to allow another",
                "host",
            )
            return
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            await self._refuse(
                scope,
                receive,
                send,
                403,
                "invalid_origin",
                f"Invalid Origin header {origin.decode('latin-1')!r} (DNS-rebinding protection); "
                "start the server with --allowed-origin ORIGIN to allow it",
                "origin",
            )
            return
        admin = self.admin is not None and auth is not None and hmac.compare_digest(auth, self.admin)
        if admin:
            scope = dict(scope)
            scope[ADMIN_SCOPE_KEY] = True
        elif (
            self.auth is not None
            and (auth is None or not hmac.compare_digest(auth, self.auth))
            and not self._holds_capability(path)
        ):
            await self._refuse(
                scope,
                receive,
                send,
                401,
                "unauthorized",
                "missing or wrong bearer token: send 'Authorization: Bearer <token>' "
                "(the --token the server was started with)",
                "token",
                {"WWW-Authenticate": 'Bearer realm="openenv-mcp"'},
            )
            return
        if kind == "http" and length is not None:
            try:
                size = int(length)
            except ValueError:
                size = 0
            if size > self.max_bytes:
                await self._refuse(
                    scope,
                    receive,
                    send,
                    413,
                    "request_too_large",
                    f"request body of {size} bytes exceeds the limit of {self.max_bytes} bytes (--max-request-bytes)",
                    "too_large",
                )
                return
        elif kind == "http":  # a streamed body: count it as it comes
            started = False

            async def watch(message: Message) -> None:
                nonlocal started
                if message["type"] == "http.response.start":
                    started = True
                await send(message)

            try:
                await self._dispatch(scope, self._capped(receive), watch, path)
            except RequestTooLarge as e:
                if started:
                    raise
                await self._refuse(scope, receive, send, 413, "request_too_large", str(e), "too_large")
            return
        await self._dispatch(scope, receive, send, path)

    def _holds_capability(self, path: str) -> bool:
        """``/episodes/{id}/{key}/mcp`` with a live episode's key: the address is its own credential."""
        found = _episode_mcp_path(path) if self.episode_mcp else None
        return (
            found is not None
            and found[1] is not None
            and self.capability is not None
            and self.capability(found[0], found[1])
        )

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        if scope["type"] == "http":
            if path == "/mcp" or path == "/mcp/":
                await self.mcp(scope, receive, send)
                return
            found = _episode_mcp_path(path) if self.episode_mcp else None
            if found is not None:
                scope = dict(scope)
                scope[EPISODE_SCOPE_KEY], scope[EPISODE_KEY_SCOPE_KEY] = found
                await self.mcp(scope, receive, send)
                return
        elif path == "/ws" and self.ws is not None:
            await self.ws(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _capped(self, receive: Receive) -> Receive:
        """A ``receive`` that refuses a streamed (chunked) body beyond the cap."""
        seen = 0
        limit = self.max_bytes

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise RequestTooLarge(f"request body exceeds the limit of {limit} bytes (--max-request-bytes)")
            return message

        return capped


def _episode_mcp_path(path: str) -> tuple[str, str | None] | None:
    """``/episodes/{id}/{key}/mcp`` -> ``(id, key)``; ``/episodes/{id}/mcp`` -> ``(id, None)``; else ``None``."""
    if not path.startswith("/episodes/"):
        return None
    parts = path[len("/episodes/") :].rstrip("/").split("/")
    if len(parts) == 2 and parts[1] == "mcp" and parts[0]:
        return parts[0], None
    if len(parts) == 3 and parts[2] == "mcp" and parts[0] and parts[1]:
        return parts[0], parts[1]
    return None


def _public_paths(paths: Iterable[str]) -> Callable[[str], bool]:
    exact = {p for p in paths if not p.endswith("/") or p == "/"}
    prefixes = tuple(p for p in paths if p.endswith("/") and p != "/")

    def public(path: str) -> bool:
        return path in exact or (bool(prefixes) and path.startswith(prefixes))

    return public


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
        admin_token: ``Authorization: Bearer <admin_token>`` is accepted too and sees and
            drives every episode; other callers reach only their own (see ``docs/protocol.md``).
        host: the address the server binds; a specific one is allowed as Host.
        allowed_hosts: more Host values (``name`` or ``name:port``; ``*`` allows
            any). Loopback names are always allowed.
        allowed_origins: more Origin values (``scheme://host[:port]``; ``*``
            allows any). Loopback origins are always allowed.
        max_episodes: cap on live episodes (``None``: none).
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

    metrics = Metrics()
    manager = EpisodeManager(environment, max_episodes=max_episodes, idle_timeout=idle_timeout, metrics=metrics)
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
    )

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
                mcp=OpenEnvMcp(face, plane),
                ws=control.websocket if control else None,
                metrics=metrics,
                allowed_hosts=hosts,
                allowed_origins=origins,
                token=token,
                admin_token=admin_token,
                capability=manager.capability_ok,
                max_request_bytes=max_request_bytes,
                public=_public_paths(public_paths),
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


# -- running ---------------------------------------------------------------------
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
    **options: Any,
) -> None:
    """Load ``target`` (a name, env file or folder) in ``mode`` and serve it with uvicorn until stopped.

    ``extra_routes(environment, mode, token)`` may add routes (the playground);
    other keyword arguments go to :func:`create_app`. Without ``max_episodes`` the cap is
    :func:`~openenv_mcp.serve.manager.default_max_episodes` (``max_episodes=None``: no cap).
    """
    import uvicorn

    from ..client.registry import load_environment

    options.setdefault("max_episodes", default_max_episodes())  # never unbounded by default
    environment = load_environment(target, mode=mode, workspace=workspace, read_only=read_only)
    routes = list(extra_routes(environment, mode, options.get("token")) if extra_routes else ())
    app = create_app(environment, mode=mode, host=host, extra_routes=routes, **options)
    tune_gc()
    max_bytes = options.get("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES)
    uvicorn.run(
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


async def serve_stdio(
    target: Any,
    *,
    mode: str = "sim",
    seed: int | None = None,
    task_id: str | None = None,
    workspace: str | Path | None = None,
    read_only: bool = False,
) -> None:
    """Serve one episode of ``target`` as an MCP server over stdin/stdout (IDE and desktop clients);
    in production on the user's folder ``workspace`` (see ``docs/deploy.md``)."""
    from mcp.server.stdio import stdio_server

    from ..client.registry import load_environment
    from .mcp_server import episode_server

    environment = load_environment(target, mode=mode, workspace=workspace, read_only=read_only)
    episode = await environment.new_episode(seed=seed, task_id=task_id)
    try:
        server = episode_server(episode)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await episode.close()
        aclose = getattr(environment, "aclose", None)
        if aclose is not None:
            await aclose()
