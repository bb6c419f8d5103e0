"""``openenv-mcp rollout --branch WHERE:K``: a tree of trajectories per episode, JSONL out, a summary."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.errors import ConfigError
from openenv_mcp.rollout.branch import Branching, Node, rollout_trees
from openenv_mcp.rollout.outfile import TrajectoryFile
from openenv_mcp.rollout.policy import OpenAIPolicy, Policy
from openenv_mcp.rollout.runner import DEFAULT_SYSTEM_PROMPT

__all__ = ["run_tree_command"]


def run_tree_command(
    args: Any,
    make_policy: Callable[[], Policy],
    env_name: str,
    options: dict[str, Any],
    console: Any,
    err_console: Any,
) -> int:
    """Play a tree per planned episode (:func:`~openenv_mcp.rollout.branch.rollout_trees`); each tree's
    lines are appended to ``--out`` in one write, the root last (a tree whose root is in the file
    is whole, and a rerun skips it)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    branching: Branching = args.branch if isinstance(args.branch, Branching) else Branching.parse(args.branch)
    if getattr(args, "n", 1) != 1:
        raise ConfigError("--branch gives each episode K continuations per branch point: drop --n")
    if getattr(args, "action_style", "tools") != "tools":
        raise ConfigError(
            "--branch forks tool-calling episodes (an episode that ran code cannot fork): drop --action-style"
        )
    out = Path(args.out)
    model = args.model or "scripted"
    resumed = dropped = 0

    async def main() -> list[list[Node]]:
        nonlocal resumed, dropped
        policy = make_policy()
        columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        with TrajectoryFile(out, env_name) as fh, Progress(*columns, console=err_console) as bar:
            resumed, dropped = len(fh.finished), fh.dropped_bytes
            job = bar.add_task(f"{args.env} · {model} · branch {branching}", total=None)

            def write(tree: list[Node]) -> None:
                fh.append_lines([node.to_json() for node in tree])
                bar.update(job, advance=1)

            try:
                return await rollout_trees(
                    args.env,
                    policy,
                    branching,
                    episodes=args.episodes,
                    concurrency=args.concurrency,
                    max_steps=args.max_steps,
                    seed=args.seed,
                    task_id=args.task,
                    system_prompt=args.system or DEFAULT_SYSTEM_PROMPT,
                    model=model,
                    on_tree=write,
                    all_tasks=args.all_tasks,
                    repeat=args.repeat,
                    skip=set(fh.finished),
                    **options,
                )
            finally:
                if isinstance(policy, OpenAIPolicy):
                    await policy.aclose()

    trees = anyio.run(main)
    roots = [tree[-1] for tree in trees]
    leaves = [node for tree in trees for node in tree[:-1]]
    failed = sum(len(root.fork_errors) for root in roots)
    table = Table(title=f"rollout --branch {branching}: {args.env} · {model} · {len(trees)} trees")
    for col in ("nodes", "root reward mean", "continuation reward mean", "fork errors"):
        table.add_column(col, justify="right")
    table.add_row(
        str(len(roots) + len(leaves)),
        f"{statistics.fmean(r.trajectory.reward for r in roots):.3f}" if roots else "-",
        f"{statistics.fmean(n.trajectory.reward for n in leaves):.3f}" if leaves else "-",
        str(failed),
    )
    console.print(table)
    extra = f"; {resumed} trees already in the file were skipped" if resumed else ""
    if dropped:
        extra += f"; a truncated last line ({dropped} bytes) left by an interrupted run was cut off"
    console.print(f"wrote {len(roots) + len(leaves)} nodes of {len(trees)} trees to {out}{extra}")
    return 0
