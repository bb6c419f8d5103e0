"""Shell MCP tool server: run one command in a workspace folder, with a timeout and an output cap.

``create_server(ctx_or_path)`` builds a FastMCP server whose commands run in a
folder; ``python -m openenv_mcp.tool_servers.shell --root DIR`` runs it standalone (stdio or
HTTP); ``--lean`` serves stdio without importing MCP libraries (fast start, used
by environments).
"""

from typing import TYPE_CHECKING, Any

from .core import DEFAULT_LIMITS, OUTPUT_SCHEMA, run_command

if TYPE_CHECKING:
    from .server import create_server

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "create_server", "run_command"]


def __getattr__(name: str) -> Any:  # FastMCP is imported only when the FastMCP server is wanted
    if name == "create_server":
        from .server import create_server

        return create_server
    raise AttributeError(name)
