"""The front door's control plane (``/ws``): each client WebSocket relayed to the replicas of its episodes.

Each client WebSocket gets its own upstream connection per replica (a :class:`Connection`), so a
trainer still sees only the episodes of its own connection, as on a single server, and its episodes
close when it disconnects. Operations are routed by :class:`~openenv_mcp.ray.door.FrontDoor`'s pins; a batch is
split per replica, and new episodes whose replica turns out dead are retried on a live one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from starlette.types import Receive, Scope, Send

from openenv_mcp.client.remote import ControlConnection
from openenv_mcp.errors import EpisodeLost, OpenEnvError, RequestTooLarge, UnknownEpisode
from openenv_mcp.ray.door import FrontDoor, error_body, lost_message
from openenv_mcp.ray.pool import ReplicaInfo

__all__ = ["Connection", "serve_websocket"]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


async def serve_websocket(door: FrontDoor, scope: Scope, receive: Receive, send: Send) -> None:
    """One client WebSocket of the control plane: each message is handled concurrently by its :class:`Connection`."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "localhost")
    base = f"{'https' if scope.get('scheme') == 'wss' else 'http'}://{host}"
    connection = Connection(door, door.upstream_auth(scope), base)
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


class Connection:
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
                    {"id": None, "ok": False, "error": error_body("bad_request", f"message is not valid JSON: {e}")}
                )
            if not isinstance(msg, dict):
                return _dumps(
                    {"id": None, "ok": False, "error": error_body("bad_request", "a message is a JSON object")}
                )
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
            return _dumps({"id": rid, "ok": False, "error": error_body(e.code, str(e))})

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
        raise EpisodeLost(lost_message(str(episode_id) if episode_id is not None else None, replica))

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
                results[i] = {"ok": False, "error": error_body(e.code, str(e))}

        async def retry(i: int) -> None:
            try:
                results[i] = {"ok": True, "result": await self.create(items[i])}
            except OpenEnvError as e:
                results[i] = {"ok": False, "error": error_body(e.code, str(e))}

        async def run(replica: ReplicaInfo, indices: list[int]) -> None:
            sub = [items[i] for i in indices]
            creates = sum(1 for item in sub if item.get("op") == "create")
            try:
                answer = await self.send(replica, {"op": "batch", "items": sub})
            except OpenEnvError as e:
                lost = [i for i in indices if e.code == EpisodeLost.code and items[i].get("op") == "create"]
                for i in indices:
                    results[i] = {"ok": False, "error": error_body(e.code, str(e))}
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
