"""A reference tool server started behind the sandbox boundary for a test (``--lean``). Standalone
over streamable HTTP: :func:`openenv_mcp.testing.http_tool_server`."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

__all__ = ["sandboxed_lean_server"]


@asynccontextmanager
async def sandboxed_lean_server(module: str, tmp_path: Path) -> AsyncIterator[tuple[Any, Path, Path]]:
    """``python -m openenv_mcp.tool_servers.MODULE --lean`` behind the sandbox boundary, started.

    The env folder holds ``secret/answer.txt``, which the spec hides. Yields
    ``(connection, env_dir, workspace)``; the connection is closed however the test ends."""
    from openenv_mcp.definitions.spec import ToolServerSpec
    from openenv_mcp.isolation import ServerContext, connect
    from openenv_mcp.testing import need

    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")
    env_dir = tmp_path / "env"
    (env_dir / "secret").mkdir(parents=True)
    (env_dir / "secret" / "answer.txt").write_text("42")
    ws = tmp_path / "ws"
    ws.mkdir()
    spec = ToolServerSpec(
        name=module,
        command=["python", "-m", f"openenv_mcp.tool_servers.{module}", "--root", "{workspace}", "--lean"],
        isolation="sandbox",
        hide=["secret"],
    )
    conn = connect(spec, ServerContext(episode_id=f"{module}-sandbox-test", workspace=ws), env_dir)
    try:
        with anyio.fail_after(60):
            await conn.start()
        yield conn, env_dir, ws
    finally:
        await conn.close()
