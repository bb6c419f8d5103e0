"""``openenv-mcp conformance TARGET``: the subcommand (registered by ``openenv_mcp.cli``)."""

from __future__ import annotations

import argparse
from typing import Any

import anyio

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``conformance`` subcommand to the CLI's subparsers."""
    p = sub.add_parser(
        "conformance",
        help="check that an environment (or any MCP server) keeps the promise",
        description="Run the conformance rules against TARGET and print the report. "
        "Exit code 1 when a rule of severity error failed; 0 otherwise, also when rules are inconclusive "
        "(most of their tool calls failed: give working calls as `solutions` in the env file), unless "
        "--strict, which exits 2 on inconclusive rules.",
    )
    p.add_argument("target", nargs="?", help="environment name, env.toml path or folder, or URL of a running server")
    p.add_argument("--json", metavar="FILE", default=None, help="also write the report as JSON")
    p.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="RULES",
        help="run only these rules (comma-separated ids or prefixes: tools, env.parity, official)",
    )
    p.add_argument("--skip", action="append", default=None, metavar="RULES", help="skip these rules")
    p.add_argument(
        "--known-failures",
        metavar="FILE",
        default=None,
        help="TOML or JSON file accepting listed failures, each with a reason",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the episodes and generated arguments")
    p.add_argument("--token", default=None, help="bearer token of a server started with `serve --token`")
    p.add_argument("--no-official", action="store_true", help="do not run the official MCP conformance suite")
    p.add_argument(
        "--official-not-applicable",
        metavar="FILE",
        default=None,
        help="official scenarios to skip, [scenario.NAME] reason = ... (default: "
        "conformance/official-not-applicable.toml, the scenarios needing the suite's fixtures)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 2 when a rule is inconclusive (its tool calls mostly failed, so it decided nothing)",
    )
    p.add_argument("--list-rules", action="store_true", help="print the rules and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from openenv_mcp.conformance.base import RULES
    from openenv_mcp.conformance.runner import check_env_async

    console = Console()
    if args.list_rules:
        table = Table(title="openenv-mcp conformance rules")
        for col in ("rule", "severity", "promise"):
            table.add_column(col)
        for r in RULES.values():
            table.add_row(r.id, r.severity, r.title)
        table.add_row("official.<scenario>", "error", "the official MCP conformance suite's server scenarios")
        console.print(table)
        return 0
    if not args.target:
        from openenv_mcp.errors import ConfigError

        raise ConfigError("give a TARGET: an environment name, an env.toml path or folder, or a server URL")
    err = Console(stderr=True)
    with err.status(f"conformance: {args.target}") as status:

        def progress(rule_id: str) -> None:
            status.update(f"conformance: {args.target}: {rule_id}")

        report = anyio.run(
            lambda: check_env_async(
                args.target,
                only=args.only,
                skip=args.skip,
                known_failures=args.known_failures,
                seed=args.seed,
                official=False if args.no_official else None,
                progress=progress,
                official_not_applicable=args.official_not_applicable,
                **({"token": args.token} if args.token else {}),
            )
        )
    report.print(console)
    if not args.only and not args.skip:  # a full run is the verdict `openenv-mcp discover` shows
        _cache_verdict(args.target, report)
    if args.json:
        report.write_json(args.json)
        console.print(f"JSON report: {args.json}")
    return report.exit_code_for(strict=args.strict)


def _cache_verdict(target: str, report: Any) -> None:
    from openenv_mcp.client.catalog import save_report
    from openenv_mcp.client.registry import find_env, is_url

    if is_url(target):
        return  # a running server: no environment files to pin the verdict to
    try:
        save_report(find_env(target), report)
    except (OSError, ValueError) as e:  # a read-only cache never fails the check itself
        from rich.console import Console

        Console(stderr=True).print(f"[yellow]warning:[/yellow] the verdict was not cached: {e}")
