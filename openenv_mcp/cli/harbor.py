"""``openenv-mcp harbor build TARGET``: build (or find cached) the images of Harbor tasks ahead of time.

TARGET is ``harbor:PATH``, an env whose tasks come from a Harbor folder (``terminal``), or a path.
One build at a time, with the engine's log line as progress; a table of tags and build times.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["add_parser", "build_images"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("harbor", help="Harbor task folders: build their images ahead of the first episode")
    commands = p.add_subparsers(dest="harbor_command", required=True, metavar="COMMAND")
    b = commands.add_parser(
        "build",
        help="build the images of every task (cached ones are found, not rebuilt)",
        description="Build each task's image from its environment/ folder (content-hashed tags "
        "openenv-mcp/harbor-TASK:HASH; BASE_IMAGE from $OPENENV_MCP_BASE_IMAGE or the local base).",
    )
    b.add_argument("target", help="harbor:PATH, an environment of Harbor tasks (e.g. terminal), or a folder")
    b.add_argument("--task", action="append", default=None, metavar="ID", help="only this task (repeatable)")
    b.set_defaults(func=_build)


def build_images(target: str, task_ids: list[str] | None = None, progress: Any = None) -> list[dict[str, Any]]:
    """Build the images of ``target``'s Harbor tasks; one row per task (id, tag, built, seconds)."""
    from openenv_mcp.client.registry import load_environment
    from openenv_mcp.isolation.containers.engine import docker_client
    from openenv_mcp.worlds.harbor.dataset import definition_of
    from openenv_mcp.worlds.harbor.images import ensure_image

    environment = load_environment(target)
    tasks = environment.tasks.tasks if task_ids is None else [environment.tasks.get(t) for t in task_ids]
    client = docker_client()
    rows = []
    for task in tasks:
        definition = definition_of(environment.tasks.full(task))
        if progress is not None:
            progress(task.id, None)
        started = time.monotonic()
        if definition.environment.kind == "compose":
            rows.append(
                {"task": task.id, "tag": "(compose: built at its first episode)", "built": False, "seconds": 0.0}
            )
            continue
        report = ensure_image(
            client,
            definition.environment,
            definition.name,
            (lambda line, t=task.id: progress(t, line)) if progress else None,
        )
        rows.append({"task": task.id, "tag": report.tag, "built": report.built, "seconds": time.monotonic() - started})
    return rows


def _build(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    with console.status("building...") as status:

        def progress(task_id: str, line: str | None) -> None:
            status.update(f"{task_id}: {line[:100]}" if line else f"{task_id}: checking the cache")

        rows = build_images(args.target, args.task, progress)
    table = Table(title=f"images of {args.target}")
    for col in ("task", "image", "built", "seconds"):
        table.add_column(col, justify="right" if col == "seconds" else "left")
    for row in rows:
        table.add_row(row["task"], row["tag"], "built" if row["built"] else "cached", f"{row['seconds']:.1f}")
    console.print(table)
    return 0
