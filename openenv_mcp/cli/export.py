"""``openenv-mcp export FORMAT ...``: an environment or its rollouts in the formats the field reads.

``export harbor ENV --out DIR``: the environment's tasks as Harbor task folders
(:mod:`openenv_mcp.worlds.harbor.export`). Other formats register their subcommand here
(``add_format``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_parser"]


def add_parser(sub: Any) -> Any:
    """Add ``export`` and its formats to the CLI's subparsers; the ``export`` subparsers."""
    p = sub.add_parser("export", help="write an environment (or rollouts) in another project's format")
    formats = p.add_subparsers(dest="format", required=True, metavar="FORMAT")
    h = formats.add_parser(
        "harbor",
        help="the environment's tasks as Harbor task folders (task.toml, instruction.md, environment/, tests/, solution/)",
        description="Write one Harbor task folder per task that maps (workspace tools, a reward on the "
        "workspace's end state); the others are listed with the reason. `openenv-mcp validate harbor:DIR` checks the result.",
    )
    h.add_argument("env", help="environment name, env.toml path or folder, or harbor:PATH")
    h.add_argument("--out", required=True, metavar="DIR", help="an empty (or new) folder")
    h.add_argument("--task", action="append", default=None, metavar="ID", help="export only this task (repeatable)")
    h.add_argument("--force", action="store_true", help="write into a folder that is not empty")
    h.set_defaults(func=_harbor)
    return formats


def _harbor(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from openenv_mcp.worlds.harbor.export import export_harbor

    console = Console()
    report = export_harbor(args.env, Path(args.out), args.task, force=args.force)
    table = Table(title=f"export harbor: {args.env} -> {report.out}")
    table.add_column("task")
    table.add_column("result")
    for task_id, folder in report.exported:
        table.add_row(task_id, f"[green]{folder}[/green]")
    for task_id, why in report.skipped:
        table.add_row(task_id, f"[yellow]skipped[/yellow]: {why}")
    console.print(table)
    console.print(
        f"{len(report.exported)} exported, {len(report.skipped)} skipped; check them with "
        f"`openenv-mcp validate harbor:{report.out}`"
    )
    return 0 if report.exported else 1
