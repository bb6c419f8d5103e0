"""``openenv-mcp rollout``: progress bar, JSONL written as episodes finish, summary table."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.errors import ConfigError
from openenv_mcp.rollout.outfile import TrajectoryFile
from openenv_mcp.rollout.policy import OpenAIPolicy, Policy
from openenv_mcp.rollout.runner import DEFAULT_SYSTEM_PROMPT, rollout
from openenv_mcp.rollout.scripted import ScriptedPolicy
from openenv_mcp.rollout.trajectory import Trajectory, summarize

__all__ = ["policy_maker", "run_command"]


def policy_maker(args: Any) -> Callable[[], Policy]:
    """What ``--policy`` names, as a function making it (inside the rollout's event loop):
    ``openai`` (the default: the model at ``--base-url``, ``--model``), ``scripted:FILE.json``
    (:class:`ScriptedPolicy` from a file) or ``solutions:KIND[,KIND...]`` (the environment's
    scripted ``reference``/``wrong`` solutions as a :class:`ScriptedPolicy`, one alternative per kind)."""
    name = getattr(args, "policy", None) or "openai"
    kind, _, value = name.partition(":")
    if kind == "openai" and not value:
        if not args.base_url or not args.model:
            raise ConfigError(
                "rollout needs --base-url URL and --model NAME (the model that plays), or a --policy "
                "that needs no model server: scripted:FILE.json or solutions:reference"
            )
        api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
        return lambda: OpenAIPolicy(
            args.base_url,
            args.model,
            api_key,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            timeout=args.timeout,
            max_retries=args.max_retries,
            max_connections=max(args.concurrency, 1),
            logprobs=args.logprobs,
            token_ids=args.token_ids,
        )
    from openenv_mcp.client.registry import is_url, load_environment

    environment = None if is_url(args.env) else load_environment(args.env, tasks=args.tasks, split=args.split)
    tasks = environment.tasks.tasks if environment is not None else ()
    if kind == "scripted" and value:
        scripted = ScriptedPolicy.from_file(value, tasks=tasks)
        return lambda: scripted
    if kind == "solutions" and value and environment is not None:
        kinds = [k.strip() for k in value.split(",")]
        if not all(k in ("reference", "wrong") for k in kinds):
            raise ConfigError(f"--policy solutions:KIND[,KIND...]: each KIND is reference or wrong, got {value!r}")
        scripted = ScriptedPolicy.from_solutions(environment, kinds)
        return lambda: scripted
    raise ConfigError(
        f"--policy {name!r}: give openai (the model at --base-url), scripted:FILE.json or "
        "solutions:reference[,wrong] (an environment name or folder, not a server URL)"
    )


def run_command(args: Any, console: Any, err_console: Any) -> int:
    """``openenv-mcp rollout``: progress bar, JSONL written as episodes finish, summary table."""
    if getattr(args, "harness", None) or getattr(args, "harness_cmd", None):
        if getattr(args, "branch", None) is not None:
            raise ConfigError("--branch forks the built-in loop's episodes: drop --harness/--harness-cmd")
        if not args.base_url or not args.model:
            raise ConfigError("a harness plays with a model: give --base-url URL and --model NAME")
        from openenv_mcp.rollout.harness_runner import (
            run_harness_command,  # a real agent harness plays instead of the built-in loop
        )

        return run_harness_command(args, console, err_console)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    out = Path(args.out)
    from openenv_mcp.client.registry import find_env, is_url

    env_name = str(args.env) if is_url(args.env) else find_env(args.env).name
    options = {k: v for k, v in (("tasks", args.tasks), ("split", args.split)) if v is not None}
    make_policy = policy_maker(args)
    if getattr(args, "branch", None) is not None:
        from openenv_mcp.rollout.tree_command import run_tree_command

        return run_tree_command(args, make_policy, env_name, options, console, err_console)
    retries = 0
    resumed = dropped = 0
    model = args.model or "scripted"

    async def main() -> list[Trajectory]:
        nonlocal retries, resumed, dropped
        policy = make_policy()
        columns = [
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("reward {task.fields[mean]:.2f}"),
            TimeElapsedColumn(),
        ]
        done: list[Trajectory] = []
        with TrajectoryFile(out, env_name) as fh, Progress(*columns, console=err_console) as bar:
            resumed, dropped = len(fh.finished), fh.dropped_bytes
            job = bar.add_task(f"{args.env} · {model}", total=None, mean=0.0)

            def write(traj: Trajectory) -> None:
                fh.append(traj.to_json())
                done.append(traj)
                bar.update(job, advance=1, mean=statistics.fmean(t.reward for t in done))

            try:
                return await rollout(
                    args.env,
                    policy,
                    episodes=args.episodes,
                    concurrency=args.concurrency,
                    max_steps=args.max_steps,
                    seed=args.seed,
                    task_id=args.task,
                    system_prompt=args.system or DEFAULT_SYSTEM_PROMPT,
                    model=model,
                    on_episode=write,
                    all_tasks=args.all_tasks,
                    repeat=args.repeat,
                    n=args.n,
                    skip=set(fh.finished),
                    action_style=getattr(args, "action_style", "tools"),
                    **options,
                )
            finally:
                retries = getattr(policy, "retries", 0)
                if isinstance(policy, OpenAIPolicy):
                    await policy.aclose()

    trajectories = anyio.run(main)
    stats = summarize(trajectories)
    table = Table(title=f"rollout: {args.env} · {model} · {len(trajectories)} episodes")
    for col in ("reward mean", "reward std", "success rate", "mean steps", "tool-error rate"):
        table.add_column(col, justify="right")
    table.add_row(
        f"{stats['reward_mean']:.3f}",
        f"{stats['reward_std']:.3f}",
        f"{stats['success_rate']:.0%}",
        f"{stats['mean_steps']:.1f}",
        f"{stats['tool_error_rate']:.1%}",
    )
    console.print(table)
    extra = f" ({retries} model-server retries)" if retries else ""
    if resumed:
        extra += f"; {resumed} episodes already in the file were skipped"
    if dropped:
        extra += f"; a truncated last line ({dropped} bytes) left by an interrupted run was cut off"
    console.print(f"wrote {len(trajectories)} trajectories to {out}{extra}")
    return 0
