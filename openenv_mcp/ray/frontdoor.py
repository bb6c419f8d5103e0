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
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..client.remote import ControlConnection
from ..errors import EpisodeLost, OpenEnvError, RequestTooLarge, UnknownEpisode
from ..serve.edge import DEFAULT_MAX_REQUEST_BYTES, LOOPBACK_HOSTS, Edge, public_matcher
from ..serve.manager import ADMIN_SCOPE_KEY
from ..serve.metrics import Metrics
from .pool import RayPool, ReplicaInfo

__all__ = ["FrontDoor", "create_front_door", "serve_front_door"]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_HOP_HEADERS = {b"host", b"authorization", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}


def _error(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def _lost_message(episode_id: str | None, replica: ReplicaInfo) -> str:
    name = f"episode {episode_id}" if episode_id is not None else "a new episode"
    return (
        f"{name} was lost: its replica at {replica.url} (Ray node {replica.node_id}) is gone "
        "and is being replaced; start a new episode to continue on a healthy replica"
    )


class FrontDoor:
    """The routing state of a front door: episode and MCP-session pins, the HTTP client to replicas."""

    def __init__(
        self,
        pool: RayPool,
        *,
        token: str | None,
        admin_token: str | None,
        health_interval: float,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    ) -> None:
        self.pool = pool
        self.max_request_bytes = max_request_bytes
        self.auth = f"Bearer {token}".encode() if token else None
        self.health_interval = health_interval
        self.episodes: dict[str, ReplicaInfo] = {}
        self.agent_keys: dict[str, str] = {}
        """Each pinned episode's agent key (from its MCP path): checked here once its replica is gone."""
        self.sessions: dict[str, ReplicaInfo] = {}
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(pool.request_timeout, connect=5.0))

    # -- credentials -------------------------------------------------------------
    def upstream_auth(self, scope: Scope) -> str | None:
        """The token to forward with: the cluster admin token for an admin, the cluster token for a caller
        that passed with the front door's token (or when it has none), nothing for a capability holder."""
        if scope.get(ADMIN_SCOPE_KEY):
            return self.pool.admin_token
        if self.auth is None:
            return self.pool.token
        for key, value in scope["headers"]:
            if key == b"authorization" and hmac.compare_digest(value, self.auth):
                return self.pool.token
        return None

    def capability(self, episode_id: str, key: str) -> bool:
        """Let an episode's own MCP address through to its replica, which checks the key; once the replica
        is gone, the key is checked here (its holder is told ``episode_lost``, anyone else ``401``)."""
        replica = self.episodes.get(episode_id)
        if replica is None:
            return False
        return replica.alive or hmac.compare_digest(key.encode(), self.agent_keys.get(episode_id, "").encode())

    def replica_of(self, episode_id: str, *, closing: bool = False) -> ReplicaInfo:
        """The live replica of a pinned episode. A lost episode stays pinned (every call on it answers
        ``episode_lost``) until it is closed (``closing``) or its client disconnects."""
        replica = self.episodes.get(episode_id)
        if replica is None:
            raise UnknownEpisode(f"unknown episode {episode_id!r}: no live episode has this id on this front door")
        if not replica.alive:
            if closing:
                self.unpin(episode_id)
            raise EpisodeLost(_lost_message(episode_id, replica))
        return replica

    def unpin(self, episode_id: str) -> None:
        self.episodes.pop(episode_id, None)
        self.agent_keys.pop(episode_id, None)

    async def watch(self) -> None:
        """Health-check the pool every ``health_interval`` (replacing lost replicas) and unpin their episodes."""
        while True:
            await asyncio.sleep(self.health_interval)
            with contextlib.suppress(Exception):
                await self.pool.check()

    # -- HTTP: the MCP face ------------------------------------------------------
    async def mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        session = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-session-id"), None)
        try:
            if path.startswith("/episodes/"):
                replica = self.replica_of(path.split("/")[2])
            elif session is not None:
                replica = self.sessions.get(session) or self._unknown_session(session)
                if not replica.alive:
                    self.sessions.pop(session, None)
                    raise EpisodeLost(_lost_message(f"of MCP session {session}", replica))
            else:
                replica = await self.pool.choose()
        except OpenEnvError as e:
            await self._send_json(send, e.http_status, _error(e.code, str(e)))
            return
        await self.forward(scope, receive, send, replica, session_pin=session is None)

    def _unknown_session(self, session: str) -> ReplicaInfo:
        raise UnknownEpisode(f"unknown MCP session {session!r} on this front door: start a new session")

    async def forward(
        self, scope: Scope, receive: Receive, send: Send, replica: ReplicaInfo, *, session_pin: bool = False
    ) -> None:
        """Send one HTTP request to ``replica`` and stream its answer back."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.request":
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            elif message["type"] == "http.disconnect":
                return
        headers = [(k, v) for k, v in scope["headers"] if k not in _HOP_HEADERS]
        token = self.upstream_auth(scope)
        if token is not None:
            headers.append((b"authorization", f"Bearer {token}".encode()))
        query = scope.get("query_string", b"").decode("latin-1")
        attempts = 0
        while True:
            url = replica.url + scope["path"] + (f"?{query}" if query else "")
            request = self.http.build_request(scope["method"], url, headers=headers, content=bytes(body))
            try:
                response = await self.http.send(request, stream=True)
                break
            except httpx.HTTPError as e:
                await self.pool.healthy(replica)  # drops it when dead
                attempts += 1
                if session_pin and not replica.alive and attempts <= self.pool.max_replicas and self.pool.live():
                    replica = await self.pool.choose()  # a new MCP session loses nothing: another replica
                    continue
                lost = EpisodeLost(f"the replica at {replica.url} (Ray node {replica.node_id}) did not answer: {e}")
                await self._send_json(send, lost.http_status, _error(lost.code, str(lost)))
                return
        try:
            if session_pin and "mcp-session-id" in response.headers:
                self.sessions[response.headers["mcp-session-id"]] = replica
            out = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP_HEADERS]
            await send({"type": "http.response.start", "status": response.status_code, "headers": out})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except httpx.HTTPError:
            await self.pool.healthy(replica)
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()
            if scope["method"] == "DELETE" and session_pin is False:
                session = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-session-id"), None)
                if session is not None:
                    self.sessions.pop(session, None)

    @staticmethod
    async def _send_json(send: Send, status: int, error: dict[str, str]) -> None:
        body = _dumps({"error": error}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # -- WebSocket: the control plane --------------------------------------------
    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "localhost")
        base = f"{'https' if scope.get('scheme') == 'wss' else 'http'}://{host}"
        connection = _Connection(self, self.upstream_auth(scope), base)
        tasks: set[asyncio.Task[None]] = set()

        async def handle(raw: str) -> None:
            reply = await connection.handle(raw)
            with contextlib.suppress(Exception):
                await send({"type": "websocket.send", "text": reply})

        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.receive":
                    raw = message.get("text")
                    if raw is None:
                        raw = (message.get("bytes") or b"").decode("utf-8", errors="replace")
                    task = asyncio.get_running_loop().create_task(handle(raw))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif message["type"] == "websocket.disconnect":
                    break
        finally:
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await connection.close()


class _Connection:
    """One client WebSocket: an upstream connection per replica, its episodes' pins."""

    def __init__(self, door: FrontDoor, token: str | None, base: str) -> None:
        self.door = door
        self.token = token
        self.base = base
        self.upstreams: dict[str, ControlConnection] = {}
        self.created: set[str] = set()

    def upstream(self, replica: ReplicaInfo) -> ControlConnection:
        conn = self.upstreams.get(replica.url)
        if conn is None:
            conn = self.upstreams[replica.url] = ControlConnection(replica.url, token=self.token)
        return conn

    async def close(self) -> None:
        for episode_id in self.created:
            self.door.unpin(episode_id)
        upstreams, self.upstreams = list(self.upstreams.values()), {}
        await asyncio.gather(*(asyncio.wait_for(c.close(), 5.0) for c in upstreams), return_exceptions=True)

    async def handle(self, raw: str) -> str:
        rid: Any = None
        try:
            limit = self.door.max_request_bytes
            if len(raw) > limit:
                raise RequestTooLarge(
                    f"message of {len(raw)} bytes exceeds the limit of {limit} bytes (--max-request-bytes)"
                )
            try:
                msg = json.loads(raw)
            except ValueError as e:
                return _dumps(
                    {"id": None, "ok": False, "error": _error("bad_request", f"message is not valid JSON: {e}")}
                )
            if not isinstance(msg, dict):
                return _dumps({"id": None, "ok": False, "error": _error("bad_request", "a message is a JSON object")})
            rid = msg.pop("id", None)
            op = msg.get("op")
            if op == "batch":
                result: Any = await self.batch(msg)
            elif op == "list":
                result = await self.list_()
            else:
                result = await self.one(msg)
            return _dumps({"id": rid, "ok": True, "result": result})
        except OpenEnvError as e:
            return _dumps({"id": rid, "ok": False, "error": _error(e.code, str(e))})

    async def one(self, msg: dict[str, Any], replica: ReplicaInfo | None = None) -> Any:
        if replica is None:
            if msg.get("op") == "create":
                return await self.create(msg)
            episode_id = msg.get("episode_id")
            if not isinstance(episode_id, str):
                raise UnknownEpisode(f"'episode_id' is required for op {msg.get('op')!r}")
            replica = self.door.replica_of(episode_id, closing=msg.get("op") == "close")
        result = await self.send(replica, msg)
        self.pinned(msg, result, replica)
        return result

    async def create(self, msg: dict[str, Any]) -> Any:
        """A new episode on a live replica: one that turns out dead (its node died before the pool noticed)
        is dropped by :meth:`send` and the episode goes to another."""
        pool = self.door.pool
        attempts = 0
        while True:
            replica = await pool.choose()
            replica.starting += 1
            try:
                result = await self.send(replica, msg)
            except EpisodeLost:
                attempts += 1
                if attempts <= pool.max_replicas and pool.live():
                    continue
                raise
            finally:
                replica.starting -= 1
            self.pinned(msg, result, replica)
            return result

    def pinned(self, msg: dict[str, Any], result: Any, replica: ReplicaInfo) -> None:
        op = msg.get("op")
        if op in ("create", "reset") and isinstance(result, dict) and "episode_id" in result:
            if op == "create":
                self.door.episodes[result["episode_id"]] = replica
                self.created.add(result["episode_id"])
                replica.episodes += 1
            if "mcp_path" in result:
                result["mcp_url"] = self.base + result["mcp_path"]
                parts = str(result["mcp_path"]).split("/")  # /episodes/{id}/{agent_key}/mcp
                if len(parts) == 5 and parts[2] == result["episode_id"]:
                    self.door.agent_keys[parts[2]] = parts[3]
        elif op == "close":
            self.door.unpin(str(msg.get("episode_id")))
            self.created.discard(str(msg.get("episode_id")))
            replica.episodes = max(0, replica.episodes - 1)

    async def send(self, replica: ReplicaInfo, msg: dict[str, Any]) -> Any:
        """One operation on ``replica``. A replica that cannot be reached (refused, reset, no answer within
        ``request_timeout``) is health-checked, which drops it from the pool when it is dead, so no new
        episode goes there again; the operation fails with :class:`EpisodeLost`."""
        pool = self.door.pool
        try:
            return await asyncio.wait_for(self.upstream(replica).request(dict(msg)), pool.request_timeout)
        except OpenEnvError as e:
            if e.code != "boundary_error":
                raise
            if self.upstream(replica).connected and await pool.healthy(replica):
                raise  # a boundary error the replica reported (a tool server failed to start)
        except (TimeoutError, OSError):
            pass
        if replica.alive:
            await pool.healthy(replica)
        self.upstreams.pop(replica.url, None)
        episode_id = msg.get("episode_id")
        raise EpisodeLost(_lost_message(str(episode_id) if episode_id is not None else None, replica))

    async def list_(self) -> Any:
        results = await asyncio.gather(
            *(self.send(r, {"op": "list"}) for r in self.door.pool.live() if r.url in self.upstreams),
            return_exceptions=True,
        )
        ids: list[str] = []
        for r in results:
            if isinstance(r, dict):
                ids += r.get("episodes", [])
        return {"episodes": sorted(ids)}

    async def batch(self, msg: dict[str, Any]) -> Any:
        items = msg.get("items")
        if not isinstance(items, list):
            raise OpenEnvError("'items' (a list of operations) is required")
        results: list[Any] = [None] * len(items)
        groups: dict[str, tuple[ReplicaInfo, list[int]]] = {}
        for i, item in enumerate(items):
            try:
                if not isinstance(item, dict):
                    raise OpenEnvError("a batch item is a JSON object")
                if item.get("op") == "create":
                    replica = await self.door.pool.choose()
                    replica.starting += 1  # spreads the rest of the batch
                else:
                    replica = self.door.replica_of(str(item.get("episode_id")), closing=item.get("op") == "close")
                groups.setdefault(replica.url, (replica, []))[1].append(i)
            except OpenEnvError as e:
                results[i] = {"ok": False, "error": _error(e.code, str(e))}

        async def retry(i: int) -> None:
            try:
                results[i] = {"ok": True, "result": await self.create(items[i])}
            except OpenEnvError as e:
                results[i] = {"ok": False, "error": _error(e.code, str(e))}

        async def run(replica: ReplicaInfo, indices: list[int]) -> None:
            sub = [items[i] for i in indices]
            creates = sum(1 for item in sub if item.get("op") == "create")
            try:
                answer = await self.send(replica, {"op": "batch", "items": sub})
            except OpenEnvError as e:
                lost = [i for i in indices if e.code == EpisodeLost.code and items[i].get("op") == "create"]
                for i in indices:
                    results[i] = {"ok": False, "error": _error(e.code, str(e))}
                replica.starting -= creates
                creates = 0
                await asyncio.gather(*(retry(i) for i in lost))  # new episodes are not lost: a live replica
                return
            finally:
                replica.starting -= creates
            for i, out in zip(indices, answer["results"], strict=True):
                if out.get("ok"):
                    self.pinned(items[i], out["result"], replica)
                results[i] = out

        await asyncio.gather(*(run(r, idx) for r, idx in groups.values()))
        return {"results": results}


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
                ws=door.websocket,
                metrics=metrics,
                allowed_hosts=hosts,
                allowed_origins=origins,
                token=token,
                admin_token=admin_token,
                capability=door.capability,
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
