"""Workspace filesystem MCP tool server (list, read, write, edit, move, delete, search).

``create_server(ctx_or_path)`` builds a FastMCP server rooted at a folder;
``python -m openenv_mcp.tool_servers.filesystem --root DIR`` runs it standalone (stdio or HTTP).
"""

from .server import DEFAULT_LIMITS, OUTSIDE, create_server, resolve

__all__ = ["DEFAULT_LIMITS", "OUTSIDE", "create_server", "resolve"]
