"""``openenv-mcp validate ENV``: is an environment worth training on? (registered by ``openenv_mcp.cli``)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.errors import ConfigError

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``validate`` subcommand to the CLI's subparsers."""
    p = sub.add_parser(
        "validate",
        help="check an environment is worth training on: solutions, reward-hacking probes, pass@k",
        description="Play every task's reference and wrong solutions and the reward-hacking probes; with "
        "--base-url/--model, K rollouts per task give pass@k, reward mean and variance and "
        "too-easy/too-hard flags. Exit code 0 only when nothing was found.",
    )
    p.add_argument("env", help="environment name, env.toml path or folder")
    p.add_argument(
        "--all-tasks",
        action="store_true",
        default=True,
        help="every task once, in order (the default; --task narrows it)",
    )
    p.add_argument("--task", action="append", default=None, metavar="ID", help="validate only this task (repeatable)")
    p.add_argument(
        "--probes",
        default=",".join(_probes()),
        help="comma-separated reward-hacking probes to run: generic ones, `hack` (the environment's own) or "
        "hack:NAME ('' for none; default: all)",
    )
    p.add_argument("--base-url", default=None, help="OpenAI-compatible API root for the K rollouts per task")
    p.add_argument("--model", default=None, help="model name sent to the server")
    p.add_argument("--api-key", default=None, help="bearer key (default: $OPENAI_API_KEY)")
    p.add_argument("-k", "--repeat", "--k", dest="k", type=int, default=4, help="rollouts per task (default 4)")
    p.add_argument("--concurrency", type=int, default=4, help="rollouts played at the same time")
    p.add_argument("--max-steps", type=int, default=30, help="tool calls per rollout at most")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature of the rollouts")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per model request")
    p.add_argument("--seed", type=int, default=0, help="seed of every scripted episode and the first rollout")
    p.add_argument("--json", metavar="FILE", default=None, help="write the report as JSON ('-' for stdout)")
    p.add_argument("--html", metavar="FILE", default=None, help="write a self-contained HTML report with plots")
    p.set_defaults(func=run)


def _probes() -> tuple[str, ...]:
    from openenv_mcp.validate import ALL_PROBES

    return ALL_PROBES


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from openenv_mcp.validate import validate
    from openenv_mcp.validate.report import html_report, print_report

    console, err = Console(), Console(stderr=True)
    if (args.base_url is None) != (args.model is None):
        raise ConfigError("give both --base-url and --model for rollouts (or neither)")
    probes = tuple(p.strip() for p in args.probes.split(",") if p.strip())
    for out in (args.json, args.html):
        if out and out != "-" and not Path(out).parent.exists():
            raise ConfigError(f"cannot write {out!r}: folder {str(Path(out).parent)!r} does not exist")

    async def main() -> Any:
        policy = None
        if args.base_url:
            from openenv_mcp.rollout import OpenAIPolicy

            policy = OpenAIPolicy(
                args.base_url,
                args.model,
                args.api_key or os.environ.get("OPENAI_API_KEY") or None,
                temperature=args.temperature,
                timeout=args.timeout,
                max_connections=max(args.concurrency, 1),
            )
        try:
            with err.status(f"validating {args.env}...") as status:

                def progress(check: Any) -> None:
                    status.update(f"validating {args.env}: {check.check} on task {check.task_id}")

                return await validate(
                    args.env,
                    probes=probes,
                    policy=policy,
                    k=args.k,
                    concurrency=args.concurrency,
                    max_steps=args.max_steps,
                    seed=args.seed,
                    task_ids=args.task,
                    on_check=progress,
                )
        finally:
            if policy is not None:
                await policy.aclose()

    report = anyio.run(main)
    if args.json == "-":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report, console)
        if args.json:
            Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n")
            console.print(f"wrote {args.json}")
    if args.html:
        Path(args.html).write_text(html_report(report))
        (err if args.json == "-" else console).print(f"wrote {args.html}")
    return 0 if not report.findings() else 1
