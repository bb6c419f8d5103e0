"""``openenv-mcp init NAME``: a ready environment package in ./NAME (see :mod:`openenv_mcp.scaffold`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import anyio

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "init",
        help="create a new environment package in ./NAME, ready to install and share",
        description="Create ./NAME: pyproject.toml registering the environment, env.toml, a tool "
        "server (a FastMCP skeleton, or a wrapped command/URL), tasks, reward, "
        "solutions, tests, README and Dockerfile.",
    )
    p.add_argument("name", help="environment name (lower case, e.g. my-env); the Python package is my_env")
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--from-command",
        nargs=argparse.REMAINDER,
        default=None,
        metavar="CMD",
        help="wrap this stdio MCP server (the rest of the line: program and arguments). `npx PKG` and "
        "`uvx PKG` (or `pipx run PKG`) are installed into the env folder (runtime/, versions pinned) and the "
        "env runs that copy, offline; the tools are read from the server started behind --isolation",
    )
    src.add_argument("--from-url", default=None, metavar="URL", help="wrap this streamable-HTTP MCP server")
    p.add_argument(
        "--isolation",
        default=None,
        choices=["inprocess", "process", "sandbox", "docker"],
        help="boundary of the tool server (default: inprocess for the skeleton; sandbox for a wrapped "
        "command, which is untrusted: `process` fails conformance's containment rules)",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="VAR=VALUE",
        help="a variable for the wrapped server (repeatable; {workspace} and {env_dir} expand), e.g. where it "
        "keeps state: --env MEMORY_FILE_PATH={workspace}/memory.jsonl (the sandbox's root is read-only)",
    )
    p.add_argument("--description", default=None, help="one line shown by `openenv-mcp list`")
    p.add_argument("--dir", default=".", help="folder to create NAME in (default: the current folder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from openenv_mcp.errors import ConfigError
    from openenv_mcp.scaffold import Scaffold, create, read_tools, wrap_command

    if args.from_command is not None and not args.from_command:
        raise ConfigError("--from-command needs the server's command, e.g. --from-command npx -y my-mcp-server")
    env: dict[str, str] = {}
    for item in args.env:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"--env {item!r}: give VAR=VALUE")
        env[key] = value
    if env and not args.from_command:
        raise ConfigError("--env applies to a wrapped command (--from-command)")
    s = Scaffold(
        name=args.name,
        root=Path(args.dir),
        from_command=args.from_command,
        from_url=args.from_url,
        isolation=args.isolation,
        env=env,
    )
    console = Console()
    if s.from_command:
        with console.status("installing") as status:
            wrap_command(s, lambda text: status.update(escape(text)))
        if s.installed:
            console.print(f"installed {escape(s.installed)} into {escape(str(s.env_dir / 'runtime'))}")
    elif s.from_url:
        with console.status(f"reading the tools of {s.from_url}"):
            s.tools = anyio.run(lambda: read_tools(None, s.from_url))
    if s.tools:
        console.print(f"{len(s.tools)} tools: {', '.join(t.name for t in s.tools)}")
    if s.from_command and s.worked is None:
        console.print("[yellow]no call succeeded[/yellow] behind the boundary; the env still needs a task:")
        for line in s.failures[:5]:
            console.print(f"  {escape(line)}")
    target = create(s, args.description)
    shown_str = str(target) if target.is_absolute() else f"./{target}"
    console.print(
        f"[green]created[/green] {escape(shown_str)}/ "
        f"(environment [bold]{s.name}[/bold], package {s.pkg})\n"
        "next:\n"
        f"  pip install -e {escape(repr(shown_str + '[test]'))}    # registers it: openenv-mcp list\n"
        f"  openenv-mcp conformance {s.name}\n"
        f"  openenv-mcp run {s.name}\n"
        f"  (cd {escape(shown_str)} && pytest)\n"
        f"  openenv-mcp serve {s.name}          # play it at http://127.0.0.1:8000/"
    )
    return 0
