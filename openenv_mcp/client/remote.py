"""Clients of a served environment's control plane (``openenv-mcp serve``), over one WebSocket.

    env = openenv_mcp.make("http://127.0.0.1:8000")        # same Env interface
    obs = env.reset(seed=7); env.step(CallTool(...)); env.state(); env.close()

    venv = VectorEnv("http://127.0.0.1:8000", num_envs=64) # many episodes, one connection
    observations = venv.reset(seeds=range(64))
    observations = venv.step([CallTool(...)] * 64)          # one batch message

:class:`RemoteAsyncEnv` has the methods of :class:`~openenv_mcp.client.env.AsyncEnv`
and raises the same named errors (the server's error ``code`` picks the
class). The connection opens on the first ``reset()`` and closes on
``close()``. Messages are multiplexed by request id, so concurrent calls on one
connection are fine. Wire forms: ``docs/protocol.md``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal, overload
from urllib.parse import urlsplit, urlunsplit

from openenv_mcp import errors as _errors
from openenv_mcp.client.env import Env, _coerce, _Portal
from openenv_mcp.client.schemes import Scheme
from openenv_mcp.errors import ConfigError, OpenEnvError, ResetNeeded
from openenv_mcp.types import CallTool, ListTools, Observation, RunCode, State

__all__ = ["SCHEME", "AsyncVectorEnv", "ControlConnection", "RemoteAsyncEnv", "VectorEnv", "ws_url"]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _error_classes() -> dict[str, type[OpenEnvError]]:
    out: dict[str, type[OpenEnvError]] = {}
    stack: list[type[OpenEnvError]] = [OpenEnvError]
    while stack:
        cls = stack.pop()
        out.setdefault(cls.code, cls)
        stack.extend(cls.__subclasses__())
    return out


def _raise(error: dict[str, Any]) -> OpenEnvError:
    code = str(error.get("code", "openenv_error"))
    cls = _error_classes().get(code, OpenEnvError)
    err = cls(str(error.get("message", code)))
    if cls is OpenEnvError:
        err.code = code
    return err


def ws_url(url: str) -> str:
    """``http://HOST:PORT`` (or ``ws://...``, with or without ``/ws``) -> ``ws://HOST:PORT/ws``."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ConfigError(f"not a server URL: {url!r}; expected http://HOST:PORT")
    path = parts.path.rstrip("/")
    if not path.endswith("/ws"):
        path = path + "/ws"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


