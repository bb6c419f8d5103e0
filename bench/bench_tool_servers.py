"""Shell and python tool servers behind the sandbox: start (FastMCP vs --lean), per call, coding episodes.

* **start**: connection start (bwrap + interpreter + MCP handshake) of one
  sandboxed server, p50 of :data:`STARTS`; FastMCP (``python -m openenv_mcp.tool_servers.X``)
  against the dependency-free ``--lean`` stdio loop the ``coding`` env uses.
* **call**: median ``shell run "true"`` / ``python run "1"`` over the wire, lean.
* **coding episode**: ``new_episode`` + the scripted reference trajectory of
  every task, p50 (reward runs included; their cache is cold for each task).

Target: a sandboxed lean start at least 5x faster than FastMCP's.
"""

from __future__ import annotations

import logging
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from openenv_mcp.client.registry import load_environment
from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.isolation import ServerContext, connect

STARTS = 5
CALLS = 100
TARGET_RATIO = 5.0
CALL = {"shell": ("run", {"command": "true"}), "python": ("run", {"code": "1"})}


async def _server(name: str, lean: bool) -> tuple[float, float]:
    """(start p50 ms, call p50 ms) of one sandboxed server."""
    command = ["python", "-m", f"openenv_mcp.tool_servers.{name}", "--root", "{workspace}"] + (
        ["--lean"] if lean else []
    )
    spec = ToolServerSpec(name=name, command=command, isolation="sandbox")
    starts, calls = [], []
    for i in range(STARTS):
        ws = Path(tempfile.mkdtemp(prefix="openenv-mcp-bench-ws-"))
        conn = connect(spec, ServerContext(episode_id=f"bench-{name}-{lean}-{i}", workspace=ws))
        try:
            t = time.perf_counter()
            await conn.start()
            starts.append(time.perf_counter() - t)
            if i == 0:
                tool, arguments = CALL[name]
                await conn.call_tool(tool, arguments, tool)
                for _ in range(CALLS):
                    t = time.perf_counter()
                    await conn.call_tool(tool, arguments, tool)
                    calls.append(time.perf_counter() - t)
        finally:
            await conn.close()
            shutil.rmtree(ws, ignore_errors=True)
    return statistics.median(starts) * 1e3, statistics.median(calls) * 1e3 if calls else 0.0


async def _episodes() -> float:
    env = load_environment("coding")
    samples = []
    for seed, task in enumerate(env.tasks.tasks):
        t = time.perf_counter()
        episode = await env.new_episode(seed=seed, task_id=task.id)
        try:
            for action in env.trajectory(task, "reference"):
                if episode.done:
                    break
                await episode.act(action)
        finally:
            await episode.close()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e3


def main() -> None:
    logging.getLogger("openenv_mcp.isolation").setLevel(logging.ERROR)
    console = Console()
    if shutil.which("bwrap") is None:
        console.print("[red]bwrap is not installed: apt-get install bubblewrap[/red]")
        return
    table = Table(title="sandboxed tool servers (p50)")
    for column in ("server", "FastMCP start ms", "--lean start ms", "ratio", "lean call ms", "target"):
        table.add_column(column, justify="right")
    for name in ("shell", "python"):
        full, _ = anyio.run(_server, name, False)
        lean, call = anyio.run(_server, name, True)
        ratio = full / lean
        ok = "[green]met[/green]" if ratio >= TARGET_RATIO else "[red]missed[/red]"
        table.add_row(name, f"{full:.0f}", f"{lean:.0f}", f"{ratio:.1f}x", f"{call:.2f}", f">= {TARGET_RATIO:g}x {ok}")
    console.print(table)
    console.print(f"coding: new episode + reference trajectory, p50 over all tasks: {anyio.run(_episodes):.0f} ms")


if __name__ == "__main__":
    main()
