"""Run the filesystem tool server standalone: ``python -m tool_servers.filesystem --root DIR``.

stdio (the default) is what IDE ``mcpServers`` configs start; ``--transport http``
serves streamable HTTP at ``http://HOST:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .server import DEFAULT_LIMITS, create_server


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tool_servers.filesystem",
        description="MCP filesystem tool server confined to one folder: list, read, write, edit, move, delete, search.",
    )
    parser.add_argument("--root", required=True, type=Path,
                        help="the folder the tools may see and change (paths outside it are refused)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                        help="stdio (for IDE mcpServers configs, default) or streamable HTTP")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); the endpoint is /mcp")
    parser.add_argument("--max-read-chars", type=int, default=DEFAULT_LIMITS["max_read_chars"],
                        help="characters read returns before cutting with a marker (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = args.root.expanduser()
    if not root.is_dir():
        print(f"error: --root {str(root)!r} is not a directory; create it first", file=sys.stderr)
        return 2
    server = create_server(root, max_read_chars=args.max_read_chars)
    if args.transport == "stdio":
        server.run("stdio", show_banner=False)
    else:
        print(f"filesystem MCP server for {str(root.resolve())!r} at http://{args.host}:{args.port}/mcp",
              file=sys.stderr, flush=True)
        server.run("http", show_banner=False, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
