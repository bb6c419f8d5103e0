"""SQL MCP tool server: ``query`` (read-only), ``execute``, ``list_tables``, ``describe_table``.

Two backends behind one interface (:class:`~openenv_mcp.tool_servers.sql.backend.Backend`):
SQLite (simulation, the embedded default; :mod:`.sqlite`) and PostgreSQL
(production; :mod:`.postgres`). ``create_server(ctx)`` is the in-process factory
for ``env.toml``; ``python -m openenv_mcp.tool_servers.sql`` runs it standalone (stdio or HTTP).
"""

from .backend import Backend, SqlError
from .server import DEFAULT_MAX_ROWS, build_server, create_server, render_table

__all__ = ["DEFAULT_MAX_ROWS", "Backend", "SqlError", "build_server", "create_server", "render_table"]
