"""Fast path: ``step(CallTool)`` on an in-process tool vs fastmcp's in-memory ``Client.call_tool``.

Both call the same trivial async tool (``echo``). Target: ratio <= 0.15.
"""

from __future__ import annotations

import statistics
import time

import anyio
from fastmcp import Client
from rich.console import Console
from rich.table import Table

from openenv_mcp import CallTool, EnvSpec, ToolServerSpec, make_async
from openenv_mcp.tool_servers.echo import server

N = 2000
WARMUP = 200
TARGET = 0.15


async def _median(call, n: int = N) -> float:
    for _ in range(WARMUP):
        await call()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e3


async def measure() -> dict[str, float]:
    spec = EnvSpec(
        name="bench-echo", max_steps=None, tool_servers=[ToolServerSpec(name="echo", namespace="", object=server)]
    )
    env = make_async(spec)
    await env.reset(seed=0)
    action = CallTool(name="echo", arguments={"text": "hello"})
    step_ms = await _median(lambda: env.step(action))
    await env.close()
    async with Client(server) as client:
        client_ms = await _median(lambda: client.call_tool("echo", {"text": "hello"}))
    return {"step_ms": step_ms, "client_ms": client_ms, "ratio": step_ms / client_ms}


def main() -> None:
    r = anyio.run(measure)
    table = Table(title=f"fast path: median of {N} sequential calls, trivial async tool")
    table.add_column("path")
    table.add_column("median ms", justify="right")
    table.add_row("openenv-mcp AsyncEnv.step(CallTool) (in-process)", f"{r['step_ms']:.4f}")
    table.add_row("fastmcp Client(server).call_tool (in-memory transport)", f"{r['client_ms']:.4f}")
    verdict = "[green]meets[/green]" if r["ratio"] <= TARGET else "[red]misses[/red]"
    table.caption = f"ratio step/client = {r['ratio']:.3f} (target <= {TARGET}: {verdict})"
    Console().print(table)


if __name__ == "__main__":
    main()
