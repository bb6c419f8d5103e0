"""``python -m openenv_mcp.tool_servers.conformance_fixture``: the fixture server over stdio."""

from .server import server

server.run()
