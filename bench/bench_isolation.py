"""Isolation boundaries: episode start, reset (warm pool, 1,000-file workspace) and per-call overhead.

Every boundary runs the same FastMCP ``echo`` server (``openenv_mcp.tool_servers.echo``):
in-process as an object, out of process as ``python -m openenv_mcp.tool_servers.echo``.

* **start**: ``Environment.new_episode()`` with nothing pre-started (cold), p50.
* **reset**: ``AsyncEnv.reset()`` of an episode whose workspace was seeded with
  1,000 files and changed by a tool call, with ``warm_pool = 1`` (the pool
  refills between episodes, as it does while an agent works), p50.
* **call**: median ``step(CallTool("echo"))``; overhead = boundary - in-process.

Targets: sandbox reset p50 <= 50 ms; sandbox per-call overhead <= 2 ms.
Add a boundary by appending to :data:`BOUNDARIES` (name -> ToolServerSpec kwargs).
"""

from __future__ import annotations

import logging
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.client.env import AsyncEnv
from openenv_mcp.core.environment import Environment

ECHO = ["python", "-m", "openenv_mcp.tool_servers.echo"]

BOUNDARIES: list[tuple[str, dict[str, Any]]] = [
    ("inprocess", {"object": "openenv_mcp.tool_servers.echo:server"}),
    ("process", {"command": ECHO, "isolation": "process"}),
    ("sandbox", {"command": ECHO, "isolation": "sandbox"}),
    ("docker", {"command": ECHO, "isolation": "docker"}),  # in openenv-mcp/tools (docker/build.sh)
]
"""(name, ToolServerSpec keyword arguments); other boundaries (docker) append here."""

FILES = 1000
STARTS = 5
RESETS = 15
CALLS = 500
TARGET_RESET_MS = 50.0
TARGET_OVERHEAD_MS = 2.0


def _seed(folder: Path) -> None:
    folder.mkdir()
    for i in range(FILES):
        sub = folder / f"d{i % 20:02d}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i:04d}.txt").write_text(f"file {i}\n" * 4)


def _spec(name: str, kwargs: dict[str, Any], base: Path, warm: int) -> EnvSpec:
    server = ToolServerSpec(name="echo", namespace="", workspace="seed", **kwargs)
    return EnvSpec(name=f"bench-{name}", max_steps=None, warm_pool=warm, tool_servers=[server], base_dir=base)


async def _start_ms(name: str, kwargs: dict[str, Any], base: Path) -> float:
    environment = Environment(_spec(name, kwargs, base, 0))
    samples = []
    for i in range(STARTS):
        t = time.perf_counter()
        episode = await environment.new_episode(seed=i)
        samples.append(time.perf_counter() - t)
        await episode.close()
    return statistics.median(samples) * 1e3


async def _reset_and_call_ms(name: str, kwargs: dict[str, Any], base: Path) -> tuple[float, float]:
    env = AsyncEnv(Environment(_spec(name, kwargs, base, 1)))
    action = CallTool(name="echo", arguments={"text": "hello"})
    try:
        await env.reset(seed=0)
        samples = []
        for i in range(RESETS):
            await env.step(action)  # the episode used its world
            await env.environment.warm_up()  # the replacement warmed while the agent worked
            t = time.perf_counter()
            await env.reset(seed=i + 1)
            samples.append(time.perf_counter() - t)
        for _ in range(50):
            await env.step(action)
        calls = []
        for _ in range(CALLS):
            t = time.perf_counter()
            await env.step(action)
            calls.append(time.perf_counter() - t)
    finally:
        await env.close()
    return statistics.median(samples) * 1e3, statistics.median(calls) * 1e3


def _docker_image() -> None:
    """Build (cached) the image the docker row runs in; a missing engine shows in the row."""
    import subprocess

    script = Path(__file__).resolve().parent.parent / "docker" / "build.sh"
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        subprocess.run([str(script), "tools"], check=False)


async def measure() -> list[dict[str, Any]]:
    logging.getLogger("openenv_mcp.isolation").setLevel(logging.ERROR)
    base = Path(tempfile.mkdtemp(prefix="openenv-mcp-bench-"))
    base.chmod(0o755)
    rows = []
    try:
        _seed(base / "seed")
        for name, kwargs in BOUNDARIES:
            if kwargs.get("isolation") == "docker":
                _docker_image()
            try:
                start = await _start_ms(name, kwargs, base)
                reset, call = await _reset_and_call_ms(name, kwargs, base)
                rows.append({"name": name, "start": start, "reset": reset, "call": call})
            except Exception as e:  # a missing engine must not hide the other rows
                rows.append({"name": name, "error": f"{type(e).__name__}: {e}"})
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


def _verdict(ok: bool) -> str:
    return "[green]meets[/green]" if ok else "[red]misses[/red]"


def main() -> None:
    rows = anyio.run(measure)
    base = next((r["call"] for r in rows if r["name"] == "inprocess" and "call" in r), None)
    table = Table(
        title=f"isolation boundaries: p50 start (cold), reset (warm pool, {FILES}-file workspace), "
        "per-call (trivial echo tool)"
    )
    for col in ("boundary", "start ms", "reset ms", "call ms", "overhead vs in-process ms", "verdict"):
        table.add_column(col, justify="left" if col in ("boundary", "verdict") else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["name"], "-", "-", "-", "-", f"[yellow]skipped[/yellow] {r['error'][:80]}")
            continue
        overhead = r["call"] - base if base is not None else float("nan")
        verdict = ""
        if r["name"] == "sandbox":
            verdict = (
                f"reset {_verdict(r['reset'] <= TARGET_RESET_MS)}, overhead {_verdict(overhead <= TARGET_OVERHEAD_MS)}"
            )
        table.add_row(
            r["name"], f"{r['start']:.1f}", f"{r['reset']:.1f}", f"{r['call']:.3f}", f"{overhead:+.3f}", verdict
        )
    table.caption = (
        f"targets: sandbox reset p50 <= {TARGET_RESET_MS:g} ms; sandbox per-call overhead <= "
        f"{TARGET_OVERHEAD_MS:g} ms over in-process. Reset = close the used episode + swap in a "
        "pre-started world (warm_pool = 1)."
    )
    Console().print(table)


if __name__ == "__main__":
    main()
