"""Reference MCP tool servers. Each runs standalone: ``python -m tool_servers.NAME --help``."""
