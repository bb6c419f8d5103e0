"""A pool of environment servers as Ray actors across a cluster, handing out episodes.

    pool = RayPool("coding", address="10.0.0.1:6379", num_replicas=8, num_cpus=2)
    await pool.start()
    env = await pool.episode(seed=7)           # pinned to one replica; env.mcp_url for an MCP client
    obs = await env.step(CallTool(name="python_run", arguments={"code": "print(1)"}))
    venv = await pool.vector(64, seeds=range(64))  # AsyncVectorEnv-style batch stepping

Each replica is the served app of ``openenv-mcp serve`` in an actor on some node (placed with
the replica's ``num_cpus`` / ``resources`` and Ray's SPREAD strategy). Steps go straight from the
client to the replica's control plane over one WebSocket (Ray is not on the data path). When a
replica's node dies, its episodes fail with :class:`~openenv_mcp.errors.EpisodeLost` within
``request_timeout`` (never a hang); the pool drops the replica, new episodes go to healthy ones
and a replacement is started in the background until ``min_replicas`` are live again.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..client.remote import RemoteAsyncEnv
from ..errors import BoundaryError, ConfigError, EpisodeLost, OpenEnvError
from ..types import CallTool, ListTools, Observation, RunCode, State
from .replica import Replica

__all__ = ["PoolEpisode", "PoolVectorEnv", "RayPool", "ReplicaInfo"]


@dataclass
class ReplicaInfo:
    """One live replica: its actor, its server URL on its node, and the pool's episode count for it
    (``episodes``: running, refreshed from the replica by each health check; ``starting``: being created)."""

    actor: Any = field(repr=False)
    url: str
    node_id: str
    pid: int
    resources: dict[str, float]
    episodes: int = 0
    starting: int = 0
    alive: bool = True

    @property
    def load(self) -> int:
        return self.episodes + self.starting


async def _await_ref(ref: Any, timeout: float) -> Any:
    return await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout)


class RayPool:
    """Environment servers for ``target`` on a Ray cluster.

    Args:
        target: the environment (a name, or an env folder present on every node).
        address: the cluster (``HOST:PORT`` of the head's GCS, or ``auto``); ``None`` uses an
            already initialised ``ray`` or ``auto``.
        num_replicas: a fixed number of replicas (sets ``min_replicas`` and ``max_replicas``).
        min_replicas, max_replicas: autoscaling bounds: a replica is added when every live one holds
            ``episodes_per_replica`` episodes, and an idle one above ``min_replicas`` is stopped by
            :meth:`check`.
        num_cpus, resources: what each replica reserves on its node (Ray resources).
        token, admin_token: the cluster tokens the replicas require (random when not given).
        request_timeout: bound on every control-plane operation of an episode, seconds.
        health_timeout: how long a replica may take to answer a health check before it counts as dead.
        start_timeout: how long a replica may take to be placed and start serving.
        health_interval: when set, :meth:`check` runs every ``health_interval`` seconds in the background
            (replacing lost replicas even when no episode is stepping, stopping idle ones above the minimum).
    """

    def __init__(
        self,
        target: str,
        *,
        address: str | None = None,
        num_replicas: int | None = None,
        min_replicas: int = 1,
        max_replicas: int | None = None,
        episodes_per_replica: int = 64,
        num_cpus: float = 1.0,
        resources: dict[str, float] | None = None,
        token: str | None = None,
        admin_token: str | None = None,
        request_timeout: float = 60.0,
        health_timeout: float = 5.0,
        start_timeout: float = 120.0,
        health_interval: float | None = None,
    ) -> None:
        if num_replicas is not None:
            min_replicas = max_replicas = num_replicas
        max_replicas = max_replicas if max_replicas is not None else max(min_replicas, 1)
        if min_replicas < 0 or max_replicas < 1 or max_replicas < min_replicas:
            raise ConfigError(
                f"replica bounds must satisfy 0 <= min_replicas <= max_replicas, max_replicas >= 1 "
                f"(got {min_replicas}..{max_replicas})"
            )
        self.target = target
        self.address = address
        self.min_replicas = min_replicas
        self.max_replicas = max_replicas
        self.episodes_per_replica = episodes_per_replica
        self.num_cpus = num_cpus
        self.resources = dict(resources or {})
        self.token = token or secrets.token_urlsafe(32)
        self.admin_token = admin_token or secrets.token_urlsafe(32)
        self.request_timeout = request_timeout
        self.health_timeout = health_timeout
        self.start_timeout = start_timeout
        self.health_interval = health_interval
        self._watcher: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The event loop the pool was started on (its background tasks run there)."""
        self.replicas: list[ReplicaInfo] = []
        self.replaced = 0
        """How many lost replicas the pool has replaced."""
        self.last_start_error: OpenEnvError | None = None
        """Why the last replica that failed to start did (placement timeout, actor error)."""
        self._starting: set[asyncio.Task[ReplicaInfo | None]] = set()
        self._actor_class: Any = None

    # -- lifecycle ---------------------------------------------------------------
    async def start(self) -> RayPool:
        """Connect to the cluster and start ``min_replicas`` replicas (at least one)."""
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address or "auto", log_to_driver=False, logging_level=logging.WARNING)
        self.loop = asyncio.get_running_loop()
        self._actor_class = ray.remote(Replica)
        wanted = max(self.min_replicas, 1)
        started = await asyncio.gather(*(self._spawn() for _ in range(wanted)), return_exceptions=True)
        errors = [e for e in started if isinstance(e, BaseException)]
        if errors and not self.replicas:
            raise errors[0]
        if self.health_interval is not None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch(self.health_interval))
        return self

    async def _watch(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check()
            except Exception:  # a failed round must not end the watch; the next one retries
                logging.getLogger(__name__).exception("health check of the Ray pool failed")

    async def __aenter__(self) -> RayPool:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every replica (their episodes end)."""
        import ray

        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        replicas, self.replicas = self.replicas, []
        stops = [_await_ref(r.actor.shutdown.remote(), 10.0) for r in replicas if r.alive]
        await asyncio.gather(*stops, return_exceptions=True)
        for r in replicas:
            ray.kill(r.actor, no_restart=True)

    def kill(self) -> None:
        """Kill every replica's actor at once, without a graceful stop (for a pool whose loop has ended)."""
        import ray

        replicas, self.replicas = self.replicas, []
        for r in replicas:
            r.alive = False
            ray.kill(r.actor, no_restart=True)

    async def _spawn(self) -> ReplicaInfo:
        import ray
        from ray.exceptions import RayError

        actor = self._actor_class.options(
            num_cpus=self.num_cpus,
            resources=self.resources,
            scheduling_strategy="SPREAD",
            max_restarts=0,
            max_concurrency=8,
        ).remote(self.target, token=self.token, admin_token=self.admin_token)
        try:
            info = await _await_ref(actor.info.remote(), self.start_timeout)
        except (TimeoutError, RayError) as e:
            ray.kill(actor, no_restart=True)
            reason = "was not placed and started in time" if isinstance(e, TimeoutError) else f"failed: {e}"
            raise BoundaryError(
                f"a replica of {self.target!r} (num_cpus={self.num_cpus}, resources={self.resources}) {reason} "
                f"(start_timeout={self.start_timeout}s); does the cluster have room for it?"
            ) from None
        replica = ReplicaInfo(actor, info["url"], info["node_id"], info["pid"], info["resources"])
        self.replicas.append(replica)
        return replica

    def _spawn_in_background(self) -> asyncio.Task[ReplicaInfo | None]:
        """Start a replica in a task counted in ``_starting`` (so concurrent callers never start more than
        ``max_replicas``); its result is the replica, or None (the reason in ``last_start_error``)."""

        async def run() -> ReplicaInfo | None:
            try:
                return await self._spawn()
            except OpenEnvError as e:
                self.last_start_error = e
                return None

        task = asyncio.get_running_loop().create_task(run())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)
        return task

    # -- health ------------------------------------------------------------------
    def live(self) -> list[ReplicaInfo]:
        return [r for r in self.replicas if r.alive]

    def drop(self, replica: ReplicaInfo) -> None:
        """Forget a dead replica, kill its actor, and start a replacement when below ``min_replicas``."""
        import ray

        if not replica.alive:
            return
        replica.alive = False
        self.replicas = [r for r in self.replicas if r is not replica]
        try:
            ray.kill(replica.actor, no_restart=True)
        except Exception:  # its node is gone already
            pass
        if len(self.replicas) + len(self._starting) < max(self.min_replicas, 1):
            self.replaced += 1
            self._spawn_in_background()

    async def healthy(self, replica: ReplicaInfo) -> bool:
        """Whether the replica answers a health check within ``health_timeout`` (drops it if not)."""
        from ray.exceptions import RayError

        if not replica.alive:
            return False
        try:
            replica.episodes = int(await _await_ref(replica.actor.ping.remote(), self.health_timeout))
            return True
        except (TimeoutError, RayError):
            self.drop(replica)
            return False

    async def check(self) -> None:
        """Health-check every replica, replace the dead, stop idle ones above ``min_replicas``."""
        await asyncio.gather(*(self.healthy(r) for r in self.live()))
        while len(self.replicas) + len(self._starting) < max(self.min_replicas, 1):
            self._spawn_in_background()
        idle = [r for r in self.live() if r.load == 0]
        while idle and len(self.replicas) > max(self.min_replicas, 1):
            replica = idle.pop()
            replica.alive = False
            self.replicas.remove(replica)
            await asyncio.gather(_await_ref(replica.actor.shutdown.remote(), 10.0), return_exceptions=True)
            import ray

            ray.kill(replica.actor, no_restart=True)

    async def wait_for_replicas(self, count: int | None = None, timeout: float | None = None) -> None:
        """Wait until ``count`` (default ``min_replicas``) replicas are live, e.g. after a replacement."""
        count = max(self.min_replicas, 1) if count is None else count
        deadline = asyncio.get_running_loop().time() + (timeout if timeout is not None else self.start_timeout)
        while len(self.live()) < count:
            if asyncio.get_running_loop().time() > deadline:
                raise BoundaryError(f"only {len(self.live())} of {count} replicas of {self.target!r} are live")
            if len(self.replicas) + len(self._starting) < count:
                self._spawn_in_background()
            await asyncio.sleep(0.1)

    async def choose(self) -> ReplicaInfo:
        """The replica a new episode goes to: the least loaded live one while it holds fewer than
        ``episodes_per_replica`` episodes; otherwise a new replica (up to ``max_replicas``, waiting for one
        already starting), and when none can be added the least loaded live one."""
        while True:
            live = self.live()
            best = min(live, key=lambda r: r.load) if live else None
            if best is not None and best.load < self.episodes_per_replica:
                return best
            if len(live) + len(self._starting) < self.max_replicas:
                started = await asyncio.shield(self._spawn_in_background())
                if started is not None and started.alive:
                    return started
            elif self._starting:
                await asyncio.wait(set(self._starting), return_when=asyncio.FIRST_COMPLETED)
                continue
            if best is not None:
                return best
            if not self.live():
                why = f": {self.last_start_error}" if self.last_start_error is not None else ""
                raise BoundaryError(f"no live replica of {self.target!r} and none could be started{why}")

    # -- episodes ----------------------------------------------------------------
    async def episode(self, seed: int | None = None, task_id: str | None = None, **options: Any) -> PoolEpisode:
        """A new episode on a healthy replica (reset already done; ``first_observation`` holds its result)."""
        env = PoolEpisode(self, **options)
        await env.reset(seed=seed, task_id=task_id)
        return env

    async def vector(
        self,
        num_envs: int,
        seeds: Iterable[int | None] | None = None,
        task_ids: Iterable[str | None] | None = None,
        **options: Any,
    ) -> PoolVectorEnv:
        """``num_envs`` episodes spread over the replicas, stepped as one batch (reset already done)."""
        venv = PoolVectorEnv(self, num_envs, **options)
        await venv.reset(seeds, task_ids)
        return venv


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

    @property
    def name(self) -> str:
        return self.pool.target

    @property
    def episode_id(self) -> str:
        if self.remote is None:
            from ..errors import ResetNeeded

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

    async def close(self) -> None:
        await asyncio.gather(*(e.close() for e in self.envs), return_exceptions=True)

    async def __aenter__(self) -> PoolVectorEnv:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
