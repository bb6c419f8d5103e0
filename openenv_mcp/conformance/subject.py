"""What the conformance rules check: a *subject* and its faces.

A subject is one of:

* :class:`LocalSubject` — an openenv-mcp environment loaded in this process
  (a name, an env file or folder, an :class:`EnvSpec` or :class:`Environment`).
  Every rule applies: the MCP face is the official SDK client over the
  in-memory transport bound to a fresh episode, episodes are driven through
  :meth:`Episode.act`, and the real HTTP ``/mcp`` is served in-process on a
  free port when the serving module is installed.
* :class:`ServerSubject` — a plain MCP server object (``mcp.server.Server`` or
  a FastMCP server). Only the MCP rules apply; it is served over HTTP
  in-process for the wire rules.
* :class:`UrlSubject` — a running MCP server at a URL (``.../mcp``, or the
  base URL of ``openenv-mcp serve``). The MCP and wire rules apply, and the
  episode rules too when the server has an openenv-mcp control plane: episodes
  are driven over its HTTP routes and each one's MCP face is its own address
  ``/episodes/{id}/mcp`` (parity over the real wire).
"""

from __future__ import annotations

import abc
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp.client.client import Client
from mcp.server import Server

from openenv_mcp.asgi import serving
from openenv_mcp.core.environment import Environment
from openenv_mcp.errors import ConfigError, TaskNeeded
from openenv_mcp.sdkcompat import lowlevel_server, mcp_http_client
from openenv_mcp.serve.mcp_server import episode_server
from openenv_mcp.types import CallTool, ListTools, Observation, State, Task

__all__ = [
    "CallTally",
    "EpisodeHandle",
    "LocalSubject",
    "ServerSubject",
    "Subject",
    "UrlSubject",
    "make_subject",
]


class CallTally:
    """Tool calls an episode rule made through :meth:`EpisodeHandle.step`: per tool, how many
    succeeded and how many failed, and each tool's first failure (the call and its error text)."""

    def __init__(self) -> None:
        self.ok: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self.first_failure: dict[str, str] = {}

    def reset(self) -> None:
        self.__init__()

    @property
    def calls(self) -> int:
        return sum(self.ok.values()) + sum(self.failed.values())

    def untested(self) -> list[str]:
        """Tools called whose every call failed (sorted)."""
        return sorted(name for name in self.failed if not self.ok.get(name))

    def called(self) -> list[str]:
        return sorted(set(self.ok) | set(self.failed))

    def record(self, action: CallTool | ListTools, obs: Observation) -> None:
        if not isinstance(action, CallTool) or obs.result is None:
            return
        text = " ".join(getattr(c, "text", f"<{c.type}>") for c in obs.result.content)
        self.record_outcome(action, bool(obs.result.is_error), text)

    def record_outcome(self, action: CallTool, is_error: bool, text: str) -> None:
        """Count one call of ``action.name``: its outcome, and its error ``text`` if it is the first."""
        if not is_error:
            self.ok[action.name] = self.ok.get(action.name, 0) + 1
            return
        self.failed[action.name] = self.failed.get(action.name, 0) + 1
        if action.name not in self.first_failure:
            args = json.dumps(action.arguments, ensure_ascii=False)
            self.first_failure[action.name] = (
                f"tools/call {action.name!r} {args[:80] + ('…' if len(args) > 80 else '')} "
                f"answered {text[:120] + ('…' if len(text) > 120 else '')!r}"
            )


class EpisodeHandle:
    """One episode, as the episode rules drive it (local: an :class:`Episode`)."""

    def __init__(self, episode: Any, tally: CallTally | None = None) -> None:
        self.episode = episode
        self.tally = tally or CallTally()

    @property
    def task(self) -> Task:
        return self.episode.task

    @property
    def ended(self) -> bool:
        return bool(self.episode.done or self.episode.truncated)

    def first_observation(self) -> dict[str, Any]:
        """The reset observation, wire form, without the episode id."""
        data = self.episode.first_observation().to_json()
        data.get("info", {}).pop("episode_id", None)
        return data

    async def step(self, action: CallTool | ListTools) -> Observation:
        obs = await self.episode.act(action)
        self.tally.record(action, obs)
        return obs

    def per_episode_values(self) -> dict[str, str]:
        """What the framework varies in this episode (id, workspace path, HOME, uid, ...), by kind."""
        return self.episode.per_episode_values()

    async def state(self) -> State:
        return self.episode.state()

    def mcp(self) -> Client:
        """An official SDK client bound to this very episode (not yet entered)."""
        return Client(episode_server(self.episode))

    async def server_tools(self) -> list[dict[str, Any]] | None:
        """The servers' own tool lists now, composed (wire form); ``None`` when they cannot be asked."""
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in await self.episode.server_tools()]

    async def close(self) -> None:
        await self.episode.close()


