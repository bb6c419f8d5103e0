"""The coding env's filesystem tools: ``openenv_mcp.tool_servers.filesystem``, with file ownership kept in step.

The filesystem server runs in-process (as the environment server's user); the
shell and python servers run in the sandbox, and when the environment server
runs as root they run as an unprivileged uid that owns the workspace. A file
or folder ``fs_write`` / ``fs_move`` creates would then belong to root, and the
shell and interpreter could not change it. After each of those calls this
wrapper gives whatever in the workspace is not owned by the workspace's owner
back to it. Nothing changes when the owner is the server's own user.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.tools.tool_transform import Tool, forward

from openenv_mcp.tool_servers.filesystem import create_server as filesystem

MUTATING = {"write", "edit", "move"}
"""Tools that may create files or folders (``edit`` rewrites in place; kept for safety)."""


def reown(root: Path) -> int:
    """Give every entry under ``root`` not owned by ``root``'s owner to it; how many were changed."""
    if os.geteuid() != 0:
        return 0
    owner = os.stat(root)
    if owner.st_uid == os.geteuid():
        return 0
    changed = 0
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                if os.lstat(path).st_uid != owner.st_uid:
                    os.lchown(path, owner.st_uid, owner.st_gid)
                    changed += 1
            except OSError:
                continue
    return changed


async def create_server(ctx: Any) -> FastMCP:
    """The filesystem server for ``ctx.workspace`` whose creating tools re-own what they create."""
    inner = filesystem(ctx)
    root = Path(os.path.realpath(ctx.workspace))
    outer = FastMCP("filesystem", instructions=inner.instructions)
    for tool in await inner.list_tools():
        if tool.name not in MUTATING:
            outer.add_tool(tool)
            continue

        async def after(**kwargs: Any) -> Any:
            try:
                return await forward(**kwargs)
            finally:
                reown(root)

        outer.add_tool(Tool.from_tool(tool, transform_fn=after))
    return outer
