"""The MCP face over streamable HTTP: ``/mcp`` and ``/episodes/{id}/mcp``.

Built on the official SDK's machinery (:class:`StreamableHTTPSessionManager`:
the 2025-11-25 handshake with ``Mcp-Session-Id`` and the stateless 2026-07-28
single-exchange form, Host/Origin validation, body size cap) around one
low-level server from :func:`openenv_mcp.serve.mcp_server.build_server`, so every
``tools/call`` goes through :meth:`Episode.act`.

Which episode serves a request (first match wins):

1. the path ``/episodes/{id}/{key}/mcp`` — the episode's own MCP address, as
   ``create`` returns it (``mcp_url``): ``key`` is the episode's agent key (or
   its trainer key), so the address is its own credential and any client can
   use it as handed out. ``_meta["openenv/episode"]`` on it may only name the
   same episode;
2. ``params._meta["openenv/episode"]`` (:data:`EPISODE_META_KEY`) names a live
   episode, with its key in ``_meta["openenv/episode_key"]``
   (:data:`EPISODE_KEY_META_KEY`) or the ``OpenEnv-Episode-Key`` header;
   ``/episodes/{id}/mcp`` (no key in the path) likewise needs the key header.
   The admin token needs no key;
3. a 2025-11-25 session on ``/mcp``: the session's own fresh episode, created
   on its first request and closed when the session ends (DELETE, idle);
4. otherwise (a stateless request on ``/mcp``): a fresh episode for this one
   request, closed after it.

An id that names no live episode is a JSON-RPC error (code
:data:`UNKNOWN_EPISODE_CODE`) whose message says what to do.

Episodes made by bare ``/mcp`` (3 and 4) count against ``--max-mcp-episodes`` as well as
``--max-episodes``. Sessions are bounded too: at most ``max_sessions_per_episode`` open at once on
one episode's address, and at most ``--max-mcp-episodes`` on bare ``/mcp`` (each one an episode);
one more ``initialize`` is answered HTTP 429 with a JSON-RPC error (``session_limit``), and a
session that ends frees its place.
"""

from __future__ import annotations

import contextvars
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import Message, Receive, Scope, Send

from openenv_mcp.errors import OpenEnvError, SessionLimit
from openenv_mcp.sdkcompat import session_manager_class
from openenv_mcp.serve.manager import ADMIN_SCOPE_KEY, EPISODE_KEY_HEADER
from openenv_mcp.serve.mcp_server import build_server

if TYPE_CHECKING:
    from openenv_mcp.core.episode import Episode
    from openenv_mcp.serve.manager import EpisodeManager
    from openenv_mcp.serve.metrics import Metrics

__all__ = [
    "DEFAULT_MAX_SESSIONS_PER_EPISODE",
    "EPISODE_KEY_META_KEY",
    "EPISODE_KEY_SCOPE_KEY",
    "EPISODE_META_KEY",
    "EPISODE_SCOPE_KEY",
    "UNKNOWN_EPISODE_CODE",
    "McpFace",
]

EPISODE_META_KEY = "openenv/episode"
"""The ``_meta`` key naming the episode a request is for (a request's ``params._meta``)."""

EPISODE_KEY_META_KEY = "openenv/episode_key"
"""The ``_meta`` key carrying the key of the episode :data:`EPISODE_META_KEY` names."""

EPISODE_SCOPE_KEY = "openenv.episode"
"""ASGI scope key set by the router for ``/episodes/{id}[/{key}]/mcp``."""

EPISODE_KEY_SCOPE_KEY = "openenv.episode_key"
"""ASGI scope key: the key in the path of ``/episodes/{id}/{key}/mcp`` (``None`` without one)."""

DEFAULT_MAX_SESSIONS_PER_EPISODE = 8
"""Default cap on MCP sessions open at once on one episode's address (``--max-sessions-per-episode``)."""

UNKNOWN_EPISODE_CODE = -32001
"""JSON-RPC error code for an episode that cannot serve the request (unknown, reaped, cap reached)."""

