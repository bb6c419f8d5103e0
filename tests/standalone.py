"""Run a reference tool server standalone over streamable HTTP for a test (``python -m tool_servers.NAME``)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def http_tool_server(module: str, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[str]:
    """Start ``python -m tool_servers.MODULE ARGS --transport http`` on a free port; yield its /mcp URL.

    The process is stopped (and killed if it must be) however the test ends."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", f"tool_servers.{module}", *args,
                             "--transport", "http", "--port", str(port)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        with anyio.fail_after(60):
            while True:  # wait until it accepts connections
                assert proc.poll() is None, f"server exited: {proc.stderr.read()}"
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    await anyio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()
