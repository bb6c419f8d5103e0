"""``openenv-mcp mcp-config ENV [--client NAME] [--url URL] [--mode prod --workspace DIR [--read-only]]``:
a ready MCP server entry, in the format of the client's own config file.

Prints what to paste into an MCP client's config (IDE, desktop assistant, agent harness). A stdio entry
starts ``openenv-mcp stdio ENV`` with absolute paths only: this virtualenv's Python (so no ``PATH``,
activation or ``HOME`` is needed: MCP clients start servers with a minimal environment) and, when
ENV is a file or folder, its absolute path. ``--url`` gives an entry for a served environment's
``/mcp`` instead (streamable HTTP).

Clients (``--client``) and the file each reads:

- ``claude``: Claude Code's ``.mcp.json`` / ``--mcp-config`` and Claude Desktop: ``mcpServers``,
  HTTP as ``{"type": "http", "url": ...}``;
- ``vscode``: VS Code's ``.vscode/mcp.json``: ``servers``, each with its ``type`` (``stdio``/``http``);
- ``cursor``: ``.cursor/mcp.json``: ``mcpServers``, HTTP as ``{"url": ...}``;
- ``codex``: Codex's ``~/.codex/config.toml``: TOML ``[mcp_servers.NAME]`` tables;
- ``opencode``: ``opencode.json``: ``mcp``, ``{"type": "local", "command": [...]}`` or ``"remote"``;
- ``gemini``: Gemini CLI's ``settings.json``: ``mcpServers``, HTTP as ``{"httpUrl": ...}``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["CLIENTS", "add_parser", "entry", "render", "run"]

CLIENTS = ("claude", "vscode", "cursor", "codex", "opencode", "gemini")


def add_parser(sub: Any) -> None:
    """Add the ``mcp-config`` subcommand to the CLI's subparsers."""
    p = sub.add_parser(
        "mcp-config",
        help="print an MCP client's config entry (absolute paths) that serves ENV over stdio, or names its URL",
        description=(__doc__ or "").partition("\n\n")[2].partition("\n\n")[0],
    )
    p.add_argument("env", help="environment name, env.toml path or folder")
    p.add_argument(
        "--client",
        choices=CLIENTS,
        default="claude",
        help="whose config format to print (default claude: the mcpServers JSON most clients read)",
    )
    p.add_argument(
        "--url",
        default=None,
        help="an entry for a served environment's MCP endpoint (e.g. http://127.0.0.1:8000/mcp) instead of stdio",
    )
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


def render(client: str, name: str, server: dict[str, Any]) -> str:
    """The config text of ``client`` with one server ``name``: ``server`` is a stdio entry
    (``command``, ``args``, ``env``) or an HTTP one (``url``)."""
    url = server.get("url")
    if client == "codex":
        key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)
        fields = {"url": url} if url else {k: server[k] for k in ("command", "args")}
        lines = [f"[mcp_servers.{key}]", *(f"{k} = {json.dumps(v)}" for k, v in fields.items())]
        if server.get("env"):
            lines.append(
                "env = { " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in server["env"].items()) + " }"
            )
        return "\n".join(lines)
    if client == "opencode":
        body: dict[str, Any] = (
            {"type": "remote", "url": url}
            if url
            else {"type": "local", "command": [server["command"], *server["args"]], "environment": server["env"]}
        )
        return json.dumps(
            {"$schema": "https://opencode.ai/config.json", "mcp": {name: {**body, "enabled": True}}}, indent=2
        )
    if url:
        body = (
            {"httpUrl": url}
            if client == "gemini"
            else {"url": url}
            if client == "cursor"
            else {"type": "http", "url": url}
        )
    else:
        body = {"type": "stdio", **server} if client == "vscode" else dict(server)
    return json.dumps({"servers" if client == "vscode" else "mcpServers": {name: body}}, indent=2)


def run(args: argparse.Namespace) -> int:
    if args.url:
        from openenv_mcp.client.registry import find_env

        name, server = f"openenv-{find_env(args.env).name}", {"url": args.url}
    else:
        name, server = entry(args.env, args.mode, args.workspace, args.read_only)
    print(render(args.client, args.name or name, server))
    return 0
