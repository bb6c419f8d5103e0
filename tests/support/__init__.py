"""Helpers shared by this repository's tests (``from support import ROOT, need_docker``; the modules of
this package hold the larger ones: ``support.corpus``, ``support.containment``, ``support.scripted_model``...).

General helpers an environment author also needs (ports, servers, waiting, ``need``) are public, in
:mod:`openenv_mcp.testing`; fixtures are in ``tests/conftest.py``, which nothing imports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TypeVar

from openenv_mcp.testing import need

__all__ = [
    "ROOT",
    "docker_problem",
    "need_boundaries",
    "need_docker",
    "env_params",
    "replay_size",
    "representative_tasks",
    "scripted_actions",
]

_Size = TypeVar("_Size", int, float)

ROOT = Path(__file__).resolve().parents[2]
"""The checkout's root folder."""


def docker_problem(cli: str = "docker") -> str | None:
    """Why Docker cannot be used here (``cli``: the command the test runs), or None."""
    if shutil.which(cli) is None:
        return f"no {cli} CLI: run .ci/docker-setup.sh (installs docker.io and docker-compose, starts dockerd)"
    try:
        import docker

        if not hasattr(docker, "from_env"):  # a folder named docker/ on the path, not the SDK
            raise ImportError("docker")
        docker.from_env(timeout=10).ping()
    except ImportError:
        return "the Docker SDK is missing: pip install 'openenv-mcp[docker]'"
    except Exception as e:
        return f"the Docker engine does not answer ({e}): run .ci/docker-setup.sh"
    return None


def need_boundaries(spec) -> None:
    """:func:`need` what an environment's tool servers run behind (bubblewrap, Docker), named in the reason."""
    from openenv_mcp.errors import BoundaryError
    from openenv_mcp.isolation.boundaries.sandbox import bwrap_path

    kinds = {s.isolation for s in spec.tool_servers}
    if any(str(s.object or "").startswith("openenv_mcp.worlds.harbor") for s in spec.tool_servers):
        kinds.add("docker")  # a Harbor world's (in-process) tools drive the task's container
    if "sandbox" in kinds:
        try:
            bwrap_path()
        except BoundaryError as e:
            need(False, f"environment {spec.name!r} runs tool servers in the sandbox: {e}")
    if "docker" in kinds:
        problem = docker_problem()
        need(problem is None, f"environment {spec.name!r} runs tool servers in Docker: {problem}")


def representative_tasks(spec) -> str | None:
    """The task set a test that plays every task of every built-in environment plays: the env's
    ``[tasks.ci]`` set when it has one (a world whose whole set has a make target of its own, e.g.
    ``terminal``: ``make validate-terminal``), else ``None`` (all of them). ``OPENENV_MCP_ALL_TASKS=1``
    (``make test-all-tasks``): every task of every environment."""
    from openenv_mcp.definitions.tasks import parse_tasks_value

    if os.environ.get("OPENENV_MCP_ALL_TASKS") == "1":
        return None
    return "ci" if "ci" in parse_tasks_value(spec.tasks)[0] else None


def replay_size(quick: _Size, full: _Size) -> _Size:
    """How big a replayed attack is (episodes, rounds, process-tree depth): ``quick`` in ``make test``,
    ``full`` under ``OPENENV_MCP_REPLAY_FULL=1`` (``make test-replay``)."""
    return full if os.environ.get("OPENENV_MCP_REPLAY_FULL") == "1" else quick


def need_docker(*images: str, cli: str = "docker") -> None:
    """:func:`need` a Docker engine, then build ``images`` (``docker/build.sh`` names; layers cached)."""
    problem = docker_problem(cli)
    need(problem is None, problem or "")
    if images:
        subprocess.run([str(ROOT / "docker" / "build.sh"), *images], check=True, timeout=900)


async def scripted_actions(environment, task, kind: str = "reference", seed: int | None = None) -> list:
    """The calls ``environment``'s scripted ``kind`` solution makes on ``task`` with ``seed``: a fixed
    trajectory as it is; an interactive script (it reads each observation) played on a fresh in-process
    episode with that seed, so another face can replay exactly what it did."""
    script = environment.script(task, kind, seed)
    if not script.interactive:
        return script.actions()
    episode = await environment.new_episode(seed=seed, task_id=task.id)
    try:
        observation = None
        while not (episode.done or episode.truncated) and (action := script.next(observation)) is not None:
            observation = await episode.act(action)
    finally:
        script.close()
        await episode.close()
    return list(script.played)


SLOW_WORLDS = {"browser": 900}
"""Built-in worlds whose episodes start a real browser: seconds per episode, a longer test timeout."""


def env_params(names: list[str]) -> list:
    """Environment names as ``pytest.param``s, a slow world's with its longer timeout."""
    import pytest

    return [pytest.param(n, marks=pytest.mark.timeout(SLOW_WORLDS[n])) if n in SLOW_WORLDS else n for n in names]


BUILD_OUTPUT: dict[Path, str] = {}
"""What pip printed while :func:`build_wheel` built each wheel (the build backend's warnings included)."""


def build_wheel(source: Path, out: Path) -> Path:
    """``pip wheel`` of ``source`` into ``out``, one build at a time across test workers (setuptools builds
    in the source tree: two at once on one checkout break each other); pip's output in the error, and in
    :data:`BUILD_OUTPUT` after a build that worked."""
    import fcntl
    import sys
    import tempfile

    with open(Path(tempfile.gettempdir()) / "openenv-mcp-tests-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(out)],
            cwd=out,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if proc.returncode != 0:
        raise AssertionError(f"pip wheel {source} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-4000:]}")
    (wheel,) = out.glob("*.whl")
    BUILD_OUTPUT[wheel] = proc.stdout + proc.stderr
    return wheel
