"""The edge of the served app: what every request passes before any route.

:class:`Edge` is the ASGI middleware in front of every route: Host/Origin validation against
DNS rebinding (loopback allowed by default), the credential, and the request size cap — each
refusal a clear JSON error. It also sends ``/mcp``, ``/episodes/{id}/mcp`` and ``/ws`` straight to
their handlers.

Who may use what:

* with ``token``: a request carrying it (or the admin token) reaches every route; anyone else only
  an episode's own MCP address ``/episodes/{id}/{key}/mcp`` (its key is its credential);
* without ``token``: the trainer is a trusted local peer (:mod:`openenv_mcp.serve.peer`: loopback,
  the server's uid or root, the server's mount namespace) and reaches every route; anyone else
  only an episode's own MCP address and bare ``/mcp`` (each session a fresh episode, capped by
  ``--max-mcp-episodes``), never ``/ws`` or a control route.

The trainer's requests carry :data:`~openenv_mcp.serve.manager.TRUSTED_SCOPE_KEY`.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Iterable, Sequence

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openenv_mcp.errors import RequestTooLarge
from openenv_mcp.serve.manager import ADMIN_SCOPE_KEY, TRUSTED_SCOPE_KEY
from openenv_mcp.serve.mcp_http import EPISODE_KEY_SCOPE_KEY, EPISODE_SCOPE_KEY
from openenv_mcp.serve.metrics import Metrics
from openenv_mcp.serve.peer import PeerJudge, refusal

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "LOOPBACK_HOSTS", "Edge", "public_matcher"]

DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Default cap on one request body or WebSocket message (4 MiB)."""

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""Host names always allowed (with any port) unless ``allowed_hosts`` contains ``*``."""


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
        peers: PeerJudge | None = None,
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
        self.peers = peers  # without a token: who is the trainer (None: nobody without a token)
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
        host, origin, auth, length = _edge_headers(scope)
        refused = self._rebinding_refusal(host, origin)
        if refused is not None:
            await self._refuse(scope, receive, send, *refused)
            return
        admin, trusted, refused = await self._access(scope, path, auth)
        if refused is not None:
            await self._refuse(scope, receive, send, *refused)
            return
        if admin or trusted:
            scope = dict(scope)
            scope[TRUSTED_SCOPE_KEY] = True
            if admin:
                scope[ADMIN_SCOPE_KEY] = True
        if kind == "http" and length is not None:
            refused = self._size_refusal(length)
            if refused is not None:
                await self._refuse(scope, receive, send, *refused)
                return
        elif kind == "http":  # a streamed body: count it as it comes
            await self._streamed(scope, receive, send, path)
            return
        await self._dispatch(scope, receive, send, path)

    def _rebinding_refusal(self, host: bytes | None, origin: bytes | None) -> _Refusal | None:
        """Why a request is refused for its ``Host`` or ``Origin`` header (DNS rebinding), if it is."""
        if host is None or not self._host_ok(host.decode("latin-1")):
            shown = host.decode("latin-1") if host is not None else "(none)"
            return (
                421,
                "invalid_host",
                f"Invalid Host header {shown!r}: this server answers for {self.allowed_text} "
                "(DNS-rebinding protection); start it with --allowed-host NAME to allow another",
                "host",
                None,
            )
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            return (
                403,
                "invalid_origin",
                f"Invalid Origin header {origin.decode('latin-1')!r} (DNS-rebinding protection); "
                "start the server with --allowed-origin ORIGIN to allow it",
                "origin",
                None,
            )
        return None

    async def _access(self, scope: Scope, path: str, auth: bytes | None) -> tuple[bool, bool, _Refusal | None]:
        """``(admin, trusted, refusal)``: the admin token, the token or a trusted peer, else why not
        (a capability address and bare ``/mcp`` pass untrusted)."""
        admin = self.admin is not None and auth is not None and hmac.compare_digest(auth, self.admin)
        trusted = admin or (self.auth is not None and auth is not None and hmac.compare_digest(auth, self.auth))
        if trusted or self._holds_capability(path):
            return admin, trusted, None
        if self.auth is not None:
            return (
                admin,
                trusted,
                (
                    401,
                    "unauthorized",
                    "missing or wrong bearer token: send 'Authorization: Bearer <token>' "
                    "(the --token the server was started with)",
                    "token",
                    {"WWW-Authenticate": 'Bearer realm="openenv-mcp"'},
                ),
            )
        # bare /mcp is open to anyone; OpenEnv's session create on it asks the peer judge itself
        bare = path == "/mcp" or path == "/mcp/"
        trusted = not bare and self.peers is not None and await self.peers.trusted(scope)
        if not trusted and not bare:
            return admin, trusted, (403, "untrusted_peer", refusal(path), "untrusted", None)
        return admin, trusted, None

    def _size_refusal(self, length: bytes) -> _Refusal | None:
        """A declared ``Content-Length`` over the cap (an unreadable one counts as 0)."""
        try:
            size = int(length)
        except ValueError:
            size = 0
        if size <= self.max_bytes:
            return None
        return (
            413,
            "request_too_large",
            f"request body of {size} bytes exceeds the limit of {self.max_bytes} bytes (--max-request-bytes)",
            "too_large",
            None,
        )

    async def _streamed(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        """Dispatch a request whose body is streamed, refused once it passes the cap (while no answer began)."""
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


# (status, code, message, metrics reason, extra headers) of a refused request
_Refusal = tuple[int, str, str, str, dict[str, str] | None]


def _edge_headers(scope: Scope) -> tuple[bytes | None, bytes | None, bytes | None, bytes | None]:
    """The request's ``Host``, ``Origin``, ``Authorization`` and ``Content-Length`` headers (the last of each)."""
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
    return host, origin, auth, length


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


def public_matcher(paths: Iterable[str]) -> Callable[[str], bool]:
    """Whether a path is one of ``paths`` (served without the edge's checks); an entry ending in ``/``
    is a prefix."""
    exact = {p for p in paths if not p.endswith("/") or p == "/"}
    prefixes = tuple(p for p in paths if p.endswith("/") and p != "/")

    def public(path: str) -> bool:
        return path in exact or (bool(prefixes) and path.startswith(prefixes))

    return public
