"""Servers for tests: :mod:`openenv_mcp.testing`, run from the repository root."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from openenv_mcp.testing import free_port, serving
from openenv_mcp.testing import running_server as _running_server

__all__ = ["ROOT", "free_port", "running_server", "serving"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def running_server(env: str = "echo", *args: str, token: str | None = None, timeout: float = 30.0) -> Iterator[str]:
    """:func:`openenv_mcp.testing.running_server` from the repository root (env files given by relative path)."""
    with _running_server(env, *args, token=token, timeout=timeout, cwd=ROOT) as url:
        yield url
