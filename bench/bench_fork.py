"""Forking an episode at step 10 against starting a new one and replaying the same 10 calls.

For each built-in environment that runs here (``files``, ``sql``, ``echo``, ``coding`` when
bubblewrap is there): median ``Episode.fork(1)`` of an episode after a 10-call prefix, per strategy
the environment allows (``snapshot`` needs every server to declare it, docs/fork.md), against
``new_episode()`` plus the same 10 ``act()`` calls (what a trainer does without fork), and the
memory one fork adds (resident set of this process and its children, per fork, over 4 forks).
Targets (issue #31): a ``files`` or ``sql`` fork at step 10 <= 20 ms p50; a ``coding`` fork
<= 0.25x reset plus replay.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.episode import Episode
from openenv_mcp.core.fork import choose_strategy
from openenv_mcp.errors import ForkError
from openenv_mcp.types import CallTool

REPEATS = {"files": 15, "sql": 15, "echo": 15, "coding": 3}
TARGET_MS = 20.0
TARGET_RATIO = 0.25


def prefix(name: str) -> list[CallTool]:
    """Ten calls that change the world (or, for echo, just count)."""
    if name == "files":
        return [
            CallTool(name="fs_write", arguments={"path": f"notes/n{i}.txt", "content": f"{i}\n" * 50})
            for i in range(10)
        ]
    if name == "sql":
        first = CallTool(name="execute", arguments={"sql": "CREATE TABLE bench_fork (i INTEGER, v TEXT)"})
        rows = [
            CallTool(name="execute", arguments={"sql": f"INSERT INTO bench_fork VALUES ({i}, 'v{i}')"})
            for i in range(9)
        ]
        return [first, *rows]
    if name == "coding":
        return [CallTool(name="shell_run", arguments={"command": f"echo {i} >> notes.txt"}) for i in range(10)]
    return [CallTool(name="echo", arguments={"text": f"call {i}"}) for i in range(10)]


def tree_rss() -> int:
    """Resident bytes of this process and every descendant (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            rss[int(entry)] = int(fields[21]) * page
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    total, stack = 0, [os.getpid()]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


async def play(environment, actions: list[CallTool]) -> Episode:
    episode = await environment.new_episode(seed=0)
    for action in actions:
        await episode.act(action)
    return episode


async def measure(name: str) -> list[tuple[str, str, float, float, float, float]]:
    environment = load_environment(name)
    environment.max_steps = None  # echo's budget is 5: the prefix is 10 calls
    actions = prefix(name)
    repeats = REPEATS[name]
    rows = []
    try:
        base = []
        for _ in range(repeats):
            t = time.perf_counter()
            episode = await play(environment, actions)
            base.append(time.perf_counter() - t)
            await episode.close()
        baseline = statistics.median(base) * 1000
        original = await play(environment, actions)
        try:
            strategies = ["replay"]
            try:
                if choose_strategy(original) == "snapshot":
                    strategies.insert(0, "snapshot")
            except ForkError:
                strategies = []
            for strategy in strategies:
                samples = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    (forked,) = await original.fork(1, strategy)
                    samples.append(time.perf_counter() - t)
                    await forked.close()
                before = tree_rss()
                forks = await original.fork(4, strategy)
                per_fork = (tree_rss() - before) / 4 / 2**20
                for forked in forks:
                    await forked.close()
                p50 = statistics.median(samples) * 1000
                rows.append((name, strategy, p50, baseline, p50 / baseline, per_fork))
        finally:
            await original.close()
    finally:
        await environment.aclose()
    return rows


def main() -> None:
    names = ["files", "sql", "echo"] + (["coding"] if shutil.which("bwrap") else [])
    table = Table(title="fork at step 10 vs reset + replay of the same 10 calls (median)")
    for column in ("env", "strategy", "fork ms", "reset+replay ms", "ratio", "MiB per fork", "target"):
        table.add_column(column, justify="right" if column not in ("env", "strategy") else "left")
    for name in names:
        for env_name, strategy, p50, baseline, ratio, mib in anyio.run(measure, name):
            if env_name in ("files", "sql"):
                target = f"<= {TARGET_MS:g} ms: {'met' if p50 <= TARGET_MS else 'missed'}"
            elif env_name == "coding":
                target = f"<= {TARGET_RATIO:g}x: {'met' if ratio <= TARGET_RATIO else 'missed'}"
            else:
                target = ""
            table.add_row(env_name, strategy, f"{p50:.1f}", f"{baseline:.1f}", f"{ratio:.2f}x", f"{mib:.1f}", target)
    Console().print(table)


if __name__ == "__main__":
    main()
