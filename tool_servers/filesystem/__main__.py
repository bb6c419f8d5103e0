"""Run the filesystem tool server standalone: ``python -m openenv_mcp.tool_servers.filesystem --root DIR``.

stdio (the default) is what IDE ``mcpServers`` configs start; ``--transport http``
serves streamable HTTP at ``http://HOST:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import sys

from .._standalone import parser, root_dir, serve, serve_lean
from .core import DEFAULT_LIMITS


def build_parser() -> argparse.ArgumentParser:
    p = parser(
        "filesystem",
        "MCP filesystem tool server confined to one folder: list, read, write, edit, move, delete, search.",
        port=8765,
        lean=True,
        root_help="the folder the tools may see and change (paths outside it are refused)",
    )
    p.add_argument(
        "--max-read-chars",
        type=int,
        default=DEFAULT_LIMITS["max_read_chars"],
        help="characters read returns before cutting with a marker (default %(default)s)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = root_dir(args)
    if root is None:
        return 2
    if args.lean:
        from .stdio import serve_lean as loop

        return serve_lean(loop, args, root, max_read_chars=args.max_read_chars)
    from .server import create_server

    server = create_server(root, max_read_chars=args.max_read_chars)
    return serve(server, args, f"filesystem MCP server for {str(root.resolve())!r}")


if __name__ == "__main__":
    sys.exit(main())
