"""Harbor task folders as episodes: image build (cold, cached), episode start, verifier, 16 at once.

* **build, cold**: a task whose Dockerfile has a layer of its own (a fresh nonce, then a ``RUN``
  writing 2,000 files with the base image's Python), built from the local base (shared layers
  cached, as in a dataset); **cached**: the same call again (hash the context, find the tag).
* **start**: ``reset()`` of a cached task, p50 and p99 over :data:`STARTS` episodes (container
  created and started, the tools ready).
* **verifier**: ``submit`` to graded (stop the agent's processes, diff, copy the tests, run
  ``test.sh``, read the reward), p50, for the tiny task and for ``terminal``'s ``logs-top-ips``
  (a Python check over a 6,000-line log).
* **16 at once**: 16 episodes started together, each solving the task and submitting; failures,
  wall time and the start p50/p99 under that load.

Target (this machine): cached start p50 <= 1.5 s; no failure at 16. Needs a Docker engine.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

import openenv_mcp
from openenv_mcp import CallTool

STARTS = 20
GRADES = 8
CONCURRENT = 16
TARGET_START_P50 = 1.5

DOCKERFILE = """\
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${{BASE_IMAGE}}
RUN echo {nonce} > /etc/bench-nonce && mkdir -p /app/data && python3 -c "import os; [open(f'/app/data/f{{i}}.txt', 'w').write(str(i) * 100) for i in range(2000)]"
WORKDIR /app
"""
TEST_SH = '#!/bin/sh\n[ "$(cat /app/hello.txt 2>/dev/null)" = hello ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n'
SOLVE = CallTool(name="fs_write", arguments={"path": "/app/hello.txt", "content": "hello"})
SUBMIT = CallTool(name="submit", arguments={})


def _task(root: Path) -> Path:
    folder = root / "bench-hello"
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "task.toml").write_text(
        'schema_version = "1.1"\n[verifier]\ntimeout_sec = 60\n[environment]\nmemory_mb = 256\n'
    )
    (folder / "instruction.md").write_text("Write hello to /app/hello.txt.\n")
    (folder / "environment" / "Dockerfile").write_text(DOCKERFILE.format(nonce=uuid.uuid4().hex))
    (folder / "tests" / "test.sh").write_text(TEST_SH)
    (folder / "solution" / "solve.sh").write_text("#!/bin/sh\necho hello > /app/hello.txt\n")
    return folder


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _builds(folder: Path) -> tuple[float, float, str]:
    from openenv_mcp.isolation.containers.engine import docker_client
    from openenv_mcp.worlds.harbor.images import ensure_image
    from openenv_mcp.worlds.harbor.taskformat import read_task

    definition = read_task(folder)
    client = docker_client()
    t = time.perf_counter()
    report = ensure_image(client, definition.environment, definition.name)
    cold = time.perf_counter() - t
    t = time.perf_counter()
    again = ensure_image(client, definition.environment, definition.name)
    cached = time.perf_counter() - t
    assert report.built and not again.built
    return cold, cached, report.tag


async def _starts(target: str) -> list[float]:
    samples = []
    for i in range(STARTS):
        env = openenv_mcp.make_async(target)
        try:
            t = time.perf_counter()
            await env.reset(seed=i)
            samples.append(time.perf_counter() - t)
        finally:
            await env.close()
    return samples


async def _grades(target: str, actions: list[CallTool], task_id: str | None = None) -> list[float]:
    samples = []
    for i in range(GRADES):
        env = openenv_mcp.make_async(target)
        try:
            await env.reset(seed=i, task_id=task_id)
            for action in actions:
                await env.step(action)
            t = time.perf_counter()
            obs = await env.step(SUBMIT)
            samples.append(time.perf_counter() - t)
            assert obs.done and obs.reward == 1.0, obs.info
        finally:
            await env.close()
    return samples


async def _concurrent(target: str) -> tuple[int, float, list[float]]:
    failures = 0
    starts: list[float] = []

    async def one(i: int) -> None:
        nonlocal failures
        env = openenv_mcp.make_async(target)
        try:
            t = time.perf_counter()
            await env.reset(seed=i)
            starts.append(time.perf_counter() - t)
            await env.step(SOLVE)
            obs = await env.step(SUBMIT)
            if obs.reward != 1.0:
                failures += 1
        except Exception:  # noqa: BLE001 - counted: the benchmark reports failures, it does not stop
            failures += 1
        finally:
            await env.close()

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(CONCURRENT):
            tg.start_soon(one, i)
    return failures, time.perf_counter() - t, starts


def _oracle(target: str, task_id: str) -> list[CallTool]:
    from openenv_mcp.client.registry import load_environment

    environment = load_environment(target)
    return [a for a in environment.trajectory(environment.tasks.get(task_id), "reference") if a.name != "submit"]


def main() -> None:
    console = Console()
    with tempfile.TemporaryDirectory(prefix="bench-harbor-") as tmp:
        folder = _task(Path(tmp))
        target = f"harbor:{folder}"
        cold, cached, tag = _builds(folder)
        starts = anyio.run(_starts, target)
        grades = anyio.run(_grades, target, [SOLVE])
        terminal = anyio.run(_grades, "terminal", _oracle("terminal", "logs-top-ips"), "logs-top-ips")
        failures, wall, busy = anyio.run(_concurrent, target)
    from openenv_mcp.isolation.containers.engine import docker_client, wait_removed

    wait_removed(120)
    docker_client().images.remove(tag, force=True)
    table = Table(title="Harbor tasks: build, start, verify (python -m bench harbor)")
    for col in ("measure", "value", "target"):
        table.add_column(col)
    p50 = statistics.median(starts)
    table.add_row("image build, cold (own layer, shared base)", f"{cold:.1f} s", "")
    table.add_row("image build, cached (hash + lookup)", f"{cached * 1e3:.0f} ms", "")
    table.add_row(
        f"episode start, cached, p50 / p99 ({STARTS})",
        f"{p50:.2f} s / {_pct(starts, 0.99):.2f} s",
        f"p50 <= {TARGET_START_P50} s: {'met' if p50 <= TARGET_START_P50 else 'MISSED'}",
    )
    table.add_row(f"verifier, tiny test.sh, p50 ({GRADES})", f"{statistics.median(grades):.2f} s", "")
    table.add_row(f"verifier, terminal logs-top-ips, p50 ({GRADES})", f"{statistics.median(terminal):.2f} s", "")
    table.add_row(
        f"{CONCURRENT} concurrent episodes (start, solve, grade)",
        f"{CONCURRENT - failures}/{CONCURRENT} ok in {wall:.1f} s; start p50 {statistics.median(busy):.2f} s, p99 {_pct(busy, 0.99):.2f} s"
        if busy
        else "all failed",
        f"no failure: {'met' if failures == 0 else 'MISSED'}",
    )
    console.print(table)


if __name__ == "__main__":
    main()
