"""A one-tool MCP server: ``echo`` returns its text.

Standalone: ``python -m openenv_mcp.tool_servers.echo``, or as a file, ``fastmcp run .../echo.py:server`` (the
HTTP image test does): so this one file imports nothing of its package."""

from __future__ import annotations

from fastmcp import FastMCP

server = FastMCP("echo", instructions="`echo` returns the text it is given.")
TITLE = "Echo text"


ANNOTATIONS = {
    "title": TITLE,
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}  # every hint explicit, as lean.hints gives the other reference tools


@server.tool(title=TITLE, annotations=ANNOTATIONS)
async def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


if __name__ == "__main__":
    server.run()
