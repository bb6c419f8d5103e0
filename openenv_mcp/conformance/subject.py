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
  episode rules too when the server has an openenv-mcp control plane.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.server import Server

from ..environment import Environment
from ..errors import ConfigError
from ..mcpserver import episode_server
from ..types import CallTool, ListTools, Observation, State, Task

__all__ = ["EpisodeHandle", "LocalSubject", "ServerSubject", "Subject", "UrlSubject", "make_subject", "serve_asgi"]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def serve_asgi(app: Any, startup_timeout: float = 20.0) -> AsyncIterator[str]:
    """Serve an ASGI app with uvicorn in this event loop on a free loopback port; yields the base URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # (older uvicorn)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(startup_timeout):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


class EpisodeHandle:
    """One episode, as the episode rules drive it (local: an :class:`Episode`)."""

    def __init__(self, episode: Any) -> None:
        self.episode = episode

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
        return await self.episode.act(action)

    async def state(self) -> State:
        return self.episode.state()

    def mcp(self) -> Client:
        """An official SDK client bound to this very episode (not yet entered)."""
        return Client(episode_server(self.episode))

    async def close(self) -> None:
        await self.episode.close()


class Subject:
    """Base: what a rule may ask of the target. ``capabilities`` gates rules."""

    label = "?"
    capabilities: frozenset[str] = frozenset({"mcp"})
    environment: Environment | None = None

    @asynccontextmanager
    async def mcp(self, mode: str = "auto") -> AsyncIterator[Client]:
        """A connected official SDK client on a fresh session (a fresh episode for environments)."""
        raise NotImplementedError
        yield  # pragma: no cover

    async def new_episode(self, seed: int | None = None, task_id: str | None = None) -> EpisodeHandle:
        raise ConfigError(f"{self.label} has no episodes")

    def trajectory(self, task: Task, kind: str = "reference") -> list[CallTool] | None:
        """The scripted trajectory for ``task`` when the environment has one."""
        return None

    @asynccontextmanager
    async def http(self) -> AsyncIterator[str]:
        """The URL of the subject's MCP face over real streamable HTTP."""
        raise NotImplementedError
        yield  # pragma: no cover

    async def aclose(self) -> None:
        """Release what the subject holds."""


class LocalSubject(Subject):
    """An openenv-mcp environment loaded in this process."""

    def __init__(self, environment: Environment, label: str | None = None) -> None:
        self.environment = environment
        self.label = label or environment.name
        caps = {"mcp", "episodes", "local"}
        if _serving() is not None:
            caps.add("http")
        self.capabilities = frozenset(caps)

    @asynccontextmanager
    async def mcp(self, mode: str = "auto") -> AsyncIterator[Client]:
        episode = await self.environment.new_episode(seed=0)
        try:
            async with Client(episode_server(episode), mode=mode) as client:
                yield client
        finally:
            await episode.close()

    async def new_episode(self, seed: int | None = None, task_id: str | None = None) -> EpisodeHandle:
        return EpisodeHandle(await self.environment.new_episode(seed=seed, task_id=task_id))

    def trajectory(self, task: Task, kind: str = "reference") -> list[CallTool] | None:
        if not self.environment.has_solutions():
            return None
        try:
            return self.environment.trajectory(task, kind)
        except ConfigError:
            return None

    @asynccontextmanager
    async def http(self) -> AsyncIterator[str]:
        factory = _serving()
        if factory is None:
            raise ConfigError("serving is not installed (openenv_mcp.server)")
        app = factory(self.environment)
        async with serve_asgi(app) as base:
            yield base + "/mcp"


def _serving() -> Any:
    """The serving module's app factory ``f(environment) -> ASGI app``, when it exists."""
    try:
        from .. import server  # type: ignore[attr-defined]
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
        lowlevel = getattr(server, "_mcp_server", server)
        if not isinstance(lowlevel, Server):
            raise ConfigError(f"{server!r} is not an MCP server object (mcp.server.Server or FastMCP)")
        self.server = server
        self.lowlevel = lowlevel
        self.label = label or f"MCP server {lowlevel.name!r}"

    @asynccontextmanager
    async def mcp(self, mode: str = "auto") -> AsyncIterator[Client]:
        async with Client(self.lowlevel, mode=mode) as client:
            yield client

    @asynccontextmanager
    async def http(self) -> AsyncIterator[str]:
        if hasattr(self.server, "http_app"):
            app = self.server.http_app(path="/mcp")
        else:
            app = self.lowlevel.streamable_http_app(streamable_http_path="/mcp")
        async with serve_asgi(app) as base:
            yield base + "/mcp"


class UrlSubject(Subject):
    """A running MCP server: its streamable-HTTP endpoint."""

    capabilities = frozenset({"mcp", "http"})

    def __init__(self, url: str) -> None:
        url = url.rstrip("/")
        self.base = url[: -len("/mcp")] if url.endswith("/mcp") else url
        self.url = url if url.endswith("/mcp") else url + "/mcp"
        self.label = url

    @asynccontextmanager
    async def mcp(self, mode: str = "auto") -> AsyncIterator[Client]:
        async with Client(self.url, mode=mode) as client:
            yield client

    @asynccontextmanager
    async def http(self) -> AsyncIterator[str]:
        yield self.url


def make_subject(target: Any, **options: Any) -> Subject:
    """A subject for a name, env file/folder, URL, EnvSpec, Environment or MCP server object."""
    from ..registry import _is_url, find_env
    from ..spec import EnvSpec

    if isinstance(target, Subject):
        return target
    if isinstance(target, Environment):
        return LocalSubject(target)
    if isinstance(target, Server) or hasattr(target, "_mcp_server"):
        return ServerSubject(target)
    if _is_url(target):
        return UrlSubject(str(target))
    spec = target if isinstance(target, EnvSpec) else find_env(target)
    return LocalSubject(Environment(spec, **options), label=str(target) if not isinstance(target, EnvSpec) else None)
