"""``make("ray://HOST:PORT/ENV")``: one episode from a pool of ``ENV`` replicas on the Ray cluster at ``HOST:PORT``.

``HOST:PORT`` is the head node's GCS address (what ``ray start --head`` prints; ``auto`` for the
cluster this process is already on). Query parameters configure the pool the first time it is made
in this process: ``ray://HEAD:6379/coding?num_replicas=4&num_cpus=2`` (also ``min_replicas``,
``max_replicas``, ``episodes_per_replica``, ``request_timeout``, ``health_interval``: default 5 s). Later ``make()`` calls for the same
URL share that pool, so episodes spread over its replicas.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from openenv_mcp.client.env import Env
from openenv_mcp.client.schemes import Scheme
from openenv_mcp.errors import ConfigError
from openenv_mcp.ray.episode import PoolEpisode
from openenv_mcp.ray.pool import RayPool

__all__ = ["make", "make_async", "parse_ray_url", "shutdown"]

_INT = ("num_replicas", "min_replicas", "max_replicas", "episodes_per_replica")
_FLOAT = ("num_cpus", "request_timeout", "health_timeout", "start_timeout", "health_interval")
_pools: dict[str, RayPool] = {}
_lock = threading.Lock()


def parse_ray_url(url: str) -> tuple[str, str, dict[str, Any]]:
    """``ray://HOST:PORT/ENV?k=v`` -> ``(address, env, pool options)``."""
    parts = urlsplit(url)
    env = parts.path.strip("/")
    if parts.scheme != "ray" or not parts.netloc or not env:
        raise ConfigError(f"not a Ray environment URL: {url!r}; expected ray://HOST:PORT/ENV (the head's address)")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query):
        try:
            if key in _INT:
                options[key] = int(value)
            elif key in _FLOAT:
                options[key] = float(value)
            else:
                raise ConfigError(f"unknown pool option {key!r} in {url!r}; known: {', '.join(_INT + _FLOAT)}")
        except ValueError:
            raise ConfigError(f"pool option {key}={value!r} in {url!r} is not a number") from None
    return parts.netloc, env, options


def pool_for(url: str) -> RayPool:
    """The pool this process keeps for ``url`` (made, not yet started, the first time)."""
    address, env, options = parse_ray_url(url)
    key = f"{address}/{env}"
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            options.setdefault("health_interval", 5.0)  # replace lost replicas even between episodes
            pool = _pools[key] = RayPool(env, address=address, **options)
        return pool


class _LazyEpisode(PoolEpisode):
    """A pool episode whose pool starts on the first ``reset()``."""

    async def reset(self, seed: int | None = None, task_id: str | None = None) -> Any:
        if not self.pool.replicas:
            await self.pool.start()
        return await super().reset(seed=seed, task_id=task_id)


def make_async(url: str, **options: Any) -> PoolEpisode:
    """An episode (``AsyncEnv`` methods) on the pool for ``url``; options: ``max_steps``, ``call_timeout``."""
    options.pop("mode", None) if options.get("mode") in (None, "sim") else None
    if "mode" in options:
        raise ConfigError("a Ray pool runs its environment in sim mode (the control plane drives episodes)")
    return _LazyEpisode(pool_for(url), **options)


def make(url: str, **options: Any) -> Env:
    """The sync twin of :func:`make_async`."""
    return Env(make_async(url, **options))  # type: ignore[arg-type]


def shutdown(timeout: float = 30.0) -> None:
    """Stop every pool that :func:`make` / :func:`make_async` started in this process: their replicas stop
    and their episodes end. Call it from outside the pools' event loop (e.g. at the end of a sync program)."""
    try:
        current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    with _lock:
        if current is not None and any(p.loop is current for p in _pools.values()):
            raise ConfigError("ray.shutdown() blocks: call it from outside the event loop its pools run on")
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        loop = pool.loop
        if loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(pool.aclose(), loop).result(timeout)
        else:
            pool.kill()


SCHEME = Scheme(connect=make_async)
"""``make("ray://HOST:PORT/ENV")``: an episode from a pool on that cluster (registered in ``openenv_mcp.schemes``)."""
