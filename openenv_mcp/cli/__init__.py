"""The ``openenv-mcp`` command line (``python -m openenv_mcp.cli`` runs it too)."""

from openenv_mcp.cli.main import main

__all__ = ["main"]