class Subject(abc.ABC):
    """Base: what a rule may ask of the target. ``capabilities`` gates rules."""

    label = "?"
    capabilities: frozenset[str] = frozenset({"mcp"})

    _tally: CallTally | None = None

    @property
    def tally(self) -> CallTally:
        """Tool calls made through this subject's episodes (the runner resets it before each rule)."""
        if self._tally is None:
            self._tally = CallTally()
        return self._tally

    @property
    def environment(self) -> Environment | None:
        """The environment, when the subject is an openenv-mcp environment loaded in this process."""
        return None

    @abc.abstractmethod
    def mcp(self, mode: str = "auto", fresh: bool = False) -> AbstractAsyncContextManager[Client]:
        """A connected official SDK client (``fresh``: on an episode of its own where that matters)."""

    async def new_episode(self, seed: int | None = None, task_id: str | None = None) -> EpisodeHandle:
        raise ConfigError(f"{self.label} has no episodes")

    def trajectory(self, task: Task, kind: str = "reference") -> list[CallTool] | None:
        """The scripted trajectory for ``task`` when the environment has one."""
        return None

    @abc.abstractmethod
    def http(self) -> AbstractAsyncContextManager[str]:
        """The URL of the subject's MCP face over real streamable HTTP."""

    async def prepare(self) -> None:  # noqa: B027  (an optional hook: nothing by default)
        """Learn what the target offers (called once before the rules run)."""

    async def aclose(self) -> None:  # noqa: B027  (an optional hook: nothing by default)
        """Release what the subject holds."""


class LocalSubject(Subject):
    """An openenv-mcp environment loaded in this process."""

    def __init__(self, environment: Environment, label: str | None = None) -> None:
        self._environment = environment
        self.label = label or environment.name
        self._shared: Any = None
        self._served: Any = None
        caps = {"mcp", "episodes", "local"}
        if _serving() is not None:
            caps.add("http")
        self.capabilities = frozenset(caps)

    @property
    def environment(self) -> Environment:
        return self._environment

    @asynccontextmanager
    async def mcp(self, mode: str = "auto", fresh: bool = False) -> AsyncIterator[Client]:
        """A client on one shared episode (seed 0) for the listing and error rules, which
        change nothing; ``fresh=True`` for a new episode of its own."""
        if fresh:
            episode = await self.environment.new_episode(seed=0)
        else:
            if self._shared is None or self._shared.closed:
                self._shared = await self.environment.new_episode(seed=0)
            episode = self._shared
        try:
            async with Client(episode_server(episode), mode=mode) as client:
                yield client
        finally:
            if fresh:
                await episode.close()

    async def aclose(self) -> None:
        if self._shared is not None:
            await self._shared.close()
            self._shared = None

    async def new_episode(self, seed: int | None = None, task_id: str | None = None) -> EpisodeHandle:
        return EpisodeHandle(await self.environment.new_episode(seed=seed, task_id=task_id), self.tally)

    def trajectory(self, task: Task, kind: str = "reference") -> list[CallTool] | None:
        if not self.environment.has_solutions():
            return None
        try:
            return self.environment.trajectory(task, kind)
        except TaskNeeded:  # a stub task: the rules that replay it fail saying so
            raise
        except ConfigError:  # no such solution, or an interactive one: its fixed samples, if any
            if kind != "reference":
                return None
            try:
                return self.environment.samples(task) or None
            except ConfigError:
                return None

    @asynccontextmanager
    async def http(self) -> AsyncIterator[str]:
        factory = _serving()
        if factory is None:
            raise ConfigError("serving is not installed (openenv_mcp.serve.app)")
        app = factory(self.environment)
        self._served = app
        try:
            async with serving(app, log_level="error", lifespan="on") as base:
                yield base + "/mcp"
        finally:
            self._served = None

    def served_values(self, episode_id: str) -> dict[str, str]:
        """The per-episode values of an episode of the app :meth:`http` serves (by its documented
        ``app.state.manager``); empty when it is not live there."""
        episode = self._served.state.manager.peek(episode_id) if self._served is not None else None
        return episode.per_episode_values() if episode is not None else {}


