"""Run the shell tool server standalone: ``python -m tool_servers.shell --root DIR``.

stdio (the default) is what IDE ``mcpServers`` configs start; ``--transport http``
serves streamable HTTP at ``http://HOST:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .core import DEFAULT_LIMITS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tool_servers.shell",
        description="MCP shell tool server: run a command in one folder, with a timeout, an output cap and the exit code.",
    )
    parser.add_argument("--root", required=True, type=Path,
                        help="the working folder of every command (NOT a confinement: commands have your rights)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                        help="stdio (for IDE mcpServers configs, default) or streamable HTTP")
    parser.add_argument("--lean", action="store_true",
                        help="serve stdio with the built-in dependency-free MCP loop (starts in ~50 ms instead of ~1 s; "
                             "same tools and results; what environments use)")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8766, help="HTTP port (default 8766); the endpoint is /mcp")
    parser.add_argument("--max-output-bytes", type=int, default=int(DEFAULT_LIMITS["max_output_bytes"]),
                        help="bytes of stdout and of stderr kept before cutting with a marker (default %(default)s)")
    parser.add_argument("--default-timeout", type=float, default=DEFAULT_LIMITS["default_timeout"],
                        help="seconds a command may run when the call gives no timeout (default %(default)s)")
    parser.add_argument("--max-timeout", type=float, default=DEFAULT_LIMITS["max_timeout"],
                        help="largest timeout a call may ask for (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = args.root.expanduser()
    if not root.is_dir():
        print(f"error: --root {str(root)!r} is not a directory; create it first", file=sys.stderr)
        return 2
    limits = dict(max_output_bytes=args.max_output_bytes, default_timeout=args.default_timeout,
                  max_timeout=args.max_timeout)
    if args.lean:
        if args.transport != "stdio":
            print("error: --lean serves stdio only; drop --lean for --transport http", file=sys.stderr)
            return 2
        import asyncio

        from .core import serve_lean

        asyncio.run(serve_lean(root, **limits))
        return 0
    from .server import create_server

    server = create_server(root, **limits)
    if args.transport == "stdio":
        server.run("stdio", show_banner=False)
    else:
        print(f"shell MCP server in {str(root.resolve())!r} at http://{args.host}:{args.port}/mcp",
              file=sys.stderr, flush=True)
        server.run("http", show_banner=False, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
