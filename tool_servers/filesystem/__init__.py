"""Workspace filesystem MCP tool server (list, read, write, edit, move, delete, search).

``create_server(ctx_or_path)`` builds a FastMCP server rooted at a folder;
``python -m openenv_mcp.tool_servers.filesystem --root DIR`` runs it standalone (stdio or HTTP),
``--lean`` serves stdio without MCP libraries (what sandboxed environments start).
"""

from .core import DEFAULT_LIMITS, NOT_REGULAR, OUTSIDE


def create_server(*args, **kwargs):  # type: ignore[no-untyped-def]
    """:func:`openenv_mcp.tool_servers.filesystem.server.create_server` (imported on use: FastMCP is slow to import)."""
    from .server import create_server as create

    return create(*args, **kwargs)


__all__ = ["DEFAULT_LIMITS", "NOT_REGULAR", "OUTSIDE", "create_server"]