def _serving() -> Any:
    """The serving module's app factory ``f(environment) -> ASGI app``, when it exists."""
    try:
        from openenv_mcp.serve import app as server  # type: ignore[attr-defined]
    except ImportError:
        return None
    for name in ("create_app", "build_app", "make_app"):
        factory = getattr(server, name, None)
        if callable(factory):
            return factory
    return None


class ServerSubject(Subject):
    """A plain MCP server object (official-SDK ``Server`` or FastMCP): MCP and wire rules only."""

    capabilities = frozenset({"mcp", "http"})

    def __init__(self, server: Any, label: str | None = None) -> None:
        lowlevel = lowlevel_server(server)
        if not isinstance(lowlevel, Server):
            raise ConfigError(f"{server!r} is not an MCP server object (mcp.server.Server or FastMCP)")
        self.server = server
        self.lowlevel = lowlevel
        self.label = label or f"MCP server {lowlevel.name!r}"

    @asynccontextmanager
    async def mcp(self, mode: str = "auto", fresh: bool = False) -> AsyncIterator[Client]:
        async with Client(self.lowlevel, mode=mode) as client:
            yield client

    @asynccontextmanager
    async def http(self) -> AsyncIterator[str]:
        if hasattr(self.server, "http_app"):
            app = self.server.http_app(path="/mcp")
        else:
            app = self.lowlevel.streamable_http_app(streamable_http_path="/mcp")
        async with serving(app, log_level="error", lifespan="on") as base:
            yield base + "/mcp"


