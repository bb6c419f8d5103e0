"""``openenv-mcp discover [QUERY] [--json]``: the installed environments, what they offer, and their verdict."""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "discover",
        help="installed environments: description, tools, tasks, boundary, conformance",
        description="List the environments found by name (built-in, installed packages, "
        "$OPENENV_MCP_ENVS), filtered by the words of QUERY (name, description, tools).",
    )
    p.add_argument("query", nargs="?", default=None, help="words that must all appear (case-insensitive)")
    p.add_argument("--json", action="store_true", help="print JSON (one array of entries) for tools")
    p.add_argument("--no-tools", action="store_true", help="do not start the environments to list their tools")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for an environment's tool servers")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from openenv_mcp.client.catalog import catalog

    entries = anyio.run(lambda: catalog(args.query, tools=not args.no_tools, timeout=args.timeout))
    if args.json:
        print(json.dumps(entries, indent=2))
        return 0
    console = Console()
    table = Table(title="openenv-mcp environments" + (f" matching {args.query!r}" if args.query else ""))
    for col in ("name", "description", "tools", "tasks", "boundary", "conformance"):
        table.add_column(col, style="bold" if col == "name" else None)
    for e in entries:
        tools = (
            ", ".join(t["name"] for t in e["tools"])
            if e["tools"] is not None
            else f"[red]{e['error']}[/red]"
            if e["error"]
            else "-"
        )
        status = e["conformance"]["status"]
        colour = {"conformant": "green", "not conformant": "red"}.get(status, "yellow")
        table.add_row(
            e["name"],
            e["description"],
            tools,
            "-" if e["tasks"] is None else str(e["tasks"]),
            ", ".join(e["boundaries"]),
            f"[{colour}]{status}[/{colour}]",
        )
    console.print(table)
    if not entries:
        console.print("no environment matches" if args.query else "no environment is installed")
    console.print(
        "Play one: [bold]openenv-mcp serve NAME[/bold] (playground at http://127.0.0.1:8000/); "
        "check one: [bold]openenv-mcp conformance NAME[/bold]"
    )
    return 0
