"""The browser world's cost: episode starts, step latency, memory per episode, concurrent episodes.

* **start**: ``Environment.new_episode()`` of the ``browser`` env (a sandbox, the app host and the
  Playwright MCP server started, the task's data generated and seeded), then the same plus the first
  ``browser_navigate`` (Chromium launched, the first page served): p50 and p99 over the starts.
* **steps**: median ``browser_snapshot`` and ``browser_click`` (a link found in the snapshot, then back).
* **memory**: resident memory of every process of one episode's uid after its first page (RSS summed,
  and PSS summed: shared pages counted once per sharer's share).
* **concurrency**: 2, 4, 8 episodes at once, each starting, opening a page, taking a snapshot and
  clicking: the largest count with no failure (and how long the slowest took).

Targets: start p50 <= 2 s, 8 concurrent episodes without failures. Run: ``python -m bench browser``
(``BENCH_BROWSER_STARTS=N`` for another number of starts).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.environment import Environment
from openenv_mcp.types import CallTool
from openenv_mcp.worlds.browser.snapshot import Snapshot

STARTS = int(os.environ.get("BENCH_BROWSER_STARTS", "10"))
STEPS = 15
CONCURRENCY = (2, 4, 8)
URL = "http://wiki.localhost:8000/"
TASK = "wiki-team-lead"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def call(episode: Any, name: str, **arguments: Any) -> Any:
    obs = await episode.act(CallTool(name=name, arguments=arguments))
    if obs.result.is_error:
        raise RuntimeError(f"{name} failed: {obs.result.content[0].text[:300]}")
    return obs


def text(obs: Any) -> str:
    return "\n".join(getattr(c, "text", "") or "" for c in obs.result.content)


def episode_memory(episode: Any) -> tuple[float, float]:
    """(RSS, PSS) in MiB of every process running as the episode's uid."""
    uid = episode.per_episode_values().get("the episode's uid")
    rss = pss = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != int(uid or -1):
                continue
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return rss / 1024, pss / 1024


async def starts(environment: Environment) -> tuple[list[float], list[float], list[tuple[float, float]]]:
    ready, first_page, memory = [], [], []
    for i in range(STARTS):
        t = time.perf_counter()
        episode = await environment.new_episode(seed=i, task_id=TASK)
        try:
            ready.append(time.perf_counter() - t)
            await call(episode, "browser_navigate", url=URL)
            first_page.append(time.perf_counter() - t)
            if i < 3:
                memory.append(episode_memory(episode))
        finally:
            await episode.close()
    return ready, first_page, memory


async def steps(environment: Environment) -> tuple[float, float]:
    episode = await environment.new_episode(seed=0, task_id=TASK)
    try:
        await call(episode, "browser_navigate", url=URL)
        snaps, clicks = [], []
        for _ in range(STEPS):
            t = time.perf_counter()
            page = Snapshot.of_result(text(await call(episode, "browser_snapshot")))
            snaps.append(time.perf_counter() - t)
            t = time.perf_counter()
            await call(episode, "browser_click", element="Search", target=page.ref_of("link", "Search"))
            clicks.append(time.perf_counter() - t)
            await call(episode, "browser_navigate", url=URL)
        return statistics.median(snaps), statistics.median(clicks)
    finally:
        await episode.close()


async def one_concurrent(environment: Environment, seed: int) -> float:
    t = time.perf_counter()
    episode = await environment.new_episode(seed=seed, task_id=TASK)
    try:
        await call(episode, "browser_navigate", url=URL)
        page = Snapshot.of_result(text(await call(episode, "browser_snapshot")))
        await call(episode, "browser_click", element="Search", target=page.ref_of("link", "Search"))
        return time.perf_counter() - t
    finally:
        await episode.close()


async def level(environment: Environment, n: int) -> tuple[list[float], list[str]]:
    """``n`` episodes at once: their times and failures."""
    times: list[float] = []
    failures: list[str] = []

    async def run(seed: int) -> None:
        try:
            times.append(await one_concurrent(environment, seed))
        except Exception as e:  # noqa: BLE001 - counted and shown
            failures.append(f"{type(e).__name__}: {e}")

    async with anyio.create_task_group() as tg:
        for seed in range(n):
            tg.start_soon(run, seed)
    return times, failures


async def concurrent(environment: Environment) -> list[tuple[int, int, float]]:
    """``(episodes, failures, slowest seconds)`` per level; stops after the first level with failures."""
    out = []
    for n in CONCURRENCY:
        times, failures = await level(environment, n)
        out.append((n, len(failures), max(times) if times else float("nan")))
        if failures:
            Console().print(f"[red]{n} at once: {failures[0][:300]}[/red]")
            break
    return out


async def measure() -> dict[str, Any]:
    environment = load_environment("browser")
    try:
        ready, first_page, memory = await starts(environment)
        snap, click = await steps(environment)
        levels = await concurrent(environment)
    finally:
        await environment.aclose()
    return {
        "ready": ready,
        "first_page": first_page,
        "memory": memory,
        "snapshot": snap,
        "click": click,
        "levels": levels,
    }


def main() -> None:
    import openenv_mcp.envs as envs
    from openenv_mcp.worlds.browser.install import missing_message

    problem = missing_message(envs.browser)
    console = Console()
    if problem:
        console.print(f"[yellow]browser benchmark skipped:[/yellow] {problem}")
        return
    r = anyio.run(measure)
    table = Table(title=f"browser world (the real Playwright MCP server + Chromium, {STARTS} starts)")
    for col in ("measure", "p50", "p99", "target"):
        table.add_column(col, justify="right" if col != "measure" else "left")
    table.add_row(
        "episode start (sandbox, apps, Playwright MCP, seeded)",
        f"{pct(r['ready'], 0.5):.2f} s",
        f"{pct(r['ready'], 0.99):.2f} s",
        "",
    )
    table.add_row(
        "  + first page (Chromium launched)",
        f"{pct(r['first_page'], 0.5):.2f} s",
        f"{pct(r['first_page'], 0.99):.2f} s",
        "p50 <= 2 s",
    )
    table.add_row("browser_snapshot (median)", f"{r['snapshot'] * 1000:.0f} ms", "", "")
    table.add_row("browser_click (median)", f"{r['click'] * 1000:.0f} ms", "", "")
    if r["memory"]:
        rss = statistics.median(m[0] for m in r["memory"])
        pss = statistics.median(m[1] for m in r["memory"])
        table.add_row("memory per episode (RSS / PSS)", f"{rss:.0f} / {pss:.0f} MiB", "", "")
    ok = [n for n, failed, _ in r["levels"] if not failed]
    slowest = {n: s for n, _, s in r["levels"]}
    best = max(ok) if ok else 0
    table.add_row(
        "concurrent episodes without failures", str(best), f"slowest {slowest.get(best, float('nan')):.1f} s", ">= 8"
    )
    console.print(table)
