"""Run the python tool server standalone: ``python -m openenv_mcp.tool_servers.python --root DIR``.

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
        "python",
        "MCP python tool server: a persistent interpreter (child process) working in one folder, "
        "with time, memory and output limits.",
        port=8767,
        lean=True,
        root_help="the interpreter's working folder, first on sys.path (NOT a confinement: code has your rights)",
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=int(DEFAULT_LIMITS["memory_mb"]),
        help="the interpreter's address-space limit in MiB, 0 for none (default %(default)s)",
    )
    p.add_argument(
        "--cpu-seconds",
        type=int,
        default=int(DEFAULT_LIMITS["cpu_seconds"]),
        help="the interpreter's CPU-time limit in seconds, 0 for none (default %(default)s)",
    )
    p.add_argument(
        "--max-output-chars",
        type=int,
        default=int(DEFAULT_LIMITS["max_output_chars"]),
        help="characters of stdout, stderr, result and traceback kept before a marker (default %(default)s)",
    )
    add_timeout_flags(p, DEFAULT_LIMITS, "code")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = root_dir(args)
    if root is None:
        return 2
    limits = dict(
        memory_mb=args.memory_mb,
        cpu_seconds=args.cpu_seconds,
        max_output_chars=args.max_output_chars,
        default_timeout=args.default_timeout,
        max_timeout=args.max_timeout,
    )
    if args.lean:
        from .core import serve_lean as loop

        return serve_lean(loop, args, root, **limits)
    from .server import create_server

    return serve(create_server(root, **limits), args, f"python MCP server in {str(root.resolve())!r}")


if __name__ == "__main__":
    sys.exit(main())
