"""OpenEnv 0.10's clients and validator against ``openenv-mcp serve``: thin adapters, no new semantics.

What OpenEnv's Python package sends, and how it is answered here (``docs/openenv.md`` has the table):

* ``/ws`` — ``GenericEnvClient`` (and every ``EnvClient``) sends ``{"type": "reset" | "step" |
  "state" | "close" | "mcp", "data": ...}`` one at a time and reads ``{"type": "observation" |
  "state" | "mcp" | "error", "data": ...}``. A message with ``type`` and no ``op`` is OpenEnv's
  (:class:`OpenEnvSocket`); the connection's OpenEnv episode is created on its first message and
  closed with the connection. ``/ws?session_id=S`` attaches to a session ``openenv/session/create`` made.
* ``POST /mcp`` — ``MCPToolClient`` posts bare JSON-RPC (no MCP session or protocol-version header):
  ``openenv/session/create``, ``tools/list`` / ``tools/call`` with ``params.session_id``,
  ``openenv/session/close``. :class:`OpenEnvMcp` answers those (as MCP results) and hands every other
  request, byte for byte, to the MCP face.
* ``POST /reset``, ``POST /step``, ``GET /state`` (simulation only) — OpenEnv's stateless HTTP forms:
  each request gets a fresh episode, closed before the answer. ``GET /metadata``, ``GET /schema``,
  ``GET /openapi.json`` (:mod:`openenv_mcp.serve.openapi`) describe the server.

Authorization is the control plane's: the edge (Host/Origin, token, size) runs first; an episode is
reached by the connection that made it, its trainer key (inside the ``session_id``), or the admin.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

from openenv_mcp.errors import BadRequest, EpisodeEnded, OpenEnvError
from openenv_mcp.isolation.boundaries.inprocess import error_result
from openenv_mcp.serve.manager import ADMIN_SCOPE_KEY, TRUSTED_SCOPE_KEY
from openenv_mcp.serve.mcp_http import EPISODE_SCOPE_KEY, UNKNOWN_EPISODE_CODE
from openenv_mcp.serve.mcp_server import EPISODE_ENDED_MESSAGE
from openenv_mcp.serve.peer import PeerJudge, refusal
from openenv_mcp.serve.statuses import http_status
from openenv_mcp.types import CallTool, ListTools, Observation, RunCode, action_from_json

if TYPE_CHECKING:
    from openenv_mcp.core.environment import Environment
    from openenv_mcp.core.episode import Episode
    from openenv_mcp.serve.control import Caller, ControlPlane

__all__ = [
    "OpenEnvMcp",
    "OpenEnvSocket",
    "is_openenv_message",
    "openenv_action",
    "openenv_observation",
    "openenv_routes",
    "session_id",
]

RESET_FIELDS = ("seed", "task_id", "max_steps", "call_timeout")
"""What ``reset`` data may carry (OpenEnv's ``episode_id`` is accepted and ignored: ids are the server's)."""

ERROR_CODES = {
    "bad_request": "VALIDATION_ERROR",
    "config_error": "VALIDATION_ERROR",
    "request_too_large": "VALIDATION_ERROR",
    "episode_limit": "CAPACITY_REACHED",
    "boundary_error": "FACTORY_ERROR",
    "unknown_episode": "SESSION_ERROR",
}
"""Our error codes -> OpenEnv's ``WSErrorCode`` (anything else: ``EXECUTION_ERROR``)."""

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


# -- shapes ------------------------------------------------------------------------------
def session_id(episode_id: str, trainer_key: str) -> str:
    """The ``session_id`` OpenEnv clients carry: the episode id and its trainer key (the capability)."""
    return f"{episode_id}.{trainer_key}"


def _parse_session(value: Any) -> tuple[str, str | None]:
    if not isinstance(value, str) or not value:
        raise BadRequest("'session_id' (the string openenv/session/create returned) is required")
    episode_id, dot, key = value.partition(".")
    return episode_id, (key if dot else None)


