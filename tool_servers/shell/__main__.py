"""Run the shell tool server standalone: ``python -m openenv_mcp.tool_servers.shell --root DIR``.

stdio (the default) is what IDE ``mcpServers`` configs start; ``--transport http``
serves streamable HTTP at ``http://HOST:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import sys

from .._standalone import add_timeout_flags, parser, root_dir, serve, serve_lean
from .core import DEFAULT_LIMITS


def build_parser() -> argparse.ArgumentParser:
    p = parser(
        "shell",
        "MCP shell tool server: run a command in one folder, with a timeout, an output cap and the exit code.",
        port=8766,
        lean=True,
        root_help="the working folder of every command (NOT a confinement: commands have your rights)",
    )
    p.add_argument(
        "--max-output-bytes",
        type=int,
        default=int(DEFAULT_LIMITS["max_output_bytes"]),
        help="bytes of stdout and of stderr kept before cutting with a marker (default %(default)s)",
    )
    add_timeout_flags(p, DEFAULT_LIMITS, "a command")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = root_dir(args)
    if root is None:
        return 2
    limits = dict(
        max_output_bytes=args.max_output_bytes, default_timeout=args.default_timeout, max_timeout=args.max_timeout
    )
    if args.lean:
        from .core import serve_lean as loop

        return serve_lean(loop, args, root, **limits)
    from .server import create_server

    return serve(create_server(root, **limits), args, f"shell MCP server in {str(root.resolve())!r}")


if __name__ == "__main__":
    sys.exit(main())
