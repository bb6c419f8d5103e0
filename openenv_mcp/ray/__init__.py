"""Environments on a Ray cluster: a pool of environment servers as Ray actors, and a front door.

    from openenv_mcp.ray import RayPool
    async with RayPool("coding", address="HEAD:6379", num_replicas=4) as pool:
        env = await pool.episode(seed=0)              # pinned to a replica; env.mcp_url for MCP clients
        venv = await pool.vector(64)                  # batch stepping across replicas

    env = openenv_mcp.make("ray://HEAD:6379/coding")  # one episode from a pool on that cluster
    openenv_mcp.ray.shutdown()                        # stop the pools make() started
    $ openenv-mcp serve coding --ray HEAD:6379 --replicas 4   # one URL, both faces, in front of the pool

Ray is an optional extra: ``pip install 'openenv-mcp[ray]'``. See ``docs/scale.md``.
"""

from __future__ import annotations

from openenv_mcp.errors import EpisodeLost
from openenv_mcp.ray.address import make, make_async, parse_ray_url, shutdown
from openenv_mcp.ray.episode import PoolEpisode, PoolVectorEnv
from openenv_mcp.ray.pool import RayPool, ReplicaInfo

__all__ = [
    "EpisodeLost",
    "PoolEpisode",
    "PoolVectorEnv",
    "RayPool",
    "ReplicaInfo",
    "make",
    "make_async",
    "parse_ray_url",
    "shutdown",
]
