"""A one-tool MCP server: ``echo`` returns its text. Standalone: ``python -m openenv_mcp.tool_servers.echo``."""

from __future__ import annotations

from fastmcp import FastMCP

from .lean import hints

server = FastMCP("echo", instructions="`echo` returns the text it is given.")
TITLE = "Echo text"


@server.tool(
    title=TITLE, annotations=hints(TITLE, read_only=True, destructive=False, idempotent=True, open_world=False)
)
async def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


if __name__ == "__main__":
    server.run()
