"""CodeAct: the cost of a tool call made from code, and of a ``RunCode`` round trip.

* per-inner-call overhead: one ``RunCode`` making N calls of the in-process
  ``echo`` tool, minus a ``RunCode`` making none, divided by N; compared with
  the median ``step(CallTool)`` of the same tool. The overhead is that per-call
  time minus the ``CallTool`` time (the channel hop into and out of the
  sandboxed interpreter). Target: <= 1 ms.
* ``RunCode`` round trip: median of a trivial snippet (``1 + 1``), interpreter
  already started.
"""

from __future__ import annotations

import os
import statistics
import time

import anyio
from rich.console import Console
from rich.table import Table

from openenv_mcp import CallTool, EnvSpec, RunCode, ToolServerSpec, make_async
from openenv_mcp.tool_servers.echo import server

N_CALLS = 1000
RUNS = 7
TARGET_MS = 1.0


async def _median(call, n: int, warmup: int = 20) -> float:
    for _ in range(warmup):
        await call()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e3


async def measure() -> dict[str, float]:
    spec = EnvSpec(
        name="bench-codeact", max_steps=None, tool_servers=[ToolServerSpec(name="echo", namespace="", object=server)]
    )
    env = make_async(spec)
    await env.reset(seed=0)
    step = CallTool(name="echo", arguments={"text": "hello"})
    calltool_ms = await _median(lambda: env.step(step), 2000, 200)
    trivial = RunCode(code="1 + 1")
    roundtrip_ms = await _median(lambda: env.step(trivial), 300)
    loop = RunCode(code=f"for _ in range({N_CALLS}):\n    echo(text='hello')")
    empty = RunCode(code=f"for _ in range({N_CALLS}):\n    pass")
    with_calls = await _median(lambda: env.step(loop), RUNS, 1)
    without = await _median(lambda: env.step(empty), RUNS, 1)
    # CPU time (host + interpreter) per inner call: what the latency would be on an idle machine,
    # minus the two context switches; wall-clock figures above include scheduler waits under load.
    timed = RunCode(
        code="import resource\nu = resource.getrusage(resource.RUSAGE_SELF)\n"
        f"for _ in range({N_CALLS}):\n    echo(text='hello')\n"
        "v = resource.getrusage(resource.RUSAGE_SELF)\n"
        "(v.ru_utime + v.ru_stime) - (u.ru_utime + u.ru_stime)"
    )
    host0 = time.process_time()
    obs = await env.step(timed)
    host_cpu = time.process_time() - host0
    runner_cpu = float(obs.result.structured_content["value"])
    cpu0 = time.process_time()
    for _ in range(N_CALLS):
        await env.step(step)
    calltool_cpu = (time.process_time() - cpu0) / N_CALLS * 1e3
    await env.close()
    per_call = (with_calls - without) / N_CALLS
    cpu_per_call = (host_cpu + runner_cpu) / N_CALLS * 1e3
    return {
        "calltool_ms": calltool_ms,
        "per_call_ms": per_call,
        "overhead_ms": per_call - calltool_ms,
        "roundtrip_ms": roundtrip_ms,
        "cpu_per_call_ms": cpu_per_call,
        "calltool_cpu_ms": calltool_cpu,
        "cpu_overhead_ms": cpu_per_call - calltool_cpu,
        "load": os.getloadavg()[0],
    }


def main() -> None:
    r = anyio.run(measure)
    table = Table(title=f"CodeAct: trivial in-process tool (echo); {N_CALLS} calls per run, median of {RUNS} runs")
    table.add_column("path")
    table.add_column("median ms", justify="right")
    table.add_row("AsyncEnv.step(CallTool) (one call)", f"{r['calltool_ms']:.4f}")
    table.add_row("one tool call made from code (inside a RunCode)", f"{r['per_call_ms']:.4f}")
    table.add_row("  overhead per inner call vs CallTool", f"{r['overhead_ms']:.4f}")
    table.add_row("RunCode round trip, trivial snippet (1 + 1)", f"{r['roundtrip_ms']:.4f}")
    table.add_row("CPU per CallTool (host)", f"{r['calltool_cpu_ms']:.4f}")
    table.add_row("CPU per inner call (host + interpreter)", f"{r['cpu_per_call_ms']:.4f}")
    table.add_row("  CPU overhead per inner call vs CallTool", f"{r['cpu_overhead_ms']:.4f}")
    verdict = "[green]meets[/green]" if r["overhead_ms"] <= TARGET_MS else "[red]misses[/red]"
    table.caption = (
        f"per-inner-call overhead {r['overhead_ms']:.3f} ms wall, {r['cpu_overhead_ms']:.3f} ms CPU "
        f"(target <= {TARGET_MS} ms: {verdict} on wall time; load average {r['load']:.1f} "
        f"on {os.cpu_count()} CPUs)"
    )
    Console().print(table)


if __name__ == "__main__":
    main()
