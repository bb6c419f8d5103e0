"""Shared fixtures of this repository's tests. Optional engines skip with a reason, unless
OPENENV_MCP_REQUIRE_ALL=1 (CI). General helpers (ports, servers, waiting, ``need``) are in
:mod:`openenv_mcp.testing`: tests import them from there."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from openenv_mcp.testing import need

__all__ = ["ROOT", "docker_problem", "need_boundaries", "need_docker", "representative_tasks"]

ROOT = Path(__file__).resolve().parent.parent


def docker_problem(cli: str = "docker") -> str | None:
    """Why Docker cannot be used here (``cli``: the command the test runs), or None."""
    if shutil.which(cli) is None:
        return f"no {cli} CLI: run .ci/docker-setup.sh (installs docker.io and docker-compose, starts dockerd)"
    try:
        import docker

        docker.from_env(timeout=10).ping()
    except ImportError:
        return "the Docker SDK is missing: pip install 'openenv-mcp[docker]'"
    except Exception as e:
        return f"the Docker engine does not answer ({e}): run .ci/docker-setup.sh"
    return None


def need_boundaries(spec) -> None:
    """:func:`need` what an environment's tool servers run behind (bubblewrap, Docker), named in the reason."""
    from openenv_mcp.errors import BoundaryError
    from openenv_mcp.isolation.sandbox import bwrap_path

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
    ``terminal``: ``make validate-terminal``), else ``None`` (all of them)."""
    from openenv_mcp.core.tasks import parse_tasks_value

    return "ci" if "ci" in parse_tasks_value(spec.tasks)[0] else None


def need_docker(*images: str, cli: str = "docker") -> None:
    """:func:`need` a Docker engine, then build ``images`` (``docker/build.sh`` names; layers cached)."""
    problem = docker_problem(cli)
    need(problem is None, problem or "")
    if images:
        subprocess.run([str(ROOT / "docker" / "build.sh"), *images], check=True, timeout=900)


@pytest.fixture(autouse=True)
def _tmp_path_reachable_by_episode_uids(request: pytest.FixtureRequest) -> None:
    """As root without bubblewrap, a tool server under a test's ``tmp_path`` must be reachable by the
    unprivileged episode uid it runs as (the process boundary refuses otherwise, by design), and pytest
    makes its temp folders private (0700): open the test's folder (o+rx) and its parents (o+x). With
    bubblewrap the boundary exposes private folders itself; not as root, no uid is dropped to."""
    if os.geteuid() != 0 or shutil.which("bwrap") or "tmp_path" not in request.fixturenames:
        return
    path: Path = request.getfixturevalue("tmp_path")
    path.chmod(path.stat().st_mode | 0o005)
    for folder in path.parents:
        if folder == Path(folder.anchor):
            break
        folder.chmod(folder.stat().st_mode | 0o001)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for the session (tests/pgserver.py): ``.url``, ``.url_for(db)``."""
    from pgserver import TempPostgres, find_bindir

    need(find_bindir() is not None, "PostgreSQL server binaries not found (apt-get install postgresql)")
    need(importlib.util.find_spec("psycopg") is not None, "psycopg not installed (pip install 'openenv-mcp[postgres]')")
    server = TempPostgres().start()
    try:
        yield server
    finally:
        server.stop()
