"""Python MCP tool server: a stateful interpreter (child process) with time, memory and output limits.

``create_server(ctx_or_path)`` builds a FastMCP server whose interpreter works
in a folder; ``python -m openenv_mcp.tool_servers.python --root DIR`` runs it standalone
(stdio or HTTP); ``--lean`` serves stdio without importing MCP libraries (fast
start, used by environments).
"""

from typing import TYPE_CHECKING, Any

from .core import DEFAULT_LIMITS, OUTPUT_SCHEMA, Interpreter

if TYPE_CHECKING:
    from .server import create_server

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "Interpreter", "create_server"]


def __getattr__(name: str) -> Any:  # FastMCP is imported only when the FastMCP server is wanted
    if name == "create_server":
        from .server import create_server

        return create_server
    raise AttributeError(name)
