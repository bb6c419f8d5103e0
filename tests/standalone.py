"""Run a reference tool server standalone over streamable HTTP for a test (``python -m openenv_mcp.tool_servers.NAME``)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def http_tool_server(module: str, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[str]:
    """Start ``python -m openenv_mcp.tool_servers.MODULE ARGS --transport http`` on a free port; yield its /mcp URL.

    The process is stopped (and killed if it must be) however the test ends."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", f"openenv_mcp.tool_servers.{module}", *args,
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


@asynccontextmanager
async def sandboxed_lean_server(module: str, tmp_path: Path) -> AsyncIterator[tuple[Any, Path, Path]]:
    """``python -m openenv_mcp.tool_servers.MODULE --lean`` behind the sandbox boundary, started.

    The env folder holds ``secret/answer.txt``, which the spec hides. Yields
    ``(connection, env_dir, workspace)``; the connection is closed however the test ends."""
    from conftest import need

    from openenv_mcp.core.spec import ToolServerSpec
    from openenv_mcp.isolation import ServerContext, connect

    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")
    env_dir = tmp_path / "env"
    (env_dir / "secret").mkdir(parents=True)
    (env_dir / "secret" / "answer.txt").write_text("42")
    ws = tmp_path / "ws"
    ws.mkdir()
    spec = ToolServerSpec(name=module, command=["python", "-m", f"openenv_mcp.tool_servers.{module}", "--root", "{workspace}",
                                                "--lean"], isolation="sandbox", hide=["secret"])
    conn = connect(spec, ServerContext(episode_id=f"{module}-sandbox-test", workspace=ws), env_dir)
    try:
        with anyio.fail_after(60):
            await conn.start()
        yield conn, env_dir, ws
    finally:
        await conn.close()
