"""The Gymnasium-style API: ``AsyncEnv`` (the core) and ``Env`` (its sync twin).

    env = openenv_mcp.make("files")
    obs = env.reset(seed=7)
    obs = env.step(CallTool(name="fs_read", arguments={"path": "notes.txt"}))
    env.state(); env.close()

Both classes have the same methods in the same order; ``Env`` runs the async
core on a background event loop, so it also works inside notebooks.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from openenv_mcp.core.environment import Environment
from openenv_mcp.core.episode import Episode
from openenv_mcp.errors import ResetNeeded
from openenv_mcp.types import CallTool, ForkStrategy, ListTools, Observation, RunCode, State, action_from_json

__all__ = ["AsyncEnv", "Env"]


def _coerce(action: Any) -> CallTool | ListTools | RunCode:
    if isinstance(action, (CallTool, ListTools, RunCode)):
        return action
    return action_from_json(action)


class AsyncEnv:
    """One environment, one episode at a time (async)."""

    def __init__(self, environment: Environment, episode: Episode | None = None) -> None:
        self.environment = environment
        self._episode: Episode | None = episode
        self._owns_environment = episode is None
        """A fork's env shares its parent's environment (and warm pool): closing it closes its episode only."""

    @property
    def name(self) -> str:
        return self.environment.name

    @property
    def episode(self) -> Episode:
        """The current episode (raises :class:`ResetNeeded` before reset)."""
        if self._episode is None or self._episode.closed:
            raise ResetNeeded("call reset() before step() or state(): no episode is running")
        return self._episode

    async def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        """Start a fresh episode: new workspace, restarted tool servers, a task
        picked from ``seed`` (or ``task_id``). Returns the tools and the task."""
        old, self._episode = self._episode, None
        if old is not None:
            await old.close()
        self._episode = await self.environment.new_episode(seed=seed, task_id=task_id)
        return self._episode.first_observation()

    async def step(self, action: CallTool | ListTools | RunCode | dict[str, Any]) -> Observation:
        """Take one action; agent errors come back as ``result.isError``."""
        return await self.episode.act(_coerce(action))

    async def state(self) -> State:
        """Episode id, step count, task id, seed and cumulative reward."""
        return self.episode.state()

    async def fork(self, n: int = 1, strategy: ForkStrategy | None = None) -> list[AsyncEnv]:
        """``n`` envs, each on a new episode equal to the current one now (workspace, tool servers'
        state, step count, task, cumulative reward, trajectory); this one goes on unchanged.
        ``strategy``: ``snapshot`` | ``replay`` | ``None`` (see docs/fork.md). Close each fork."""
        return [AsyncEnv(self.environment, episode) for episode in await self.episode.fork(n, strategy)]

    async def close(self) -> None:
        """End the episode and stop its tool servers (idempotent)."""
        episode, self._episode = self._episode, None
        if episode is not None:
            await episode.close()
        if self._owns_environment:
            await self.environment.aclose()  # the warm pool's servers, if any

    async def __aenter__(self) -> AsyncEnv:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class _Portal:
    """One background event loop (a daemon thread) shared by every sync ``Env``."""

    _lock = threading.Lock()
    _portal: BlockingPortal | None = None
    _pid: int | None = None

    @classmethod
    def get(cls) -> BlockingPortal:
        with cls._lock:
            if cls._portal is None or cls._pid != os.getpid():  # a forked child has no loop thread: start one
                cls._pid = os.getpid()
                ready = threading.Event()

                async def serve() -> None:
                    async with BlockingPortal() as portal:
                        cls._portal = portal
                        ready.set()
                        await portal.sleep_until_stopped()

                threading.Thread(target=anyio.run, args=(serve,), name="openenv-mcp-loop", daemon=True).start()
                ready.wait()
            assert cls._portal is not None
            return cls._portal


class Env:
    """The sync twin of :class:`AsyncEnv`: same methods, same order."""

    def __init__(self, async_env: Any) -> None:
        self._async = async_env
        self._portal = _Portal.get()

    @property
    def name(self) -> str:
        return self._async.name

    @property
    def unwrapped(self) -> Any:
        """The async environment behind this one."""
        return self._async

    def run_async(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``await fn(*args, **kwargs)`` on the event loop this env lives on, from sync code; its result.

        How sync code reaches the async API behind the env, e.g.
        ``env.run_async(env.unwrapped.environment.warm_up)`` (an episode's tool servers and
        connections belong to that loop: never await them on another one).
        """
        return self._portal.call(functools.partial(fn, *args, **kwargs))

    def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        return self.run_async(self._async.reset, seed=seed, task_id=task_id)

    def step(self, action: CallTool | ListTools | RunCode | dict[str, Any]) -> Observation:
        return self.run_async(self._async.step, action)

    def state(self) -> State:
        return self.run_async(self._async.state)

    def fork(self, n: int = 1, strategy: ForkStrategy | None = None) -> list[Env]:
        return [Env(forked) for forked in self.run_async(self._async.fork, n, strategy)]

    def close(self) -> None:
        self.run_async(self._async.close)

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
