"""Reference MCP tool servers. Each runs standalone: ``python -m openenv_mcp.tool_servers.NAME --help``."""
