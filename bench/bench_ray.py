"""What Ray and the front door add per step: the same ``echo`` step, side by side in one run.

1. One ``step`` round trip over the control-plane WebSocket, sequential, p50/p99:
   a plain ``openenv-mcp serve echo`` (direct) vs a pool episode (the client talks to its
   replica's server inside a Ray actor: Ray is not on the data path) vs through the front
   door of ``openenv-mcp serve echo --ray ADDRESS`` (one extra hop: a WebSocket proxy).
2. MCP ``tools/call`` on an episode's MCP address (official SDK client, one session):
   direct vs through the front door (an HTTP proxy hop).
3. A batch step of 32 episodes: one ``batch`` message direct vs through the front door (split over 2
   replicas), and a pool's ``vector(32)`` (concurrent steps, one WebSocket per episode, 2 replicas).

A single-node Ray (``ray.init(num_cpus=2)``) hosts the pool; everything runs on loopback.
Knob: ``BENCH_RAY_N`` (samples, default 400). The per-step figures feed docs/scale.md.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import secrets
import statistics
import time

from rich.console import Console
from rich.table import Table

from openenv_mcp.client.remote import AsyncVectorEnv, RemoteAsyncEnv
from openenv_mcp.testing import running_server
from openenv_mcp.types import CallTool

console = Console()
N = int(os.environ.get("BENCH_RAY_N", "400"))
ECHO = CallTool(name="echo", arguments={"text": "hello"})


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _steps(env: object, n: int) -> list[float]:
    step = env.step  # type: ignore[attr-defined]
    for _ in range(20):  # warm up
        await step(ECHO)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await step(ECHO)
        out.append(time.perf_counter() - t)
    return out


async def _mcp_calls(url: str, n: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(20):
            await session.call_tool("echo", {"text": "hello"})
        out = []
        for _ in range(n):
            t = time.perf_counter()
            await session.call_tool("echo", {"text": "hello"})
            out.append(time.perf_counter() - t)
        return out


async def _remote(url: str, n: int) -> tuple[list[float], list[float], list[float]]:
    env = RemoteAsyncEnv(url, max_steps=0)
    await env.reset(seed=0)
    try:
        steps = await _steps(env, n)
        assert env.mcp_url is not None
        mcp = await _mcp_calls(env.mcp_url, n // 2)
    finally:
        await env.close()
    async with AsyncVectorEnv(url, num_envs=32, max_steps=0) as venv:
        await venv.reset(seeds=range(32))
        for _ in range(5):
            await venv.step([ECHO] * 32)
        batches = []
        for _ in range(max(20, n // 10)):
            t = time.perf_counter()
            await venv.step([ECHO] * 32)
            batches.append(time.perf_counter() - t)
    return steps, mcp, batches


async def _pool_steps(n: int) -> tuple[list[float], list[float]]:
    from openenv_mcp.ray import RayPool

    async with RayPool("echo", num_replicas=2, num_cpus=0.5) as pool:
        env = await pool.episode(seed=0, max_steps=0)
        try:
            steps = await _steps(env, n)
        finally:
            await env.close()
        async with await pool.vector(32, seeds=range(32), max_steps=0) as venv:  # one WebSocket per episode
            for _ in range(5):
                await venv.step([ECHO] * 32)
            batches = []
            for _ in range(max(20, n // 10)):
                t = time.perf_counter()
                await venv.step([ECHO] * 32)
                batches.append(time.perf_counter() - t)
        return steps, batches


def main() -> None:
    if importlib.util.find_spec("ray") is None:
        console.print("[yellow]bench_ray skipped:[/yellow] Ray is not installed (pip install 'openenv-mcp[ray]')")
        return
    # a token of this run only (else Ray writes ~/.ray/auth_token, which later `ray start`s on the host pick up);
    # set before Ray is imported: it reads its auth mode then
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    try:
        address = ray.get_runtime_context().gcs_address
        with running_server("echo", "--max-episodes", "0") as url:
            direct = asyncio.run(_remote(url, N))
        pooled = asyncio.run(_pool_steps(N))
        args = ("--ray", address, "--replicas", "2", "--replica-cpus", "0.5")
        with running_server("echo", *args, timeout=120) as url:
            door = asyncio.run(_remote(url, N))
    finally:
        ray.shutdown()

    table = Table(title=f"echo step latency, ms (sequential, {N} samples; batch: 32 episodes)")
    for col in ("path", "p50", "p99", "vs direct p50"):
        table.add_column(col, justify="right" if col != "path" else "left")

    def row(name: str, samples: list[float], base: list[float]) -> None:
        p50, base50 = _pct(samples, 0.5), _pct(base, 0.5)
        table.add_row(name, f"{p50:.2f}", f"{_pct(samples, 0.99):.2f}", f"{p50 / base50:.2f}x (+{p50 - base50:.2f})")

    row("step: direct server (/ws)", direct[0], direct[0])
    row("step: pool episode (replica in a Ray actor)", pooled[0], direct[0])
    row("step: front door (serve --ray)", door[0], direct[0])
    row("MCP tools/call: direct", direct[1], direct[1])
    row("MCP tools/call: front door", door[1], direct[1])
    row("batch step x32: direct", direct[2], direct[2])
    row("batch step x32: front door (2 replicas)", door[2], direct[2])
    row("batch step x32: pool vector (2 replicas, no front door)", pooled[1], direct[2])
    console.print(table)
    console.print(
        f"[dim]medians: direct {statistics.median(direct[0]) * 1000:.2f} ms, "
        f"front door {statistics.median(door[0]) * 1000:.2f} ms per step[/dim]"
    )


if __name__ == "__main__":
    main()
