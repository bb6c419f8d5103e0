"""Shared fixtures. Optional engines skip with a reason, unless OPENENV_MCP_REQUIRE_ALL=1 (CI)."""

from __future__ import annotations

import os

import pytest

REQUIRE_ALL = os.environ.get("OPENENV_MCP_REQUIRE_ALL") == "1"


def need(condition: bool, reason: str) -> None:
    """Skip (laptop) or fail (CI, OPENENV_MCP_REQUIRE_ALL=1) when an engine is missing."""
    if condition:
        return
    if REQUIRE_ALL:
        pytest.fail(f"required engine missing (OPENENV_MCP_REQUIRE_ALL=1): {reason}")
    pytest.skip(reason)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for the session (tests/pgserver.py): ``.url``, ``.url_for(db)``."""
    from pgserver import TempPostgres, find_bindir

    need(find_bindir() is not None, "PostgreSQL server binaries not found (apt-get install postgresql)")
    server = TempPostgres().start()
    try:
        yield server
    finally:
        server.stop()
