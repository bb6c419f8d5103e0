"""Shell MCP tool server: run one command in a workspace folder, with a timeout and an output cap.

``create_server(ctx_or_path)`` builds a FastMCP server whose commands run in a
folder; ``python -m tool_servers.shell --root DIR`` runs it standalone (stdio or HTTP).
"""

from .server import DEFAULT_LIMITS, OUTPUT_SCHEMA, create_server, run_command

__all__ = ["DEFAULT_LIMITS", "OUTPUT_SCHEMA", "create_server", "run_command"]