class ControlConnection:
    """One WebSocket to a control plane; requests multiplexed by id."""

    def __init__(self, url: str, *, token: str | None = None, open_timeout: float = 10.0) -> None:
        self.url = ws_url(url)
        self.token = token
        self.open_timeout = open_timeout
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._closed_error: BaseException | None = None

    @property
    def connected(self) -> bool:
        return self._ws is not None

    async def connect(self) -> Any:
        """Open the WebSocket (the control-plane connection, returned)."""
        from websockets.asyncio.client import connect

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        try:
            self._ws = await connect(
                self.url,
                additional_headers=headers,
                max_size=None,
                compression=None,
                open_timeout=self.open_timeout,
                ping_interval=None,
            )
        except Exception as e:
            raise _errors.BoundaryError(
                f"cannot open the control plane at {self.url}: {e}. Is `openenv-mcp serve` running there "
                "(in sim mode), with the right --token and --allowed-host?"
            ) from None
        self._closed_error = None
        self._reader = asyncio.get_running_loop().create_task(self._read())
        return self._ws

    async def _read(self) -> None:
        ws = self._ws
        try:
            async for raw in ws:
                msg = json.loads(raw)
                future = self._pending.pop(msg.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(msg)
        except Exception as e:  # connection lost
            self._closed_error = e
        finally:
            err = _errors.BoundaryError(f"the control-plane connection to {self.url} closed")
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(err)
            self._pending.clear()

    async def request(self, msg: dict[str, Any]) -> Any:
        """Send one message; its ``result``, or the named error it answered with."""
        ws = self._ws if self._ws is not None else await self.connect()
        rid = next(self._ids)
        msg["id"] = rid
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            await ws.send(_dumps(msg))
        except Exception as e:
            self._pending.pop(rid, None)
            raise _errors.BoundaryError(f"the control-plane connection to {self.url} failed: {e}") from None
        reply = await future
        if reply.get("ok"):
            return reply["result"]
        raise _raise(reply.get("error") or {})

    async def close(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None


def _episode_options(max_steps: int | None, call_timeout: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if max_steps is not None:
        out["max_steps"] = max_steps
    if call_timeout is not None:
        out["call_timeout"] = call_timeout
    return out


def _check_options(mode: str | None, workdir: Any) -> None:
    if mode not in (None, "sim"):
        raise ConfigError(
            f"a remote environment is driven through the control plane, which exists only in sim "
            f"mode (got mode={mode!r}); connect an MCP client to /mcp for a prod server"
        )
    if workdir is not None:
        raise ConfigError("workdir is chosen by the server (OPENENV_MCP_WORKDIR where it runs), not by the client")


class RemoteAsyncEnv:
    """One remote environment, one episode at a time (async), over the WebSocket control plane.

    Args:
        url: the server, ``http://HOST:PORT``.
        token: the server's ``--token``, if any.
        max_steps: per-episode step budget override (``0`` for none).
        call_timeout: per-episode tool-call time limit override, seconds.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        max_steps: int | None = None,
        call_timeout: float | None = None,
        mode: str | None = None,
        workdir: Any = None,
    ) -> None:
        _check_options(mode, workdir)
        self.url = url
        self.connection = ControlConnection(url, token=token)
        self._options = _episode_options(max_steps, call_timeout)
        self._episode_id: str | None = None
        self.episode_key: str | None = None
        self._name: str | None = None
        self.mcp_url: str | None = None
        """The current episode's MCP address (hand it to any MCP client)."""
        self._owns_connection = True

    def _adopt(self, result: dict[str, Any]) -> None:
        self._episode_id = result["episode_id"]
        self.episode_key = result.get("episode_key")
        """The episode's trainer key (sent with every operation, see docs/protocol.md)."""
        self.mcp_url = result.get("mcp_url")
        self._name = result.get("env", self._name)

    @property
    def name(self) -> str:
        return self._name or self.url

    @property
    def episode_id(self) -> str:
        if self._episode_id is None:
            raise ResetNeeded("call reset() before step() or state(): no episode is running")
        return self._episode_id

    async def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        """Start a fresh episode on the server; returns the tools and the task."""
        msg: dict[str, Any] = {"seed": seed, "task_id": task_id, **self._options}
        if self._episode_id is None:
            msg["op"] = "create"
        else:
            msg["op"], msg["episode_id"], msg["episode_key"] = "reset", self._episode_id, self.episode_key
        result = await self.connection.request(msg)
        self._adopt(result)
        return Observation.model_validate(result["observation"])

    async def fork(self, n: int = 1, strategy: str | None = None) -> list[RemoteAsyncEnv]:
        """``n`` envs on new episodes equal to the current one (op ``fork``, docs/fork.md). They share
        this env's connection (and close with it: the server closes a connection's episodes)."""
        result = await self.connection.request(
            {"op": "fork", "episode_id": self.episode_id, "episode_key": self.episode_key, "n": n, "strategy": strategy}
        )
        forks = []
        for created in result["forks"]:
            forked = RemoteAsyncEnv.__new__(RemoteAsyncEnv)
            forked.__dict__.update(self.__dict__)
            forked._owns_connection = False
            forked._adopt(created)
            forks.append(forked)
        return forks

    async def step(self, action: CallTool | ListTools | RunCode | dict[str, Any]) -> Observation:
        """Take one action; agent errors come back as ``result.isError``."""
        action = _coerce(action)
        result = await self.connection.request(
            {
                "op": "step",
                "episode_id": self.episode_id,
                "episode_key": self.episode_key,
                "action": action.model_dump(mode="json"),
            }
        )
        return Observation.model_validate(result["observation"])

    async def state(self) -> State:
        """Episode id, step count, task id, seed and cumulative reward."""
        result = await self.connection.request(
            {"op": "state", "episode_id": self.episode_id, "episode_key": self.episode_key}
        )
        return State.model_validate(result["state"])

    async def close(self) -> None:
        """End the episode on the server and close the connection (idempotent)."""
        episode_id, self._episode_id = self._episode_id, None
        try:
            if episode_id is not None and self.connection.connected:
                try:
                    await self.connection.request(
                        {"op": "close", "episode_id": episode_id, "episode_key": self.episode_key}
                    )
                except OpenEnvError:
                    pass
        finally:
            if self._owns_connection:
                await self.connection.close()

    async def __aenter__(self) -> RemoteAsyncEnv:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncVectorEnv:
    """``num_envs`` episodes of one remote environment, stepped together over one connection.

    Each of :meth:`reset`, :meth:`step` and :meth:`state` is one ``batch``
    message answered by one message. A failed item raises its named error
    (with the item's index), unless ``return_exceptions=True`` puts the error
    in its place.
    """

    def __init__(
        self,
        url: str,
        num_envs: int,
        *,
        token: str | None = None,
        max_steps: int | None = None,
        call_timeout: float | None = None,
        mode: str | None = None,
        workdir: Any = None,
    ) -> None:
        if num_envs < 1:
            raise ConfigError("num_envs must be at least 1")
        _check_options(mode, workdir)
        self.url = url
        self.num_envs = num_envs
        self.connection = ControlConnection(url, token=token)
        self._options = _episode_options(max_steps, call_timeout)
        self.episode_ids: list[str] | None = None
        self.episode_keys: dict[str, str | None] = {}
        """Each episode's trainer key, by id (sent with every operation)."""
        self.mcp_urls: list[str] = []
        self._owns_connection = True

    async def _batch(self, items: list[dict[str, Any]], return_exceptions: bool) -> list[Any]:
        result = await self.connection.request({"op": "batch", "items": items})
        out: list[Any] = []
        for i, item in enumerate(result["results"]):
            if item.get("ok"):
                out.append(item["result"])
                continue
            err = _raise(item.get("error") or {})
            if not return_exceptions:
                raise type(err)(f"episode {i}: {err}")
            out.append(err)
        return out

    def _ids(self) -> list[str]:
        if self.episode_ids is None:
            raise ResetNeeded("call reset() before step() or state(): no episode is running")
        return self.episode_ids

    @overload
    async def reset(
        self,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        *,
        return_exceptions: Literal[False] = False,
    ) -> list[Observation]: ...
    @overload
    async def reset(
        self,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        *,
        return_exceptions: bool,
    ) -> list[Observation | Exception]: ...

    async def reset(
        self,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        *,
        return_exceptions: bool = False,
    ) -> list[Observation] | list[Observation | Exception]:
        """Reset every episode (creating them the first time); one seed / task id per episode."""
        seeds_l = list(seeds) if seeds is not None else [None] * self.num_envs
        tasks_l = list(task_ids) if task_ids is not None else [None] * self.num_envs
        if len(seeds_l) != self.num_envs or len(tasks_l) != self.num_envs:
            raise ConfigError(f"give one seed and one task id per episode ({self.num_envs})")
        items = []
        for i in range(self.num_envs):
            item = {"seed": seeds_l[i], "task_id": tasks_l[i], **self._options}
            if self.episode_ids is None:
                item["op"] = "create"
            else:
                item["op"], item["episode_id"] = "reset", self.episode_ids[i]
                item["episode_key"] = self.episode_keys.get(self.episode_ids[i])
            items.append(item)
        results = await self._batch(items, return_exceptions)
        if self.episode_ids is None:
            if any(isinstance(r, Exception) for r in results):  # do not keep half a vector
                ids = [r["episode_id"] for r in results if not isinstance(r, Exception)]
                await self._batch([{"op": "close", "episode_id": e} for e in ids], True)
                raise next(r for r in results if isinstance(r, Exception))
            self.episode_ids = [r["episode_id"] for r in results]
        self.episode_keys = {r["episode_id"]: r.get("episode_key") for r in results if not isinstance(r, Exception)}
        self.mcp_urls = [r.get("mcp_url", "") if not isinstance(r, Exception) else "" for r in results]
        return [r if isinstance(r, Exception) else Observation.model_validate(r["observation"]) for r in results]

    @overload
    async def step(
        self,
        actions: Sequence[CallTool | ListTools | RunCode | dict[str, Any]],
        *,
        return_exceptions: Literal[False] = False,
    ) -> list[Observation]: ...
    @overload
    async def step(
        self, actions: Sequence[CallTool | ListTools | RunCode | dict[str, Any]], *, return_exceptions: bool
    ) -> list[Observation | Exception]: ...

    async def step(
        self, actions: Sequence[CallTool | ListTools | RunCode | dict[str, Any]], *, return_exceptions: bool = False
    ) -> list[Observation] | list[Observation | Exception]:
        """One action per episode, all in one batch message."""
        ids = self._ids()
        if len(actions) != len(ids):
            raise ConfigError(f"give one action per episode ({len(ids)}), got {len(actions)}")
        items = [
            {"episode_id": e, "episode_key": self.episode_keys.get(e), "action": _coerce(a).model_dump(mode="json")}
            for e, a in zip(ids, actions, strict=True)
        ]
        results = await self._batch(items, return_exceptions)
        return [r if isinstance(r, Exception) else Observation.model_validate(r["observation"]) for r in results]

    @overload
    async def state(self, *, return_exceptions: Literal[False] = False) -> list[State]: ...
    @overload
    async def state(self, *, return_exceptions: bool) -> list[State | Exception]: ...

    async def state(self, *, return_exceptions: bool = False) -> list[State] | list[State | Exception]:
        results = await self._batch(
            [{"op": "state", "episode_id": e, "episode_key": self.episode_keys.get(e)} for e in self._ids()],
            return_exceptions,
        )
        return [r if isinstance(r, Exception) else State.model_validate(r["state"]) for r in results]

    async def fork(self, n: int = 1, strategy: str | None = None) -> AsyncVectorEnv:
        """Fork every episode ``n`` times in one batch message (docs/fork.md): a vector of
        ``num_envs * n`` episodes, episode ``i``'s forks at ``i * n ... i * n + n - 1``, on this
        vector's connection (closed with it). A failed fork closes the others and raises."""
        ids = self._ids()
        items = [
            {"op": "fork", "episode_id": e, "episode_key": self.episode_keys.get(e), "n": n, "strategy": strategy}
            for e in ids
        ]
        results = await self._batch(items, True)
        made = [c for r in results if not isinstance(r, Exception) for c in r["forks"]]
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:  # do not keep half a vector
            await self._batch(
                [{"op": "close", "episode_id": c["episode_id"], "episode_key": c.get("episode_key")} for c in made],
                True,
            )
            raise failed[0]
        forked = AsyncVectorEnv.__new__(AsyncVectorEnv)
        forked.__dict__.update(self.__dict__)
        forked.num_envs = len(made)
        forked.episode_ids = [c["episode_id"] for c in made]
        forked.episode_keys = {c["episode_id"]: c.get("episode_key") for c in made}
        forked.mcp_urls = [c.get("mcp_url", "") for c in made]
        forked._owns_connection = False
        return forked

    async def close(self) -> None:
        """Close every episode and the connection (idempotent)."""
        ids, self.episode_ids = self.episode_ids, None
        try:
            if ids and self.connection.connected:
                await self._batch(
                    [{"op": "close", "episode_id": e, "episode_key": self.episode_keys.get(e)} for e in ids], True
                )
        finally:
            if self._owns_connection:
                await self.connection.close()

    async def __aenter__(self) -> AsyncVectorEnv:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class VectorEnv:
    """The sync twin of :class:`AsyncVectorEnv`."""

    def __init__(self, url: str, num_envs: int, **options: Any) -> None:
        self._async = AsyncVectorEnv(url, num_envs, **options)
        self._portal = _Portal.get()

    @property
    def num_envs(self) -> int:
        return self._async.num_envs

    @property
    def unwrapped(self) -> AsyncVectorEnv:
        return self._async

    @overload
    def reset(
        self,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        *,
        return_exceptions: Literal[False] = False,
    ) -> list[Observation]: ...
    @overload
    def reset(
        self,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        *,
        return_exceptions: bool,
    ) -> list[Observation | Exception]: ...

    def reset(
        self,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        *,
        return_exceptions: bool = False,
    ) -> list[Observation] | list[Observation | Exception]:
        seeds = list(seeds) if seeds is not None else None
        task_ids = list(task_ids) if task_ids is not None else None
        return self._portal.call(lambda: self._async.reset(seeds, task_ids, return_exceptions=return_exceptions))

    @overload
    def step(
        self,
        actions: Sequence[CallTool | ListTools | RunCode | dict[str, Any]],
        *,
        return_exceptions: Literal[False] = False,
    ) -> list[Observation]: ...
    @overload
    def step(
        self, actions: Sequence[CallTool | ListTools | RunCode | dict[str, Any]], *, return_exceptions: bool
    ) -> list[Observation | Exception]: ...

    def step(
        self, actions: Sequence[CallTool | ListTools | RunCode | dict[str, Any]], *, return_exceptions: bool = False
    ) -> list[Observation] | list[Observation | Exception]:
        return self._portal.call(lambda: self._async.step(actions, return_exceptions=return_exceptions))

    @overload
    def state(self, *, return_exceptions: Literal[False] = False) -> list[State]: ...
    @overload
    def state(self, *, return_exceptions: bool) -> list[State | Exception]: ...

    def state(self, *, return_exceptions: bool = False) -> list[State] | list[State | Exception]:
        return self._portal.call(lambda: self._async.state(return_exceptions=return_exceptions))

    def fork(self, n: int = 1, strategy: str | None = None) -> VectorEnv:
        """The sync twin of :meth:`AsyncVectorEnv.fork`."""
        forked = VectorEnv.__new__(VectorEnv)
        forked._async = self._portal.call(lambda: self._async.fork(n, strategy))
        forked._portal = self._portal
        return forked

    def close(self) -> None:
        self._portal.call(self._async.close)

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def make_remote(url: str, **options: Any) -> Env:
    """``make("http://...")``: the sync :class:`Env` over a :class:`RemoteAsyncEnv`."""
    return Env(RemoteAsyncEnv(url, **options))


SCHEME = Scheme(connect=RemoteAsyncEnv)
"""``make("http(s)://HOST:PORT")`` / ``ws(s)://``: a served environment (registered in ``openenv_mcp.schemes``)."""
