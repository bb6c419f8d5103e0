"""Episodes of a :class:`~openenv_mcp.ray.pool.RayPool`: one pinned to its replica, and a vector of them.

A :class:`PoolEpisode` talks to its replica's control plane directly (Ray is not on the data path);
when the replica stops answering, the pool drops it and the episode fails with
:class:`~openenv_mcp.errors.EpisodeLost` within ``request_timeout``. :class:`PoolVectorEnv` steps
``num_envs`` of them together, in the shape of ``AsyncVectorEnv``. Both fork (docs/fork.md): the
forks run on the original's replica, over the original's connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from openenv_mcp.client.remote import RemoteAsyncEnv
from openenv_mcp.errors import BoundaryError, ConfigError, EpisodeLost, OpenEnvError
from openenv_mcp.types import CallTool, ForkStrategy, ListTools, Observation, RunCode, State

if TYPE_CHECKING:
    from openenv_mcp.ray.pool import RayPool, ReplicaInfo

__all__ = ["PoolEpisode", "PoolVectorEnv"]


class PoolEpisode:
    """One episode of a :class:`RayPool`, pinned to its replica; the methods of ``AsyncEnv``.

    ``replica`` says where it runs; ``mcp_url`` is its MCP address on that replica's node (its agent
    key is the credential). A dead replica fails every call with :class:`EpisodeLost`; the next
    ``reset()`` starts a fresh episode on a healthy replica.
    """

    def __init__(self, pool: RayPool, **options: Any) -> None:
        self.pool = pool
        self.options = options
        self.replica: ReplicaInfo | None = None
        self.remote: RemoteAsyncEnv | None = None
        self.first_observation: Observation | None = None
        self.last_episode_id: str | None = None
        self._forks: list[PoolEpisode] = []
        """The forks on this episode's connection (one list shared by them all, forks of forks too)."""
        self._owns_connection = True
        """False for a fork: its connection is its original's, and ends with it."""

    @property
    def name(self) -> str:
        return self.pool.target

    @property
    def episode_id(self) -> str:
        if self.remote is None:
            from openenv_mcp.errors import ResetNeeded

            raise ResetNeeded("call reset() before step() or state(): no episode is running")
        return self.remote.episode_id

    @property
    def mcp_url(self) -> str | None:
        return self.remote.mcp_url if self.remote is not None else None

    async def _guard(self, what: str, coro: Any) -> Any:
        replica = self.replica
        assert replica is not None and self.remote is not None
        try:
            return await asyncio.wait_for(coro, self.pool.request_timeout)
        except (TimeoutError, BoundaryError, OSError) as e:
            alive = await self.pool.healthy(replica)
            if alive and isinstance(e, BoundaryError) and self.remote.connection.connected:
                raise  # a boundary error the server reported (a tool server failed to start)
            if alive:
                self.pool.drop(replica)  # it answers Ray but not its episodes: do not send more there
            episode_id = self.last_episode_id
            await self._abandon()
            why = (
                f"did not answer within {self.pool.request_timeout}s"
                if isinstance(e, TimeoutError)
                else f"failed ({e})"
            )
            name = f"episode {episode_id}" if episode_id is not None else "a new episode"
            raise EpisodeLost(
                f"{name} was lost: its replica at {replica.url} (Ray node {replica.node_id}) "
                f"{why} during {what}, and is being replaced; start a new episode (reset()) to continue "
                "on a healthy replica"
            ) from None

    async def _abandon(self) -> None:
        remote, self.remote, self.replica = self.remote, None, None
        if remote is not None:
            await asyncio.gather(asyncio.wait_for(remote.connection.close(), 2.0), return_exceptions=True)

    async def reset(self, seed: int | None = None, task_id: str | None = None) -> Observation:
        """Start (or restart, on the same replica) an episode. A new episode whose replica turns out to be
        dead (its node died before the pool noticed) is started on another live replica instead."""
        attempts = 0
        while True:
            fresh = self.remote is None
            if fresh:
                self.replica = await self.pool.choose()
                self.remote = RemoteAsyncEnv(self.replica.url, token=self.pool.token, **self.options)
                self._forks, self._owns_connection = [], True  # a connection of its own
                self.last_episode_id = None
            replica = self.replica
            assert self.remote is not None and replica is not None
            replica.starting += fresh
            try:
                obs = await self._guard("reset", self.remote.reset(seed=seed, task_id=task_id))
            except EpisodeLost:
                attempts += 1
                if fresh and attempts <= self.pool.max_replicas and self.pool.live():
                    continue  # nothing was lost yet: the new episode goes to a replica that answers
                raise
            finally:
                replica.starting -= fresh
            replica.episodes += fresh
            self.first_observation, self.last_episode_id = obs, self.remote.episode_id
            return obs

    async def step(self, action: CallTool | ListTools | RunCode | dict[str, Any]) -> Observation:
        if self.remote is None:
            self.episode_id  # noqa: B018 - raises ResetNeeded
        assert self.remote is not None
        return await self._guard("step", self.remote.step(action))

    async def state(self) -> State:
        if self.remote is None:
            self.episode_id  # noqa: B018 - raises ResetNeeded
        assert self.remote is not None
        return await self._guard("state", self.remote.state())

    async def fork(self, n: int = 1, strategy: ForkStrategy | None = None) -> list[PoolEpisode]:
        """``n`` episodes equal to this one now (docs/fork.md), made by its replica's control plane and
        pinned to that replica (each counts in its load until closed); this one goes on unchanged.

        The forks share this episode's connection, as the remote client's forks do: closing this
        episode closes that connection, and the replica ends the forks with it (close the forks first,
        or keep the original open while they run); each then raises ResetNeeded, and its ``reset()``
        starts a fresh episode on a connection of its own. A dead replica fails the fork with
        :class:`EpisodeLost`; raises :class:`~openenv_mcp.errors.ResetNeeded` before ``reset()``."""
        if self.remote is None:
            self.episode_id  # noqa: B018 - raises ResetNeeded
        remote, replica = self.remote, self.replica
        assert remote is not None and replica is not None
        replica.starting += max(n, 0)  # counted in its load while they start
        try:
            made: list[RemoteAsyncEnv] = await self._guard("fork", remote.fork(n, strategy))
        finally:
            replica.starting -= max(n, 0)
        forks = []
        for forked_remote in made:
            forked = PoolEpisode(self.pool, **self.options)
            forked.replica, forked.remote = replica, forked_remote
            forked.first_observation, forked.last_episode_id = self.first_observation, forked_remote.episode_id
            forked._forks, forked._owns_connection = self._forks, False
            replica.episodes += 1
            forks.append(forked)
        self._forks[:] = [f for f in self._forks if f.remote is not None] + forks
        return forks

    def _end_forks(self) -> None:
        """The forks on this episode's connection ended with it (the replica closes a connection's episodes):
        each is uncounted once and never reopens the connection (its next call raises ResetNeeded)."""
        forks, self._forks = self._forks, []
        for forked in forks:
            forked_replica, forked.remote, forked.replica = forked.replica, None, None
            if forked_replica is not None:
                forked_replica.episodes = max(0, forked_replica.episodes - 1)

    async def close(self) -> None:
        """End the episode (idempotent; a lost episode closes without error)."""
        remote, replica = self.remote, self.replica
        if remote is None:
            return
        try:
            await asyncio.wait_for(remote.close(), self.pool.request_timeout)
        except (TimeoutError, OpenEnvError, OSError):
            pass
        finally:
            self.remote = self.replica = None
            if replica is not None:
                replica.episodes = max(0, replica.episodes - 1)
            if self._owns_connection:
                self._end_forks()

    async def __aenter__(self) -> PoolEpisode:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class PoolVectorEnv:
    """``num_envs`` pool episodes stepped together (the shape of ``AsyncVectorEnv``).

    Calls run concurrently, each on its episode's replica. With ``return_exceptions=True`` a lost
    episode's slot holds its :class:`EpisodeLost` and the others carry on.
    """

    def __init__(self, pool: RayPool, num_envs: int, **options: Any) -> None:
        if num_envs < 1:
            raise ConfigError("num_envs must be at least 1")
        self.num_envs = num_envs
        self.envs = [PoolEpisode(pool, **options) for _ in range(num_envs)]

    async def _all(self, calls: Sequence[Any], return_exceptions: bool) -> list[Any]:
        results = await asyncio.gather(*calls, return_exceptions=True)
        if not return_exceptions:
            for i, r in enumerate(results):
                if isinstance(r, OpenEnvError):
                    raise type(r)(f"episode {i}: {r}")
                if isinstance(r, BaseException):
                    raise r
        return list(results)

    async def reset(
        self,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        *,
        return_exceptions: bool = False,
    ) -> list[Any]:
        seeds_l = list(seeds) if seeds is not None else [None] * self.num_envs
        tasks_l = list(task_ids) if task_ids is not None else [None] * self.num_envs
        if len(seeds_l) != self.num_envs or len(tasks_l) != self.num_envs:
            raise ConfigError(f"give one seed and one task id per episode ({self.num_envs})")
        calls = [e.reset(seed=s, task_id=t) for e, s, t in zip(self.envs, seeds_l, tasks_l, strict=True)]
        return await self._all(calls, return_exceptions)

    async def step(
        self, actions: Sequence[CallTool | ListTools | RunCode | dict[str, Any]], *, return_exceptions: bool = False
    ) -> list[Any]:
        if len(actions) != self.num_envs:
            raise ConfigError(f"give one action per episode ({self.num_envs}), got {len(actions)}")
        return await self._all([e.step(a) for e, a in zip(self.envs, actions, strict=True)], return_exceptions)

    async def state(self, *, return_exceptions: bool = False) -> list[Any]:
        return await self._all([e.state() for e in self.envs], return_exceptions)

    async def fork(self, n: int = 1, strategy: ForkStrategy | None = None) -> PoolVectorEnv:
        """Fork every episode ``n`` times, concurrently (docs/fork.md): a vector of ``num_envs * n``
        episodes, episode ``i``'s forks at ``i * n ... i * n + n - 1``, each on its original's replica
        and connection (see :meth:`PoolEpisode.fork`). A failed fork closes the others and raises."""
        results = await asyncio.gather(*(e.fork(n, strategy) for e in self.envs), return_exceptions=True)
        made = [f for r in results if not isinstance(r, BaseException) for f in r]
        failed = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
        if failed:  # do not keep half a vector
            await asyncio.gather(*(f.close() for f in made), return_exceptions=True)
            i, error = failed[0]
            if isinstance(error, OpenEnvError):
                raise type(error)(f"episode {i}: {error}")
            raise error
        forked = PoolVectorEnv.__new__(PoolVectorEnv)
        forked.num_envs, forked.envs = len(made), made
        return forked

    async def close(self) -> None:
        await asyncio.gather(*(e.close() for e in self.envs), return_exceptions=True)

    async def __aenter__(self) -> PoolVectorEnv:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
