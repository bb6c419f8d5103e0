"""``openenv-mcp mcp-config ENV [--mode prod] [--workspace DIR]``: a ready ``mcpServers`` entry.

Prints JSON to paste into an MCP client's config (IDE, desktop assistant, agent harness). It starts
``openenv-mcp stdio ENV`` with absolute paths only: this virtualenv's Python (so no ``PATH``,
activation or ``HOME`` is needed: MCP clients start servers with a minimal environment) and, when
ENV is a file or folder, its absolute path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "entry", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``mcp-config`` subcommand to the CLI's subparsers."""
    p = sub.add_parser("mcp-config", help="print an mcpServers entry (absolute paths) that serves ENV over stdio",
                       description=(__doc__ or "").partition("\n")[0])
    p.add_argument("env", help="environment name, env.toml path or folder")
    p.add_argument("--mode", choices=["sim", "prod"], default="sim",
                   help="prod: the production variant of the tool servers (default sim)")
    p.add_argument("--workspace", metavar="DIR", default=None,
                   help="folder the episode's workspace is created in (default: the system temp folder)")
    p.add_argument("--name", default=None, help="key of the entry (default: openenv-ENV)")
    p.set_defaults(func=run)


def entry(env: str, mode: str = "sim", workspace: str | None = None) -> tuple[str, dict[str, Any]]:
    """(name, server entry) for ``openenv-mcp stdio env``; raises UnknownEnvironment for an unknown env."""
    from ..client.registry import find_env

    spec = find_env(env)  # fails here, not in the MCP client, when ENV is wrong
    path = Path(env)
    target = str(path.resolve()) if path.exists() and (path.is_dir() or path.suffix == ".toml") else env
    server: dict[str, Any] = {"command": sys.executable,
                              "args": ["-m", "openenv_mcp.cli", "stdio", target, "--mode", mode],
                              "env": {}}
    if workspace is not None:
        folder = Path(workspace).expanduser().resolve()
        folder.mkdir(parents=True, exist_ok=True)
        server["env"]["OPENENV_MCP_WORKDIR"] = str(folder)
    return f"openenv-{spec.name}", server


def run(args: argparse.Namespace) -> int:
    name, server = entry(args.env, args.mode, args.workspace)
    print(json.dumps({"mcpServers": {args.name or name: server}}, indent=2))
    return 0
