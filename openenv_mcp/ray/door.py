"""The routing state of a front door (:mod:`openenv_mcp.ray.app`): which replica holds each episode and MCP session.

A ``create`` (or a new MCP session) goes to the least-loaded live replica of the
:class:`~openenv_mcp.ray.pool.RayPool` and its episode id (or MCP session id) is pinned there; every
other request goes to the replica of its episode, and one whose replica died answers
``episode_lost`` at once. The caller's credentials are re-checked by the replica: a request that
passed the front door with its bearer token is forwarded with the pool's cluster token (its admin
token for an admin caller), one that passed only by its episode capability (an agent key in the MCP
address) without any token, so the replica checks the key against that episode. This module also
proxies the MCP face (HTTP) to the pinned replica; the control plane (WebSocket) is
:mod:`openenv_mcp.ray.controlplane`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import re

import httpx
from starlette.types import Receive, Scope, Send

from openenv_mcp.errors import EpisodeLost, OpenEnvError, UnknownEpisode
from openenv_mcp.ray.pool import RayPool, ReplicaInfo
from openenv_mcp.serve.edge import DEFAULT_MAX_REQUEST_BYTES
from openenv_mcp.serve.manager import ADMIN_SCOPE_KEY
from openenv_mcp.serve.statuses import http_status

__all__ = ["FrontDoor", "error_body", "lost_message"]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")
"""What an episode id and an agent key are made of: a segment with anything else (``..``, a decoded ``?`` or
``#``) would become another path (or a query) in the URL forwarded to the replica, so it is refused here."""
_HOP_HEADERS = {b"host", b"authorization", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}


def error_body(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def lost_message(episode_id: str | None, replica: ReplicaInfo) -> str:
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
        if replica is None or not _PLAIN.fullmatch(key):
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
            raise EpisodeLost(lost_message(episode_id, replica))
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
                segments = path.split("/")[2:-1]  # the id, and the agent key if there is one
                if not all(_PLAIN.fullmatch(segment) for segment in segments):
                    raise UnknownEpisode(f"no episode has the MCP address {path!r} on this front door")
                replica = self.replica_of(segments[0])
            elif session is not None:
                replica = self.sessions.get(session) or self._unknown_session(session)
                if not replica.alive:
                    self.sessions.pop(session, None)
                    raise EpisodeLost(lost_message(f"of MCP session {session}", replica))
            else:
                replica = await self.pool.choose()
        except OpenEnvError as e:
            await self._send_json(send, http_status(e), error_body(e.code, str(e)))
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
                await self._send_json(send, http_status(lost), error_body(lost.code, str(lost)))
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