def openenv_observation(obs: Observation) -> dict[str, Any]:
    """OpenEnv's ``serialize_observation`` form: ``{"observation", "reward", "done", "metadata"}``.

    ``observation`` is our observation without ``reward``/``done`` (tools or the MCP result, task,
    truncated, info); OpenEnv has no ``truncated``, so its ``done`` is ``done or truncated``.
    """
    body = obs.to_json()
    body.pop("reward", None)
    body.pop("done", None)
    return {"observation": body, "reward": obs.reward, "done": obs.done or obs.truncated, "metadata": obs.info}


def openenv_action(data: Any) -> CallTool | ListTools | RunCode:
    """An action from OpenEnv's step data: ours, or OpenEnv's ``CallToolAction``/``ListToolsAction``
    dumps (``tool_name`` for ``name``, an ignored ``metadata``)."""
    if not isinstance(data, dict):
        raise BadRequest("step data must be an action object")
    data = {k: v for k, v in data.items() if k != "metadata"}
    if "tool_name" in data and "name" not in data:
        data["name"] = data.pop("tool_name")
    try:
        return action_from_json(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise BadRequest(
            f"invalid action{f' at {where!r}' if where else ''}: {first.get('msg')}; expected "
            '{"type": "call_tool", "tool_name": NAME, "arguments": {...}} (or "name") or '
            '{"type": "list_tools"}'
        ) from None


def _reset_message(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadRequest("reset data must be an object")
    unknown = sorted(k for k in data if k not in RESET_FIELDS and k != "episode_id")
    if unknown:
        raise BadRequest(
            f"unknown reset field(s) {', '.join(map(repr, unknown))}; accepted: "
            f"{', '.join(RESET_FIELDS)} (episode_id is ignored: episode ids are the server's)"
        )
    return {k: data[k] for k in RESET_FIELDS if k in data}


def _ws_error(err: OpenEnvError) -> str:
    return _dumps(
        {
            "type": "error",
            "data": {"message": str(err), "code": ERROR_CODES.get(err.code, "EXECUTION_ERROR"), "error": err.code},
        }
    )


def _rpc_result(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _rpc_error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


async def _call_tool(control: ControlPlane, episode: Episode, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if not isinstance(name, str) or not name:
        raise BadRequest("'name' (the tool's name) is required in params")
    if not isinstance(arguments, dict):
        raise BadRequest("'arguments' must be an object")
    try:
        obs = await control.act(episode, CallTool(name=name, arguments=arguments), "mcp")
        result = obs.result
    except EpisodeEnded:  # what an MCP client sees (no word about reset)
        result = error_result(EPISODE_ENDED_MESSAGE)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def _tools(episode: Episode) -> dict[str, Any]:
    return {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in episode.tools]}


def is_openenv_message(msg: Any) -> bool:
    """A WebSocket message with ``type`` and no ``op`` is OpenEnv's."""
    return isinstance(msg, dict) and "type" in msg and "op" not in msg


# -- /ws ---------------------------------------------------------------------------------
class OpenEnvSocket:
    """OpenEnv's messages on one ``/ws`` connection: one episode, driven one message at a time."""

    def __init__(self, control: ControlPlane, caller: Caller, scope: Scope) -> None:
        self.control = control
        self.caller = caller  # the connection (owner) and the admin flag
        self.lock = asyncio.Lock()
        self.episode_id: str | None = None
        self.key: str | None = None  # the trainer key of an attached session
        self.spoken = False  # the client has sent OpenEnv messages (answer its bad JSON OpenEnv's way)
        query = dict(_query(scope))
        self.attach = query.get("session_id")

    async def start(self, send: Send) -> bool:
        """Attach ``?session_id=``; on a bad one, say so and close the socket (``False``), as OpenEnv does."""
        if self.attach is None:
            return True
        self.spoken = True
        try:
            episode_id, key = _parse_session(self.attach)
            self.control.manager.authorize(episode_id, key=key, admin=self.caller.admin)
        except OpenEnvError as e:
            await send({"type": "websocket.send", "text": _ws_error(e)})
            await send({"type": "websocket.close", "code": 1008})
            return False
        self.episode_id, self.key = episode_id, key
        return True

    def bad_json(self, err: OpenEnvError) -> str | None:
        """The answer to an unparseable message once the client speaks OpenEnv (else ``None``)."""
        if not self.spoken:
            return None
        return _dumps({"type": "error", "data": {"message": str(err), "code": "INVALID_JSON", "error": err.code}})

    async def handle(self, msg: dict[str, Any]) -> tuple[str | None, bool]:
        """``(answer or None, close the socket)`` for one OpenEnv message; never raises an OpenEnvError."""
        self.spoken = True
        async with self.lock:
            try:
                return await self._handle(msg)
            except OpenEnvError as e:
                return _ws_error(e), False
            except Exception as e:  # a bug must not kill the connection; say what happened, OpenEnv's way
                return _dumps(
                    {
                        "type": "error",
                        "data": {
                            "message": f"{type(e).__name__}: {e}",
                            "code": "EXECUTION_ERROR",
                            "error": "internal_error",
                        },
                    }
                ), False

    async def _handle(self, msg: dict[str, Any]) -> tuple[str | None, bool]:
        kind = msg.get("type")
        data = msg.get("data", {})
        if kind == "reset":
            obs = (await self._reset(_reset_message(data))).first_observation()
            return _dumps({"type": "observation", "data": openenv_observation(obs)}), False
        if kind == "step":
            action = openenv_action(data)
            obs = await self.control.act(await self._episode(), action, "control")
            return _dumps({"type": "observation", "data": openenv_observation(obs)}), False
        if kind == "state":
            return _dumps({"type": "state", "data": (await self._episode()).state().model_dump(mode="json")}), False
        if kind == "close":  # OpenEnv ends the session and the connection
            return None, True
        if kind == "mcp":
            return _dumps({"type": "mcp", "data": await self._mcp(data)}), False
        raise BadRequest(
            f"unknown message type {kind!r}; OpenEnv messages are reset, step, state, close, mcp "
            "(messages with an 'op' are the openenv-mcp control plane's)"
        )

    async def _reset(self, msg: dict[str, Any]) -> Episode:
        manager = self.control.manager
        if self.episode_id is None or (self.key is None and self.episode_id not in manager):
            episode = await self.control.create_episode(msg, self.caller)
            self.episode_id = episode.id
            return episode
        self._authorize()
        return await self.control.reset_episode({**msg, "episode_id": self.episode_id}, self._caller())

    async def _episode(self) -> Episode:
        if self.episode_id is None:  # OpenEnv's session has an environment before any reset
            return await self._reset({})
        return self._authorize()

    def _caller(self) -> Caller:
        return self.caller.with_key({"episode_key": self.key})

    def _authorize(self) -> Episode:
        assert self.episode_id is not None
        return self.control.manager.authorize(
            self.episode_id, owner=self.caller.owner, key=self.key, admin=self.caller.admin
        )

    async def _mcp(self, request: Any) -> dict[str, Any]:
        rid = request.get("id") if isinstance(request, dict) else None
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return _rpc_error(rid, INVALID_REQUEST, "Invalid request: a JSON-RPC request object with a 'method'")
        params = request.get("params") or {}
        if not isinstance(params, dict):
            return _rpc_error(rid, INVALID_PARAMS, "Params must be an object")
        try:
            if request["method"] == "tools/list":
                return _rpc_result(rid, _tools(await self._episode()))
            if request["method"] == "tools/call":
                return _rpc_result(rid, await _call_tool(self.control, await self._episode(), params))
        except BadRequest as e:
            return _rpc_error(rid, INVALID_PARAMS, str(e))
        except OpenEnvError as e:
            return _rpc_error(rid, UNKNOWN_EPISODE_CODE, str(e), {"code": e.code})
        return _rpc_error(
            rid,
            METHOD_NOT_FOUND,
            f"Method not found: {request['method']} (a WebSocket 'mcp' message answers tools/list and tools/call)",
        )


def _query(scope: Scope) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)


# -- POST /mcp -----------------------------------------------------------------------------
class OpenEnvMcp:
    """In front of the MCP face on ``/mcp``: answers OpenEnv's bare JSON-RPC posts, passes the rest on.

    Only a POST without ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` headers is looked at (MCP
    clients send one of them on every request but ``initialize``), and only a JSON-RPC request whose
    method is ``openenv/session/...`` or a ``tools/list``/``tools/call`` with ``params.session_id``
    is OpenEnv's; every other request reaches the SDK's streamable-HTTP machinery unchanged.
    ``openenv/session/create`` makes a trainer's episode: it needs the trainer (the token, or a
    trusted local peer judged by ``peers``); anyone else on ``/mcp`` is refused.
    """

    def __init__(self, face: Any, control: ControlPlane, peers: PeerJudge | None = None) -> None:
        self.face = face
        self.control = control
        self.peers = peers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope.get(EPISODE_SCOPE_KEY) is not None
            or any(k in (b"mcp-session-id", b"mcp-protocol-version") for k, _ in scope["headers"])
        ):
            await self.face(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        request = _openenv_request(body)
        if request is None:
            await self.face(scope, _replay(body, receive), send)
            return
        admin = bool(scope.get(ADMIN_SCOPE_KEY))
        if request["method"] == "openenv/session/create" and not scope.get(TRUSTED_SCOPE_KEY):
            if self.peers is None or not await self.peers.trusted(scope):
                refused = refusal("openenv/session/create")
                answer = _rpc_error(request.get("id"), UNKNOWN_EPISODE_CODE, refused, {"code": "untrusted_peer"})
                await Response(_dumps(answer), status_code=403, media_type="application/json")(scope, receive, send)
                return
        answer = await self.rpc(request, admin)
        await Response(_dumps(answer), media_type="application/json")(scope, receive, send)

    async def rpc(self, request: dict[str, Any], admin: bool) -> dict[str, Any]:
        from openenv_mcp.serve.control import Caller

        manager = self.control.manager
        rid, method = request.get("id"), request["method"]
        params = request.get("params") or {}
        if not isinstance(params, dict):
            return _rpc_error(rid, INVALID_PARAMS, "Params must be an object")
        try:
            if method == "openenv/session/create":
                episode = await self.control.create_episode({}, Caller(None, None, admin))
                return _rpc_result(rid, {"session_id": session_id(episode.id, manager.keys(episode.id)[0])})
            episode_id, key = _parse_session(params.get("session_id"))
            if method == "openenv/session/close":
                episode = manager.authorize(episode_id, key=key, admin=admin)
                await manager.close(episode.id)
                return _rpc_result(rid, {"session_id": params["session_id"], "closed": True})
            episode = manager.agent_episode(episode_id, key, admin=admin)
            if method == "tools/list":
                return _rpc_result(rid, _tools(episode))
            if method == "tools/call":
                return _rpc_result(rid, await _call_tool(self.control, episode, params))
            return _rpc_error(
                rid,
                METHOD_NOT_FOUND,
                f"Method not found: {method} (OpenEnv's session methods are "
                "openenv/session/create and openenv/session/close)",
            )
        except BadRequest as e:
            return _rpc_error(rid, INVALID_PARAMS, str(e))
        except OpenEnvError as e:
            return _rpc_error(rid, UNKNOWN_EPISODE_CODE, str(e), {"code": e.code})


def _openenv_request(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC request in ``body`` if it is OpenEnv's (see :class:`OpenEnvMcp`), else ``None``."""
    try:
        msg = json.loads(body)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        return None
    method, params = msg["method"], msg.get("params")
    if method.startswith("openenv/session/"):
        return msg
    if method in ("tools/list", "tools/call") and isinstance(params, dict) and "session_id" in params:
        return msg
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


# -- HTTP: /reset /step /state (simulation), /metadata /schema /openapi.json ------------------
def openenv_routes(control: ControlPlane, environment: Environment, mode: str) -> list[BaseRoute]:
    """OpenEnv's HTTP routes onto the control plane (``/reset``, ``/step``, ``/state`` in simulation only)."""
    http = _OpenEnvHttp(control, environment, mode)
    routes: list[BaseRoute] = [
        Route("/metadata", http.metadata, methods=["GET"], name="openenv-metadata"),
        Route("/schema", http.schema, methods=["GET"], name="openenv-schema"),
        Route("/openapi.json", http.openapi, methods=["GET"], name="openapi"),
    ]
    if mode == "sim":
        routes += [
            Route("/reset", http.reset, methods=["POST"], name="openenv-reset"),
            Route("/step", http.step, methods=["POST"], name="openenv-step"),
            Route("/state", http.state, methods=["GET"], name="openenv-state"),
        ]
    return routes


class _OpenEnvHttp:
    """The endpoints of :func:`openenv_routes`; an error is answered ``{"error": {"code", "message"}}``
    with its HTTP status."""

    def __init__(self, control: ControlPlane, environment: Environment, mode: str) -> None:
        self.control, self.environment, self.mode = control, environment, mode

    async def metadata(self, request: Request) -> Response:
        from openenv_mcp.serve.openapi import metadata

        return JSONResponse(metadata(self.environment))

    async def schema(self, request: Request) -> Response:
        from openenv_mcp.serve.openapi import schemas

        return JSONResponse(schemas())

    async def openapi(self, request: Request) -> Response:
        from openenv_mcp.serve.openapi import openapi_document

        return JSONResponse(openapi_document(self.environment, self.mode, request.app.routes))

    async def reset(self, request: Request) -> Response:
        async def first(episode: Episode) -> Observation:
            return episode.first_observation()

        try:
            msg = _reset_message(await _json_body(request))
            return JSONResponse(openenv_observation(await self._one_shot(request, msg, first)))
        except OpenEnvError as e:
            return _http_error(e)

    async def step(self, request: Request) -> Response:
        try:
            action, create = _step_message(await _json_body(request))

            async def act(episode: Episode) -> Observation:
                return await self.control.act(episode, action, "control")

            return JSONResponse(openenv_observation(await self._one_shot(request, create, act)))
        except OpenEnvError as e:
            return _http_error(e)

    async def state(self, request: Request) -> Response:
        async def read(episode: Episode) -> Any:
            return episode.state().model_dump(mode="json")

        try:
            return JSONResponse(await self._one_shot(request, {}, read))
        except OpenEnvError as e:
            return _http_error(e)

    async def _one_shot(self, request: Request, create: dict[str, Any], use: Any) -> Any:
        """A fresh episode for this request only (OpenEnv's HTTP routes keep no session), closed before the answer."""
        from openenv_mcp.serve.control import Caller

        caller = Caller(None, None, bool(request.scope.get(ADMIN_SCOPE_KEY)))
        episode = await self.control.create_episode(create, caller)
        try:
            return await use(episode)
        finally:
            await self.control.manager.close(episode.id)


def _http_error(e: OpenEnvError) -> Response:
    return JSONResponse({"error": {"code": e.code, "message": str(e)}}, status_code=http_status(e))


async def _json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (an empty body is ``{}``)."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        msg = json.loads(raw)
    except ValueError as e:
        raise BadRequest(f"request body is not valid JSON: {e}") from None
    if not isinstance(msg, dict):
        raise BadRequest("request body must be a JSON object")
    return msg


def _step_message(msg: dict[str, Any]) -> tuple[CallTool | ListTools | RunCode, dict[str, Any]]:
    """A ``/step`` body's action and what its episode is created with (``timeout_s``: the call timeout)."""
    if "action" not in msg:
        raise BadRequest(
            "'action' (an object) is required, e.g. "
            '{"action": {"type": "call_tool", "tool_name": "echo", "arguments": {"text": "hi"}}}'
        )
    action = openenv_action(msg["action"])
    create = {"call_timeout": msg["timeout_s"]} if msg.get("timeout_s") is not None else {}
    return action, create
