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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.errors import BoundaryError, ConfigError, OpenEnvError
from openenv_mcp.ray.episode import PoolEpisode, PoolVectorEnv
from openenv_mcp.ray.replica import Replica

__all__ = ["RayPool", "ReplicaInfo"]


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
