"""What every reference tool server's ``__main__`` shares: the common flags and the run loop.

Each server adds its own flags to :func:`parser` and calls :func:`serve` with the
FastMCP server it built (or :func:`serve_lean` for the dependency-free stdio loop).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

__all__ = ["NAMESPACES", "add_timeout_flags", "parser", "root_dir", "serve", "serve_lean"]

NAMESPACES = {"filesystem": "fs", "shell": "shell", "python": "python"}
"""The namespace each built-in environment gives a reference server (``fs_read``, ``shell_run``...).
Run standalone, a server prefixes its tools with it too, so an agent meets the same names whether
it was trained on the environment or deployed on the server alone (``--namespace ''`` for bare names).
``--lean`` (what an environment starts) serves bare names: the environment adds its namespace."""


def parser(
    name: str, description: str, *, port: int, root_help: str | None = None, lean: bool = False
) -> argparse.ArgumentParser:
    """A parser with ``--root`` (when ``root_help``), ``--transport``, ``--host``, ``--port`` [, ``--lean``]."""
    p = argparse.ArgumentParser(
        prog=f"python -m openenv_mcp.tool_servers.{name}", description=description, allow_abbrev=False
    )
    if root_help:
        p.add_argument("--root", required=True, type=Path, help=root_help)
    if name in NAMESPACES:
        p.add_argument(
            "--namespace",
            default=None,
            help=f"tool-name prefix, as in the built-in environments (default {NAMESPACES[name]!r}: "
            f"{NAMESPACES[name]}_TOOL); '' for bare names; not with --lean",
        )
        p.set_defaults(default_namespace=NAMESPACES[name])
    p.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (for IDE mcpServers configs, default) or streamable HTTP",
    )
    if lean:
        p.add_argument(
            "--lean",
            action="store_true",
            help="serve stdio with the built-in dependency-free MCP loop (starts in ~50 ms instead of "
            "~1 s; same tools and results; what environments use)",
        )
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=port, help=f"HTTP port (default {port}); the endpoint is /mcp")
    return p


def add_timeout_flags(p: argparse.ArgumentParser, limits: dict[str, Any], what: str) -> None:
    """``--default-timeout`` and ``--max-timeout`` for servers that run ``what`` (code, commands)."""
    p.add_argument(
        "--default-timeout",
        type=float,
        default=limits["default_timeout"],
        help=f"seconds {what} may run when the call gives no timeout (default %(default)s)",
    )
    p.add_argument(
        "--max-timeout",
        type=float,
        default=limits["max_timeout"],
        help="largest timeout a call may ask for (default %(default)s)",
    )


def root_dir(args: argparse.Namespace) -> Path | None:
    """``--root`` expanded, or ``None`` after printing what to do when it is not a folder."""
    root = args.root.expanduser()
    if not root.is_dir():
        print(f"error: --root {str(root)!r} is not a directory; create it first", file=sys.stderr)
        return None
    return root


def serve(server: Any, args: argparse.Namespace, label: str) -> int:
    """Run a FastMCP ``server`` over the transport ``args`` ask for, its tools under ``--namespace``."""
    namespace = getattr(args, "namespace", None)
    if namespace is None:
        namespace = getattr(args, "default_namespace", "")
    if namespace:
        from fastmcp import FastMCP

        outer = FastMCP(server.name, instructions=server.instructions)
        outer.mount(server, namespace=namespace)  # tools listed and called as {namespace}_{tool}
        server = outer
    if args.transport == "stdio":
        server.run("stdio", show_banner=False)
    else:
        print(f"{label} at http://{args.host}:{args.port}/mcp", file=sys.stderr, flush=True)
        server.run("http", show_banner=False, host=args.host, port=args.port)
    return 0


def serve_lean(loop: Callable[..., Coroutine[Any, Any, None]], args: argparse.Namespace, *a: Any, **kw: Any) -> int:
    """Run a dependency-free stdio loop (``--lean``); refuses HTTP with a clear error."""
    if args.transport != "stdio":
        print("error: --lean serves stdio only; drop --lean for --transport http", file=sys.stderr)
        return 2
    if getattr(args, "namespace", None):
        print("error: --lean serves bare tool names for an environment to namespace; drop --namespace", file=sys.stderr)
        return 2
    asyncio.run(loop(*a, **kw))
    return 0
