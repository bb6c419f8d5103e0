"""The ``openenv-mcp`` command line (``python -m openenv_mcp.cli`` runs it too).

``stdio`` goes to :mod:`openenv_mcp.cli.stdio` before anything else is imported: a harness waits for
its ``initialize`` answer (see that module)."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["stdio"]:
        from openenv_mcp.cli.stdio import main as stdio

        return stdio(args[1:])
    from openenv_mcp.cli.app import main as full

    return full(argv)
