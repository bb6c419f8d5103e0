"""The control plane (simulation mode only): episodes for trainers, over WebSocket and HTTP.

``/ws`` carries JSON messages with request ids; one connection drives many
episodes, and a ``batch`` message runs many operations (usually steps of many
episodes) in one message, answered in one message. The HTTP routes are the
same operations one request at a time. The wire forms are documented with
examples in ``docs/protocol.md``.

Every operation goes through :class:`ControlPlane`, which reaches episodes via
the :class:`~openenv_mcp.serve.manager.EpisodeManager` and steps them with
:meth:`Episode.act` (the one dispatch path the MCP face uses too). Errors are
:class:`~openenv_mcp.errors.OpenEnvError` subclasses raised deep and translated
here, once: their ``code`` on the wire, their HTTP status from :mod:`openenv_mcp.serve.statuses`.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import Receive, Scope, Send

from openenv_mcp.core.codeact import RUN_CODE
from openenv_mcp.errors import BadRequest, EpisodeEnded, OpenEnvError, RequestTooLarge, UnknownEpisode
from openenv_mcp.serve.manager import ADMIN_SCOPE_KEY, EPISODE_KEY_HEADER
from openenv_mcp.serve.openenv_compat import OpenEnvSocket, is_openenv_message
from openenv_mcp.serve.statuses import http_status
from openenv_mcp.types import CallTool, ListTools, RunCode, action_from_json

if TYPE_CHECKING:
    from openenv_mcp.core.episode import Episode
    from openenv_mcp.serve.manager import EpisodeManager
    from openenv_mcp.serve.metrics import Metrics

__all__ = ["ADMIN_SCOPE_KEY", "EPISODE_KEY_HEADER", "OPS", "Caller", "ControlPlane", "error_body"]


@dataclass(frozen=True)
class Caller:
    """Who sends an operation: a WebSocket connection (``owner``), an episode key, the admin."""

    owner: str | None = None
    key: str | None = None
    admin: bool = False

    def with_key(self, msg: dict[str, Any]) -> Caller:
        key = msg.get("episode_key")
        if key is None:
            return self
        if not isinstance(key, str):
            raise BadRequest(f"'episode_key' must be a string, got {key!r}")
        return Caller(self.owner, key, self.admin)


OPS = ("create", "reset", "step", "state", "close", "fork", "batch", "list")
"""The operations of the control plane (the ``op`` of a WebSocket message)."""

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def error_body(err: OpenEnvError) -> dict[str, str]:
    """The wire form of an error: ``{"code": ..., "message": ...}``."""
    return {"code": err.code, "message": str(err)}


def _int_or_none(msg: dict[str, Any], key: str) -> int | None:
    value = msg.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{key!r} must be an integer or null, got {value!r}")
    return value


def _str_or_none(msg: dict[str, Any], key: str) -> str | None:
    value = msg.get(key)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{key!r} must be a string or null, got {value!r}")
    return value


def _overrides(msg: dict[str, Any]) -> dict[str, Any]:
    """Per-episode ``max_steps`` / ``call_timeout`` of a create or reset message."""
    out: dict[str, Any] = {}
    max_steps = _int_or_none(msg, "max_steps")
    if max_steps is not None:
        out["max_steps"] = max_steps
    timeout = msg.get("call_timeout")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise BadRequest(f"'call_timeout' must be a number of seconds or null, got {timeout!r}")
        out["call_timeout"] = float(timeout)
    return out


def _episode_id(msg: dict[str, Any]) -> str:
    value = msg.get("episode_id")
    if not isinstance(value, str) or not value:
        raise BadRequest("'episode_id' (a string) is required: the id 'create' returned")
    return value


def _action(msg: dict[str, Any]) -> CallTool | ListTools | RunCode:
    action = msg.get("action")
    if not isinstance(action, dict):
        raise BadRequest(
            '\'action\' (an object) is required, e.g. {"type": "call_tool", "name": "echo", '
            '"arguments": {"text": "hi"}}, {"type": "run_code", "code": "..."} or {"type": "list_tools"}'
        )
    try:
        return action_from_json(action)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise BadRequest(f"invalid action{f' at {where!r}' if where else ''}: {first.get('msg')}") from None


class _AsgiEndpoint:
    """Wraps a raw ASGI callable so Starlette's router passes scope, receive, send through."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class ControlPlane:
    """The control plane's operations, shared by the WebSocket and the HTTP routes."""

    def __init__(self, manager: EpisodeManager, metrics: Metrics, *, max_request_bytes: int | None = None) -> None:
        self.manager = manager
        self.metrics = metrics
        self.max_request_bytes = max_request_bytes

    # -- operations (each returns the JSON text of its result) ---------------------
    def _created(self, episode: Episode, base: str) -> str:
        obs = episode.first_observation().model_dump_json(by_alias=True, exclude_none=True)
        trainer_key, agent_key = self.manager.keys(episode.id)
        path = f"/episodes/{episode.id}/{agent_key}/mcp"
        return (
            f'{{"episode_id":{_dumps(episode.id)},"episode_key":{_dumps(trainer_key)},'
            f'"env":{_dumps(episode.env.name)},"mcp_path":{_dumps(path)},'
            f'"mcp_url":{_dumps(base + path)},"observation":{obs}}}'
        )

    def _episode(self, msg: dict[str, Any], caller: Caller) -> Episode:
        return self.manager.authorize(_episode_id(msg), owner=caller.owner, key=caller.key, admin=caller.admin)

    async def create(self, msg: dict[str, Any], caller: Caller, base: str) -> str:
        return self._created(await self.create_episode(msg, caller), base)

    async def create_episode(self, msg: dict[str, Any], caller: Caller) -> Episode:
        return await self.manager.create(
            _int_or_none(msg, "seed"), _str_or_none(msg, "task_id"), owner=caller.owner, **_overrides(msg)
        )

    async def reset(self, msg: dict[str, Any], caller: Caller, base: str) -> str:
        return self._created(await self.reset_episode(msg, caller), base)

    async def reset_episode(self, msg: dict[str, Any], caller: Caller) -> Episode:
        episode = self._episode(msg, caller)
        return await self.manager.reset(
            episode.id, _int_or_none(msg, "seed"), _str_or_none(msg, "task_id"), **_overrides(msg)
        )

    async def fork(self, msg: dict[str, Any], caller: Caller, base: str) -> str:
        """``n`` (default 1) forks of the episode, each answered like a create (its id, keys, MCP address;
        the observation is the original's at the fork, with the fork's state)."""
        episode = self._episode(msg, caller)
        n = _int_or_none(msg, "n")
        strategy = _str_or_none(msg, "strategy")
        forks = await self.manager.fork(episode.id, 1 if n is None else n, strategy)
        return f'{{"forks":[{",".join(self._created(f, base) for f in forks)}]}}'

    async def step(self, msg: dict[str, Any], caller: Caller) -> str:
        episode = self._episode(msg, caller)
        action = _action(msg)
        obs = await self.act(episode, action, "control")
        return f'{{"observation":{obs.model_dump_json(by_alias=True, exclude_none=True)}}}'

    async def act(self, episode: Episode, action: CallTool | ListTools | RunCode, face: str) -> Any:
        """``episode.act(action)``, counted in the metrics (a run as ``run_code``, and each of its calls)."""
        if isinstance(action, ListTools):
            return await episode.act(action)
        label = RUN_CODE if isinstance(action, RunCode) else episode.tool_label(action.name)
        started = time.perf_counter()
        try:
            obs = await episode.act(action)
        except EpisodeEnded:
            self.metrics.tool_call(label, "failed", time.perf_counter() - started, face)
            raise
        assert obs.result is not None  # a CallTool / RunCode step's observation always carries its result
        self.metrics.tool_call(label, "error" if obs.result.is_error else "ok", time.perf_counter() - started, face)
        if isinstance(action, RunCode):
            for call in obs.result.structured_content["calls"]:
                self.metrics.tool_call(
                    episode.tool_label(call["name"]),
                    "error" if call["result"].get("isError") else "ok",
                    call.get("elapsed_ms", 0.0) / 1000,
                    face,
                )
        return obs

    def state(self, msg: dict[str, Any], caller: Caller) -> str:
        return f'{{"state":{self._episode(msg, caller).state().model_dump_json()}}}'

    async def close(self, msg: dict[str, Any], caller: Caller) -> str:
        try:
            episode = self._episode(msg, caller)
        except UnknownEpisode:  # not live, or not the caller's: the same answer (no oracle)
            return '{"closed":false}'
        closed = await self.manager.close(episode.id)
        return '{"closed":true}' if closed else '{"closed":false}'

    def list(self, caller: Caller) -> str:
        return f'{{"episodes":{_dumps(self.manager.visible(owner=caller.owner, key=caller.key, admin=caller.admin))}}}'

    async def run(self, msg: Any, caller: Caller, base: str, *, nested: bool = False) -> str:
        """One operation (``msg["op"]``) for ``caller``; raises :class:`OpenEnvError` for the edge to translate."""
        if not isinstance(msg, dict):
            raise BadRequest("a message must be a JSON object with an 'op'")
        caller = caller.with_key(msg)
        op = msg.get("op", "step" if nested else None)
        if op == "step":
            return await self.step(msg, caller)
        if op == "state":
            return self.state(msg, caller)
        if op == "create":
            return await self.create(msg, caller, base)
        if op == "reset":
            return await self.reset(msg, caller, base)
        if op == "close":
            return await self.close(msg, caller)
        if op == "fork":
            return await self.fork(msg, caller, base)
        if op == "list":
            return self.list(caller)
        if op == "batch" and not nested:
            return await self.batch(msg, caller, base)
        if op == "batch":
            raise BadRequest("a batch cannot contain another batch")
        raise BadRequest(f"unknown op {op!r}; expected one of: {', '.join(OPS)}")

    async def batch(self, msg: dict[str, Any], caller: Caller, base: str) -> str:
        """Run ``items`` (operations, ``op`` defaults to ``step``): different episodes
        concurrently, items of one episode in their order. One result per item."""
        items = msg.get("items")
        if not isinstance(items, list):
            raise BadRequest('\'items\' (a list of operations, e.g. [{"episode_id": ..., "action": ...}]) is required')
        results: list[str] = [""] * len(items)
        groups: dict[Any, list[int]] = {}
        for i, item in enumerate(items):
            key = item.get("episode_id") if isinstance(item, dict) and item.get("episode_id") else ("#", i)
            groups.setdefault(key, []).append(i)

        async def run_group(indices: list[int]) -> None:
            for i in indices:
                try:
                    results[i] = f'{{"ok":true,"result":{await self.run(items[i], caller, base, nested=True)}}}'
                except OpenEnvError as e:
                    results[i] = f'{{"ok":false,"error":{_dumps(error_body(e))}}}'

        if len(groups) == 1:
            await run_group(next(iter(groups.values())))
        else:
            async with anyio.create_task_group() as tg:
                for indices in groups.values():
                    tg.start_soon(run_group, indices)
        return f'{{"results":[{",".join(results)}]}}'

    # -- WebSocket ---------------------------------------------------------------
    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one WebSocket connection (raw ASGI); its episodes are closed when it goes away.

        Each message runs as its own task (different episodes proceed concurrently);
        messages naming the same episode run in the order they arrived.
        """
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        owner = f"ws:{uuid.uuid4().hex}"
        caller = Caller(owner, None, bool(scope.get(ADMIN_SCOPE_KEY)))
        openenv = OpenEnvSocket(self, caller, scope)  # OpenEnv's {"type": ...} messages on this connection
        if not await openenv.start(send):
            return
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "localhost")
        base = f"{'https' if scope.get('scheme') == 'wss' else 'http'}://{host}"
        conn = _WsConnection(caller, base, openenv, send, self.max_request_bytes)
        tasks: set[asyncio.Task[None]] = set()
        loop = asyncio.get_running_loop()
        try:
            while True:
                message = await receive()
                kind = message["type"]
                if kind == "websocket.receive":
                    raw = message.get("text")
                    if raw is None:
                        raw = (message.get("bytes") or b"").decode("utf-8", errors="replace")
                    task = loop.create_task(self._ws_handle(conn, raw))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif kind == "websocket.disconnect":
                    break
        finally:
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            with anyio.CancelScope(shield=True):
                await self.manager.close_owner(owner, "disconnect")

    async def _ws_handle(self, conn: _WsConnection, raw: str) -> None:
        """Answer one WebSocket message: an OpenEnv one in OpenEnv's protocol, else ``{"id", "ok", ...}``."""
        rid: Any = None
        parsed = False
        try:
            msg = conn.parse(raw)
            parsed = True
            if is_openenv_message(msg):
                answer, close = await conn.openenv.handle(msg)
                if answer is not None:
                    await conn.send({"type": "websocket.send", "text": answer})
                if close:
                    await conn.send({"type": "websocket.close", "code": 1000})
                return
            if isinstance(msg, dict):
                rid = msg.get("id")
            out = f'{{"id":{_dumps(rid)},"ok":true,"result":{await self._ws_run(conn, msg)}}}'
        except OpenEnvError as e:
            out = None if parsed else conn.openenv.bad_json(e)  # unreadable: answer in the client's protocol
            out = out or f'{{"id":{_dumps(rid)},"ok":false,"error":{_dumps(error_body(e))}}}'
        except Exception as e:  # a bug must not kill the connection; say what happened
            out = (
                f'{{"id":{_dumps(rid)},"ok":false,"error":'
                f"{_dumps({'code': 'internal_error', 'message': f'{type(e).__name__}: {e}'})}}}"
            )
        try:
            await conn.send({"type": "websocket.send", "text": out})
        except Exception:  # the client went away; its episodes are closed when it disconnects
            pass

    async def _ws_run(self, conn: _WsConnection, msg: Any) -> str:
        """Run one operation; those naming an episode (batches aside) in the order they arrived."""
        key = msg.get("episode_id") if isinstance(msg, dict) else None
        if not isinstance(key, str) or msg.get("op") == "batch":
            return await self.run(msg, conn.caller, conn.base)
        lock = conn.locks.get(key)
        if lock is None:
            lock = conn.locks[key] = asyncio.Lock()
        async with lock:
            text = await self.run(msg, conn.caller, conn.base)
        if msg.get("op") == "close" and not lock.locked():
            conn.locks.pop(key, None)
        return text

    # -- HTTP ----------------------------------------------------------------------
    async def _http(self, request: Request, op: str, with_body: bool = True, status: int = 200) -> Response:
        try:
            msg: dict[str, Any] = {}
            if with_body:
                body = await request.body()
                if body.strip():
                    try:
                        msg = json.loads(body)
                    except ValueError as e:
                        raise BadRequest(f"request body is not valid JSON: {e}") from None
                    if not isinstance(msg, dict):
                        raise BadRequest("request body must be a JSON object")
            msg["op"] = op
            if "episode_id" in request.path_params:
                msg["episode_id"] = request.path_params["episode_id"]
            base = f"{request.url.scheme}://{request.url.netloc}"
            caller = Caller(None, request.headers.get(EPISODE_KEY_HEADER), bool(request.scope.get(ADMIN_SCOPE_KEY)))
            if op == "create":
                text = await self._create_while_connected(request, msg, caller.with_key(msg), base)
                if text is None:  # the client is gone: nobody will read the answer
                    return Response(status_code=499)
            else:
                text = await self.run(msg, caller, base)
            return Response(text, status_code=status, media_type="application/json")
        except OpenEnvError as e:
            return Response(_dumps({"error": error_body(e)}), status_code=http_status(e), media_type="application/json")

    async def _create_while_connected(
        self, request: Request, msg: dict[str, Any], caller: Caller, base: str
    ) -> str | None:
        """An HTTP create that is abandoned (and its episode closed) when the client disconnects
        before the answer: no ownerless episode outlives a client that timed out."""
        episode: Episode | None = None
        error: OpenEnvError | None = None
        gone = False
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal gone
                while (await request.receive())["type"] != "http.disconnect":
                    pass
                gone = True
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            try:
                episode = await self.create_episode(msg, caller)
            except OpenEnvError as e:
                error = e
            tg.cancel_scope.cancel()
        if gone or await request.is_disconnected():
            if episode is not None:
                await self.manager.close(episode.id, "abandoned")
            return None
        if error is not None:
            raise error
        assert episode is not None
        return self._created(episode, base)

    def routes(self) -> list[BaseRoute]:
        """``/ws`` and the HTTP equivalents."""

        async def create(request: Request) -> Response:
            return await self._http(request, "create", status=201)

        async def list_(request: Request) -> Response:
            return await self._http(request, "list", with_body=False)

        async def reset(request: Request) -> Response:
            return await self._http(request, "reset")

        async def step(request: Request) -> Response:
            return await self._http(request, "step")

        async def fork(request: Request) -> Response:
            return await self._http(request, "fork", status=201)

        async def state(request: Request) -> Response:
            return await self._http(request, "state", with_body=False)

        async def close(request: Request) -> Response:
            return await self._http(request, "close", with_body=False)

        return [
            WebSocketRoute("/ws", _AsgiEndpoint(self.websocket), name="control-ws"),
            Route("/episodes", create, methods=["POST"], name="control-create"),
            Route("/episodes", list_, methods=["GET"], name="control-list"),
            Route("/episodes/{episode_id}/reset", reset, methods=["POST"], name="control-reset"),
            Route("/episodes/{episode_id}/step", step, methods=["POST"], name="control-step"),
            Route("/episodes/{episode_id}/fork", fork, methods=["POST"], name="control-fork"),
            Route("/episodes/{episode_id}/state", state, methods=["GET"], name="control-state"),
            Route("/episodes/{episode_id}", close, methods=["DELETE"], name="control-close"),
        ]


@dataclass
class _WsConnection:
    """One WebSocket connection: who it is, its base URL, its OpenEnv side, its ``send``, the message
    size limit, and a lock per episode its messages name."""

    caller: Caller
    base: str
    openenv: OpenEnvSocket
    send: Send
    limit: int | None
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def parse(self, raw: str) -> Any:
        if self.limit is not None and len(raw) > self.limit:
            raise RequestTooLarge(
                f"message of {len(raw)} bytes exceeds the limit of {self.limit} bytes (--max-request-bytes)"
            )
        try:
            return json.loads(raw)
        except ValueError as e:
            raise BadRequest(f"message is not valid JSON: {e}") from None
