"""Python MCP tool server: a stateful interpreter (child process) with time, memory and output limits.

``create_server(ctx_or_path)`` builds a FastMCP server whose interpreter works
in a folder; ``python -m tool_servers.python --root DIR`` runs it standalone.
"""

from .server import DEFAULT_LIMITS, OUTPUT_SCHEMA, Interpreter, create_server

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "Interpreter", "create_server"]
