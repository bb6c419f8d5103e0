"""Talking to a child tool server: its stdio pipes (:mod:`~openenv_mcp.isolation.transport.stdio`) and their
JSON-lines framing (:mod:`~openenv_mcp.isolation.transport.jsonlines`), the MCP client session every
MCP-speaking boundary shares (:mod:`~openenv_mcp.isolation.transport.mcpsession`), and one-shot commands
run the same way (:mod:`~openenv_mcp.isolation.transport.commands`).
"""
