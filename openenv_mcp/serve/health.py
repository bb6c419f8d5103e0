"""``GET /health``: is the server up, how many episodes live, are the tool servers answering.

Never behind the bearer token (load balancers and probes call it). Tool-server
health is sampled on the most recently created episodes (at most
:data:`SAMPLE` of them, each check bounded by :data:`CHECK_TIMEOUT`), so a
health check stays cheap with thousands of live episodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from openenv_mcp.core.environment import Environment
    from openenv_mcp.serve.manager import EpisodeManager

__all__ = ["CHECK_TIMEOUT", "SAMPLE", "health_report"]

SAMPLE = 32
"""Live episodes whose tool servers a health check asks (the newest ones)."""

CHECK_TIMEOUT = 2.0
"""Seconds one tool server has to answer its health check."""


async def _healthy(conn: Any) -> bool:
    try:
        with anyio.fail_after(CHECK_TIMEOUT):
            return bool(await conn.healthy())
    except Exception:
        return False


async def health_report(environment: Environment, manager: EpisodeManager, mode: str) -> dict[str, Any]:
    """The ``/health`` document: ``status`` is ``healthy`` (OpenEnv's word), or ``degraded`` when a
    sampled tool server is down."""
    servers: dict[str, dict[str, Any]] = {
        s.name: {"name": s.name, "isolation": s.isolation, "checked": 0, "unhealthy": 0} for s in environment.servers
    }
    conns = []
    for episode_id in manager.ids()[-SAMPLE:]:
        episode = manager.peek(episode_id)
        if episode is not None:
            conns.extend(episode.connections)
    results: list[bool] = [True] * len(conns)

    async def check(i: int) -> None:
        results[i] = await _healthy(conns[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(conns)):
            tg.start_soon(check, i)
    for conn, ok in zip(conns, results, strict=True):
        entry = servers.setdefault(
            conn.spec.name, {"name": conn.spec.name, "isolation": conn.spec.isolation, "checked": 0, "unhealthy": 0}
        )
        entry["checked"] += 1
        entry["unhealthy"] += 0 if ok else 1
    degraded = any(s["unhealthy"] for s in servers.values())
    return {
        "status": "degraded" if degraded else "healthy",
        "env": environment.name,
        "mode": mode,
        "episodes": {"live": len(manager), "max": manager.max_episodes, "idle_timeout": manager.idle_timeout},
        "tool_servers": list(servers.values()),
    }
