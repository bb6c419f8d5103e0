"""``openenv-mcp mcp-config ENV [--mode prod --workspace DIR [--read-only]]``: a ready ``mcpServers`` entry.

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
    p = sub.add_parser(
        "mcp-config",
        help="print an mcpServers entry (absolute paths) that serves ENV over stdio",
        description=(__doc__ or "").partition("\n")[0],
    )
    p.add_argument("env", help="environment name, env.toml path or folder")
    p.add_argument(
        "--mode",
        choices=["sim", "prod"],
        default="sim",
        help="prod: the production variant of the tool servers (default sim)",
    )
    p.add_argument(
        "--workspace",
        metavar="DIR",
        default=None,
        help="production: the user's folder the tools work on, in place (see docs/deploy.md)",
    )
    p.add_argument("--read-only", action="store_true", help="production: the tools may read --workspace, not change it")
    p.add_argument("--name", default=None, help="key of the entry (default: openenv-ENV)")
    p.set_defaults(func=run)


def entry(
    env: str, mode: str = "sim", workspace: str | None = None, read_only: bool = False
) -> tuple[str, dict[str, Any]]:
    """(name, server entry) for ``openenv-mcp stdio env``; raises an OpenEnvError for an unknown env
    or a workspace the environment cannot run on (checked here, not in the MCP client)."""
    from openenv_mcp.client.registry import find_env
    from openenv_mcp.core.environment import check_user_workspace

    spec = find_env(env)  # fails here, not in the MCP client, when ENV is wrong
    path = Path(env)
    target = str(path.resolve()) if path.exists() and (path.is_dir() or path.suffix == ".toml") else env
    args = ["-m", "openenv_mcp.cli", "stdio", target, "--mode", mode]
    user = check_user_workspace(spec, mode, workspace, read_only)
    if user is not None:
        args += ["--workspace", str(user.path)] + (["--read-only"] if read_only else [])
    return f"openenv-{spec.name}", {"command": sys.executable, "args": args, "env": {}}


def run(args: argparse.Namespace) -> int:
    name, server = entry(args.env, args.mode, args.workspace, args.read_only)
    print(json.dumps({"mcpServers": {args.name or name: server}}, indent=2))
    return 0
