"""The official MCP conformance suite's fixture tools, resources and prompts (see ``server.py``)."""

from .server import server

__all__ = ["server"]
