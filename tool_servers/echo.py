"""A one-tool MCP server: ``echo`` returns its text. Standalone: ``python -m openenv_mcp.tool_servers.echo``."""

from __future__ import annotations

from fastmcp import FastMCP

server = FastMCP("echo", instructions="Echoes text back.")


@server.tool
async def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


if __name__ == "__main__":
    server.run()
