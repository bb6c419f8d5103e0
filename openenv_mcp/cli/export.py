"""``openenv-mcp export FORMAT ...``: an environment or its rollouts in the formats the field reads.

``export harbor ENV --out DIR``: the environment's tasks as Harbor task folders
(:mod:`openenv_mcp.worlds.harbor.export`). ``export atif ROLLOUTS.jsonl --out DIR``: each line of a
rollout file as a Harbor (ATIF) trajectory, ``DIR/episode-E-sample-S.json``
(:mod:`openenv_mcp.rollout.atif`).
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
    a = formats.add_parser(
        "atif",
        help="each line of a rollout file as a Harbor trajectory (ATIF v1.4 JSON)",
        description="Write DIR/episode-E-sample-S.json per line of an `openenv-mcp rollout --out` file: the "
        "conversation as ATIF steps, tool calls with their results, rewards, token ids and logprobs when recorded.",
    )
    a.add_argument("rollouts", help="a JSONL file written by `openenv-mcp rollout --out`")
    a.add_argument("--out", required=True, metavar="DIR", help="folder for the trajectories (created)")
    a.set_defaults(func=_atif)
    return formats


def _atif(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from openenv_mcp.errors import ConfigError
    from openenv_mcp.rollout.atif import to_atif
    from openenv_mcp.rollout.branch import TREE_FORMAT
    from openenv_mcp.rollout.trajectory import TRAJECTORY_FORMAT

    source = Path(args.rollouts)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {str(source)!r}: {e}") from None
    documents: dict[str, dict[str, Any]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            raise ConfigError(f"{source}:{n} is not JSON; give a file written by `openenv-mcp rollout --out`") from None
        if not isinstance(line, dict) or line.get("format") not in (TRAJECTORY_FORMAT, TREE_FORMAT):
            raise ConfigError(f"{source}:{n} is not a rollout line (format {TRAJECTORY_FORMAT!r}); nothing was written")
        episode = f"episode-{int(line.get('episode') or 0)}"
        if line["format"] == TREE_FORMAT:  # a node of a rollout --branch tree: its episode id names it
            documents[f"{episode}-node-{_safe(line.get('node'))}.json"] = to_atif(line)
        else:
            documents[f"{episode}-sample-{int(line.get('sample') or 0)}.json"] = to_atif(line)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        (out / name).write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    Console().print(f"{len(documents)} trajectories (ATIF v1.4) written to {out}")
    return 0 if documents else 1


def _safe(name: Any) -> str:
    """A node id as a file-name part (ids are episode ids: letters, digits and dashes)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in str(name))[:80] or "node"


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
