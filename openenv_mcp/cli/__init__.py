"""The ``openenv-mcp`` command line (``python -m openenv_mcp.cli`` runs it too)."""

from .main import main

__all__ = ["main"]
