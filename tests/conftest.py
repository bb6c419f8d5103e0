"""Shared fixtures of this repository's tests. Optional engines skip with a reason, unless
OPENENV_MCP_REQUIRE_ALL=1 (CI). Nothing imports this module: helpers are in the package ``tests/support``
(``from support import ROOT``) and, for what environment authors use too, :mod:`openenv_mcp.testing`."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from openenv_mcp.testing import need

SPREAD = ("tests/conformance/test_corpus.py",)
"""Files whose tests xdist hands out one by one (each is a slow conformance run of a third-party server):
every other file's tests stay together on one worker (``--dist loadfile``: a file's fixtures are built once)."""


TOGETHER = {
    path: "envpkg"
    for path in (
        "tests/cli/test_init.py",
        "tests/cli/test_init_wrapped.py",
        "tests/cli/test_discover.py",
        "tests/cli/test_build.py",
        "tests/cli/test_publish.py",
    )
}
"""Files that share one costly fixture built once per worker (tests/support/envpkg.py: a wheel of the checkout in a
fresh virtualenv and three packages made by ``init``): xdist hands them to one worker as one unit, so it is built once."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under ``--dist loadfile``, the same scheduling with each test of a :data:`SPREAD` file as its own unit and
    the files of :data:`TOGETHER` as one."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _FileOrTestScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD else TOGETHER.get(path, path)

    return _FileOrTestScheduling(config, log)


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
    """A real PostgreSQL server for the session (tests/support/pgserver.py): ``.url``, ``.url_for(db)``."""
    from support.pgserver import TempPostgres, find_bindir

    need(find_bindir() is not None, "PostgreSQL server binaries not found (apt-get install postgresql)")
    need(importlib.util.find_spec("psycopg") is not None, "psycopg not installed (pip install 'openenv-mcp[postgres]')")
    server = TempPostgres().start()
    try:
        yield server
    finally:
        server.stop()