EPISODE_METHODS = frozenset(
    {
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)
"""Methods answered by an episode (everything else is protocol: initialize, ping, discover...)."""

SURFACE_METHODS = frozenset({"initialize", "server/discover"})
"""Methods whose answer declares the surface (instructions, capabilities) of the wrapped servers."""

log = logging.getLogger("openenv_mcp.serve.mcp_http")

_current: contextvars.ContextVar[Episode] = contextvars.ContextVar("openenv_mcp_episode")


def _may_open_session(scope: Scope) -> bool:
    """Whether the SDK may open a 2025-11-25 session for this request: a POST without ``Mcp-Session-Id``
    whose ``MCP-Protocol-Version`` is absent or a handshake version (later versions have no sessions)."""
    if scope["type"] != "http" or scope["method"] != "POST":
        return False
    for key, value in scope["headers"]:
        if key == b"mcp-session-id":
            return False
        if key == b"mcp-protocol-version" and value.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
    return True


def _error(err: OpenEnvError) -> MCPError:
    return MCPError(code=UNKNOWN_EPISODE_CODE, message=str(err), data={"code": err.code})


class McpFace:
    """The MCP face of one served environment (an ASGI app for ``/mcp``)."""

    def __init__(
        self,
        manager: EpisodeManager,
        metrics: Metrics,
        *,
        name: str,
        instructions: str | None,
        security: TransportSecuritySettings,
        max_request_bytes: int,
        idle_timeout: float | None,
        json_response: bool = True,
        max_sessions_per_episode: int | None = DEFAULT_MAX_SESSIONS_PER_EPISODE,
    ) -> None:
        if max_sessions_per_episode is not None and max_sessions_per_episode < 1:
            raise ValueError("max_sessions_per_episode must be at least 1 (or None for no cap)")
        self.manager = manager
        self.metrics = metrics
        self.max_sessions_per_episode = max_sessions_per_episode
        self._opened: dict[str, str] = {}  # MCP session id -> where it was opened (an episode id; "": bare /mcp)
        self._open: dict[str, int] = {}  # where -> sessions open or opening there
        self._sessions: dict[str, str] = {}  # MCP session id -> episode id
        self._creating: dict[str, anyio.Event] = {}
        self._listening: dict[str, set[str]] = {}  # MCP session id -> episodes it hears tool-list changes of
        self._surface_lock = anyio.Lock()

        async def resolve(ctx: Any) -> Episode:
            return _current.get()

        environment = manager.environment
        self.server = build_server(name, resolve, instructions=instructions, surface=lambda: environment.surface)
        self.server.middleware = [self._middleware]  # one middleware: episode resolution + metrics
        # Input schemas for the SDK's Mcp-Param header check (2026-07-28), from tools already listed by an
        # episode: without it the SDK would run a whole tools/list (a fresh episode) per stateless call.
        self._schemas: dict[str, Any] = {}
        self.server.get_tool_input_schema = self._schemas.get
        self.sessions = session_manager_class()(  # the SDK's; a session that ends also closes its episode
            self.server,
            json_response=json_response,
            security_settings=security,
            session_idle_timeout=idle_timeout,
            max_request_body_size=max_request_bytes,
            max_sessions=None,  # the episode cap rules (--max-episodes)
        )
        self.sessions.on_session_end = self.session_ended

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.sessions.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _may_open_session(scope):
            await self.sessions.asgi_app(scope, receive, send)
            return
        # it may open a session here, so it takes a place first (kept while the session lives)
        where: str = scope.get(EPISODE_SCOPE_KEY) or ""
        cap = self.max_sessions_per_episode if where else self.manager.max_mcp_episodes
        if cap is not None and self._open.get(where, 0) >= cap:
            await self._refuse_session(scope, receive, send, where, cap)
            return
        self._open[where] = self._open.get(where, 0) + 1
        kept = False

        async def watch(message: Message) -> None:
            nonlocal kept
            if message["type"] == "http.response.start" and not kept and message.get("status", 500) < 400:
                for key, value in message.get("headers", ()):
                    session_id = value.decode("latin-1")
                    if key.lower() == b"mcp-session-id" and session_id not in self._opened:
                        self._opened[session_id] = where  # before the client can learn the id and end it
                        kept = True
            await send(message)

        try:
            await self.sessions.asgi_app(scope, receive, watch)
        finally:
            if not kept:
                self._release(where)

    def _release(self, where: str) -> None:
        left = self._open.get(where, 0) - 1
        if left > 0:
            self._open[where] = left
        else:
            self._open.pop(where, None)

    async def _refuse_session(self, scope: Scope, receive: Receive, send: Send, where: str, cap: int) -> None:
        from starlette.responses import Response

        if where:
            err = SessionLimit(
                f"this episode's MCP address already has {cap} sessions open (--max-sessions-per-episode); "
                "end one (DELETE with its Mcp-Session-Id) or wait for an idle one to be closed"
            )
        else:
            err = SessionLimit(
                f"bare /mcp already has {cap} sessions open, each one an episode (--max-mcp-episodes); "
                "end one (DELETE with its Mcp-Session-Id), or connect to an episode's own address (mcp_url)"
            )
        self.metrics.rejected_request("session_limit")
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": UNKNOWN_EPISODE_CODE, "message": str(err), "data": {"code": err.code}},
        }
        await Response(json.dumps(body), status_code=429, media_type="application/json")(scope, receive, send)

    # -- episode resolution ---------------------------------------------------------
    async def _ensure_surface(self) -> None:
        """Learn what the wrapped servers declare (once): from a first episode, or a probe episode."""
        environment = self.manager.environment
        if environment.surface is not None:
            return
        async with self._surface_lock:
            if environment.surface is not None:
                return
            try:
                episode = await environment.new_episode()
            except Exception as e:  # noqa: BLE001 - the face still answers, with the description only
                log.warning("could not start an episode to learn the tool servers' surface: %s", e)
                return
            environment.surface = episode.surface()
            await episode.close()

    def _listen(self, ctx: Any, episode: Episode) -> None:
        """Send this MCP session ``notifications/tools/list_changed`` when the episode's tools change."""
        request = ctx.request
        session_id = request.headers.get("mcp-session-id") if request is not None else None
        if not session_id:
            return
        heard = self._listening.setdefault(session_id, set())
        if episode.id in heard:
            return
        heard.add(episode.id)
        episode.tool_listeners.add(ctx.session.send_tool_list_changed)

    async def _middleware(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method in SURFACE_METHODS:
            await self._ensure_surface()
        if ctx.method not in EPISODE_METHODS:
            return await call_next(ctx)
        episode, ephemeral = await self._resolve(ctx)
        if not ephemeral:
            self._listen(ctx, episode)
        if not self._schemas:
            self._schemas.update((t.name, t.input_schema) for t in episode.mcp_tools)
        token = _current.set(episode)
        try:
            if ctx.method != "tools/call":
                return await call_next(ctx)
            name = ctx.params.get("name") if ctx.params else None
            started = time.perf_counter()
            outcome = "failed"
            try:
                result = await call_next(ctx)
                if isinstance(result, dict):
                    outcome = "error" if result.get("isError") else "ok"
                return result
            finally:
                self.metrics.tool_call(episode.tool_label(name), outcome, time.perf_counter() - started, "mcp")
        finally:
            _current.reset(token)
            if ephemeral:
                await self.manager.close(episode.id)

    async def _resolve(self, ctx: Any) -> tuple[Episode, bool]:
        try:
            params = ctx.params
            meta = params.get("_meta") if params else None
            request = ctx.request
            scope = request.scope if request is not None else {}
            admin = bool(scope.get(ADMIN_SCOPE_KEY))
            header_key = request.headers.get(EPISODE_KEY_HEADER) if request is not None else None
            path_id = scope.get(EPISODE_SCOPE_KEY)
            if isinstance(meta, dict) and EPISODE_META_KEY in meta:
                episode_id = meta[EPISODE_META_KEY]
                if not isinstance(episode_id, str):
                    raise MCPError(code=-32602, message=f"_meta[{EPISODE_META_KEY!r}] must be an episode id string")
                if path_id is not None and episode_id != path_id:
                    raise MCPError(
                        code=UNKNOWN_EPISODE_CODE,
                        data={"code": "unknown_episode"},
                        message=f"this address serves episode {path_id!r} only; "
                        f"_meta[{EPISODE_META_KEY!r}] cannot name another episode",
                    )
                key = meta.get(EPISODE_KEY_META_KEY)
                key = key if isinstance(key, str) else scope.get(EPISODE_KEY_SCOPE_KEY) or header_key
                return self.manager.agent_episode(episode_id, key, admin=admin), False
            if path_id is not None:
                key = scope.get(EPISODE_KEY_SCOPE_KEY) or header_key
                return self.manager.agent_episode(path_id, key, admin=admin), False
            if request is not None:
                session_id = request.headers.get("mcp-session-id")
                if session_id:
                    return await self._session_episode(session_id), False
            return await self.manager.create(via_mcp=True), True
        except OpenEnvError as e:
            raise _error(e) from None

    async def _session_episode(self, session_id: str) -> Episode:
        while True:
            episode_id = self._sessions.get(session_id)
            if episode_id is not None:
                if episode_id in self.manager:
                    return self.manager.get(episode_id)
                err = self.manager.unknown(episode_id)
                raise type(err)(
                    f"the episode of this MCP session is gone ({err}); start a new session (initialize again)"
                )
            pending = self._creating.get(session_id)
            if pending is None:
                break
            await pending.wait()  # a concurrent first request is creating it
        done = self._creating[session_id] = anyio.Event()
        try:
            episode = await self.manager.create(owner=f"mcp:{session_id}", via_mcp=True)
            self._sessions[session_id] = episode.id
        finally:
            del self._creating[session_id]
            done.set()
        return episode

    async def session_ended(self, session_id: str) -> None:
        """A 2025-11-25 session ended (DELETE, idle timeout, shutdown): close its episode."""
        self._listening.pop(session_id, None)
        where = self._opened.pop(session_id, None)
        if where is not None:
            self._release(where)
        if self._sessions.pop(session_id, None) is not None:
            await self.manager.close_owner(f"mcp:{session_id}", "disconnect")