@asynccontextmanager
async def _url_client(url: str, mode: str = "auto", headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """An SDK client over streamable HTTP, with extra headers (a bearer token) when given."""
    if not headers:
        async with Client(url, mode=mode) as client:
            yield client
        return
    from mcp.client.streamable_http import streamable_http_client

    async with (
        mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


class RemoteEpisodeHandle(EpisodeHandle):
    """An episode of a served environment, driven over the HTTP control plane
    (``POST /episodes``, ``/episodes/{id}/step``, ``GET .../state``, ``DELETE``); its
    MCP face is the episode's own address ``/episodes/{id}/mcp``."""

    def __init__(
        self,
        http: Any,
        base: str,
        created: dict[str, Any],
        tally: CallTally | None = None,
        values: Callable[[str], dict[str, str]] | None = None,
    ) -> None:
        self.http, self.base = http, base
        self._values = values
        self.tally = tally or CallTally()
        self.id: str = created["episode_id"]
        self.mcp_url: str = created.get("mcp_url") or f"{base}/episodes/{self.id}/mcp"
        self._first = created.get("observation") or {}
        self._ended = False
        self._key = {"OpenEnv-Episode-Key": created["episode_key"]} if created.get("episode_key") else {}

    @property
    def task(self) -> Task:
        return Task.model_validate(self._first.get("task") or {"id": "default", "prompt": ""})

    @property
    def ended(self) -> bool:
        return self._ended

    def first_observation(self) -> dict[str, Any]:
        data = json.loads(json.dumps(self._first))
        data.get("info", {}).pop("episode_id", None)
        return data

    async def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        response = await self.http.request(method, f"{self.base}{path}", json=body, headers=self._key)
        data = response.json() if response.content else {}
        if response.status_code >= 400:
            error = data.get("error", data) if isinstance(data, dict) else data
            raise ConfigError(f"{method} {path} answered HTTP {response.status_code}: {error}")
        return data

    async def step(self, action: CallTool | ListTools) -> Observation:
        data = await self._call("POST", f"/episodes/{self.id}/step", {"action": action.model_dump(mode="json")})
        obs = Observation.model_validate(data["observation"])
        self._ended = obs.done or obs.truncated
        self.tally.record(action, obs)
        return obs

    async def state(self) -> State:
        return State.model_validate((await self._call("GET", f"/episodes/{self.id}/state"))["state"])

    def per_episode_values(self) -> dict[str, str]:
        # the rest is the server's to say; a URL does not (unless this process serves it: ``values``)
        return {"the episode id": self.id, **(self._values(self.id) if self._values else {})}

    def mcp(self) -> Any:
        return (
            _url_client(self.mcp_url, headers=dict(getattr(self.http, "headers", {}) or {}) or None)
            if self.token
            else Client(self.mcp_url)
        )

    async def server_tools(self) -> list[dict[str, Any]] | None:
        return None  # behind the control plane: only the episode's composed list is visible

    @property
    def token(self) -> bool:
        return "authorization" in {k.lower() for k in self.http.headers}

    async def close(self) -> None:
        await self._call("DELETE", f"/episodes/{self.id}")


class UrlSubject(Subject):
    """A running MCP server: its streamable-HTTP endpoint (and its control plane, when it has one)."""

    capabilities = frozenset({"mcp", "http"})

    def __init__(
        self, url: str, token: str | None = None, values: Callable[[str], dict[str, str]] | None = None
    ) -> None:
        """``values``: an episode id -> its per-episode values, when this process serves ``url``."""
        self._values = values
        url = url.rstrip("/")
        self.base = url[: -len("/mcp")] if url.endswith("/mcp") else url
        self.url = url if url.endswith("/mcp") else url + "/mcp"
        self.label = url
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http: Any = None

    async def prepare(self) -> None:
        """Find out whether the server has an openenv-mcp control plane (``GET /episodes``)."""
        import httpx

        self._http = httpx.AsyncClient(timeout=60, headers=self.headers)
        try:
            response = await self._http.get(f"{self.base}/episodes")
            if response.status_code == 200 and isinstance(response.json().get("episodes"), list):
                self.capabilities = self.capabilities | {"episodes"}
        except (httpx.HTTPError, ValueError, AttributeError):
            pass

    async def new_episode(self, seed: int | None = None, task_id: str | None = None) -> EpisodeHandle:
        if "episodes" not in self.capabilities:
            raise ConfigError(f"{self.label} has no control plane")
        response = await self._http.post(f"{self.base}/episodes", json={"seed": seed, "task_id": task_id})
        if response.status_code != 201:
            raise ConfigError(f"POST /episodes answered HTTP {response.status_code}: {response.text[:300]}")
        return RemoteEpisodeHandle(self._http, self.base, response.json(), self.tally, self._values)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    @asynccontextmanager
    async def mcp(self, mode: str = "auto", fresh: bool = False) -> AsyncIterator[Client]:
        async with _url_client(self.url, mode, self.headers) as client:
            yield client

    @asynccontextmanager
    async def http(self) -> AsyncIterator[str]:
        yield self.url


def make_subject(target: Any, **options: Any) -> Subject:
    """A subject for a name, env file/folder, URL, EnvSpec, Environment, an ``Env``/``AsyncEnv`` from
    ``make()``, or an MCP server object."""
    from openenv_mcp.client.registry import find_env, is_url
    from openenv_mcp.definitions.spec import EnvSpec

    token = options.pop("token", None)
    if isinstance(target, Subject):
        return target
    unwrapped = getattr(target, "unwrapped", target)  # a sync Env -> its AsyncEnv
    if isinstance(getattr(unwrapped, "environment", None), Environment):  # an AsyncEnv from make_async()
        target = unwrapped.environment
    elif isinstance(getattr(unwrapped, "url", None), str) and is_url(unwrapped.url):  # a remote env
        target = unwrapped.url
    if isinstance(target, Environment):
        return LocalSubject(target)
    if isinstance(lowlevel_server(target), Server):
        return ServerSubject(target)
    if is_url(target):
        return UrlSubject(str(target), token=token)
    spec = target if isinstance(target, EnvSpec) else find_env(target)
    return LocalSubject(Environment(spec, **options), label=str(target) if not isinstance(target, EnvSpec) else None)
