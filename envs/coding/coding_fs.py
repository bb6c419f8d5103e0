"""The coding env's filesystem tools: ``tool_servers.filesystem``, creating files as the workspace's owner.

The filesystem server runs in-process (as the environment server's user); the
shell and python servers run in the sandbox, and when the environment server
runs as root they run as an unprivileged uid that owns the workspace. What
``fs_write`` / ``fs_move`` create is given to that owner as it is created
(``fchown`` on the new file's descriptor, never by path, never anything that
already existed), so the sandboxed tools can change it. Every path is opened
by descriptor under the workspace (see ``tool_servers/filesystem/fdpath.py``),
so code the agent runs in the sandbox cannot redirect these tools to the host
by swapping folders and links while they run.
"""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from tool_servers.filesystem import create_server as filesystem


async def create_server(ctx: Any) -> FastMCP:
    """The filesystem server for ``ctx.workspace``; what it creates belongs to the workspace's owner."""
    return filesystem(ctx, owner="root")
