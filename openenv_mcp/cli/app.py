"""The ``openenv-mcp`` command line behind :func:`openenv_mcp.cli.main` (every command but ``stdio``).

Each subcommand is one ``_cmd_*`` function plus its parser in ``build_parser``.
Errors the user can fix are printed as one line that says what to do next.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from typing import Any

import anyio
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from openenv_mcp.cli.stdio import add_arguments as add_stdio_arguments
from openenv_mcp.cli.stdio import add_prod_flags
from openenv_mcp.errors import OpenEnvError

console = Console()
err_console = Console(stderr=True)


# -- list ----------------------------------------------------------------------
def _cmd_list(args: argparse.Namespace) -> int:
    from openenv_mcp.client.registry import list_envs

    table = Table(title="openenv-mcp environments")
    table.add_column("name", style="bold")
    table.add_column("tool servers")
    table.add_column("description")
    for spec in list_envs():
        servers = ", ".join(f"{s.name} ({s.isolation})" for s in spec.tool_servers)
        table.add_row(spec.name, servers, spec.description)
    console.print(table)
    return 0


# -- run -------------------------------------------------------------------------
async def run_reference(
    target: str,
    episodes: int,
    seed: int | None,
    policy: str = "reference",
    progress: bool = True,
    show_steps: bool = False,
    *,
    all_tasks: bool = False,
    repeat: int = 1,
    tasks: str | None = None,
    split: str | None = None,
) -> list[dict[str, Any]]:
    """Run the environment's scripted ``policy`` for ``episodes`` episodes (or every task,
    ``repeat`` times each, with ``all_tasks``); one row per episode."""
    from openenv_mcp.client.registry import load_environment

    environment = load_environment(target, tasks=tasks, split=split)
    rows: list[dict[str, Any]] = []
    base = 0 if seed is None else seed
    plan = environment.tasks.order(episodes, seed=base, all_tasks=all_tasks, repeat=repeat)
    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, console=err_console, disable=not progress) as bar:
        job = bar.add_task(f"{environment.name}: {policy} policy", total=len(plan))
        for i, (task_id, episode_seed) in enumerate(plan):
            episode = await environment.new_episode(seed=episode_seed, task_id=task_id)
            try:
                if show_steps:
                    console.rule(f"episode {i} · task {episode.task.id} · seed {episode.seed}")
                    console.print(f"[bold]task:[/bold] {episode.task.prompt}")
                script = environment.script(episode.task, policy, episode.seed)  # fixed, or reading observations
                obs = None
                while not (episode.done or episode.truncated) and (action := script.next(obs)) is not None:
                    obs = await episode.act(action)
                    if show_steps:
                        assert obs.result is not None  # a CallTool step always carries its result
                        text = " ".join(getattr(c, "text", f"<{c.type}>") for c in obs.result.content)
                        flag = "[red]error[/red] " if obs.result.is_error else ""
                        console.print(f"[cyan]{action.name}[/cyan]({_args(action.arguments)})")
                        console.print(f"  -> {flag}{_clip(text)}  [dim]reward {obs.reward:+.2f}[/dim]")
                state = episode.state()
                rows.append(
                    {
                        "episode": i,
                        "task": state.task_id,
                        "seed": state.seed,
                        "steps": state.step_count,
                        "reward": state.cumulative_reward,
                        "done": state.done,
                        "truncated": state.truncated,
                    }
                )
            finally:
                await episode.close()
            bar.advance(job)
    return rows


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_clip(repr(v), 40)}" for k, v in arguments.items())


def _clip(text: str, limit: int = 120) -> str:
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _summary(rows: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    for col in ("episode", "task", "seed", "steps", "reward", "done", "truncated"):
        table.add_column(col, justify="right" if col in ("episode", "seed", "steps", "reward") else "left")
    for row in rows:
        table.add_row(
            *(
                f"{row[c]:.2f}" if c == "reward" else str(row[c])
                for c in ("episode", "task", "seed", "steps", "reward", "done", "truncated")
            )
        )
    console.print(table)
    rewards = [r["reward"] for r in rows]
    success = sum(1 for r in rows if r["done"]) / len(rows)
    std = statistics.pstdev(rewards) if len(rewards) > 1 else 0.0
    console.print(
        f"[bold]{len(rows)} episodes[/bold]: reward mean {statistics.mean(rewards):.3f} "
        f"(std {std:.3f}), success rate {success:.0%}, "
        f"mean steps {statistics.mean(r['steps'] for r in rows):.1f}"
    )


def _cmd_run(args: argparse.Namespace) -> int:
    rows = anyio.run(
        lambda: run_reference(
            args.env,
            args.episodes,
            args.seed,
            args.policy,
            show_steps=args.show_steps,
            all_tasks=args.all_tasks,
            repeat=args.repeat,
            tasks=args.tasks,
            split=args.split,
        )
    )
    _summary(rows, f"{args.env}: {args.policy} policy")
    return 0


# -- demo -----------------------------------------------------------------------
def _cmd_demo(args: argparse.Namespace) -> int:
    from openenv_mcp.cli.demo import tour

    anyio.run(lambda: tour(args.env, host=args.host, port=args.port, seed=args.seed, once=args.once))
    return 0


# -- rollout ---------------------------------------------------------------------
def _cmd_rollout(args: argparse.Namespace) -> int:
    from openenv_mcp.rollout import run_command

    return run_command(args, console, err_console)


# -- serve / stdio ----------------------------------------------------------------
def _cmd_serve(args: argparse.Namespace) -> int:
    from openenv_mcp.serve.playground import PUBLIC_PATHS, playground_routes
    from openenv_mcp.serve.run import serve

    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.token:
        err_console.print(
            f"[yellow]warning:[/yellow] serving on {args.host} without --token: anyone who can reach the "
            "port can open /mcp sessions (each a fresh episode, --max-mcp-episodes); only this machine's "
            "processes of this user reach the control plane"
        )

    def banner(host: str, port: int) -> None:
        err_console.print(
            f"[bold]openenv-mcp[/bold] serving [cyan]{args.env}[/cyan] ({args.mode}) on "
            f"http://{host}:{port}  playground: /  MCP: /mcp"
            + ("  control plane: /ws, /episodes" if args.mode == "sim" else "")
        )

    if args.ray:
        banner(args.host, args.port)
        return _serve_ray(args)
    from openenv_mcp.serve.manager import default_max_episodes

    max_episodes = default_max_episodes() if args.max_episodes is None else (args.max_episodes or None)
    serve(
        args.env,
        host=args.host,
        port=args.port,
        mode=args.mode,
        token=args.token,
        admin_token=args.admin_token or os.environ.get("OPENENV_MCP_ADMIN_TOKEN") or None,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        max_episodes=max_episodes,
        max_mcp_episodes=_max_mcp_episodes(args.max_mcp_episodes, max_episodes),
        max_sessions_per_episode=args.max_sessions_per_episode or None,
        idle_timeout=args.idle_timeout or None,
        max_request_bytes=args.max_request_bytes,
        log_level=args.log_level,
        extra_routes=playground_routes,
        public_paths=("/health", *PUBLIC_PATHS),
        on_ready=banner,
        **_prod_options(args),
    )
    return 0


def _max_mcp_episodes(flag: int | None, max_episodes: int | None) -> int | None:
    """``--max-mcp-episodes``: unset -> a quarter of ``--max-episodes`` (at least 1); 0 -> no cap of its own."""
    from openenv_mcp.serve.manager import default_max_mcp_episodes

    if flag is None:
        return default_max_mcp_episodes(max_episodes)
    return flag or None


def _serve_ray(args: argparse.Namespace) -> int:
    """``serve ENV --ray ADDRESS``: a pool of replicas on the cluster behind one front door (docs/scale.md)."""
    try:
        from openenv_mcp.ray.app import serve_front_door
    except ImportError as e:
        err_console.print(f"[red]error:[/red] --ray needs Ray: pip install 'openenv-mcp[ray]' ({e})")
        return 2
    if args.mode != "sim":
        err_console.print("[red]error:[/red] --ray serves sim mode (a production server is one `serve --mode prod`)")
        return 2
    try:
        resources = json.loads(args.replica_resources) if args.replica_resources else {}
    except ValueError as e:
        resources = e
    if not isinstance(resources, dict) or not all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
        for k, v in resources.items()
    ):
        err_console.print(
            f"[red]error:[/red] --replica-resources must be a JSON object of resource names to amounts >= 0, "
            f"e.g. '{{\"env_node\": 1}}' (got {args.replica_resources!r})"
        )
        return 2
    serve_front_door(
        args.env,
        address=args.ray,
        host=args.host,
        port=args.port,
        token=args.token,
        admin_token=args.admin_token or os.environ.get("OPENENV_MCP_ADMIN_TOKEN") or None,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        max_request_bytes=args.max_request_bytes,
        log_level=args.log_level,
        min_replicas=args.replicas,
        max_replicas=max(args.max_replicas or args.replicas, args.replicas),
        episodes_per_replica=args.episodes_per_replica,
        num_cpus=args.replica_cpus,
        resources=resources,
    )
    return 0


def _cmd_stdio(args: argparse.Namespace) -> int:
    from openenv_mcp.serve.run import serve_stdio

    options = _prod_options(args)
    anyio.run(lambda: serve_stdio(args.env, mode=args.mode, seed=args.seed, task_id=args.task, **options))
    return 0


def _prod_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--workspace``/``--read-only``/``--database-url``: production on the user's own data."""
    if args.database_url:
        if args.mode != "prod":
            raise OpenEnvError(
                "--database-url is for production (--mode prod); simulation episodes use their "
                "own copy of the task's database"
            )
        os.environ["DATABASE_URL"] = args.database_url  # tool servers get it through their pass_env only
    return {"workspace": args.workspace, "read_only": args.read_only}


# -- parser ---------------------------------------------------------------------
def add_task_arguments(p: argparse.ArgumentParser) -> None:
    """``--all-tasks``, ``--repeat``, ``--tasks``, ``--split``: which tasks a command plays."""
    p.add_argument("--all-tasks", action="store_true", help="play every task exactly once, in order")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="with --all-tasks (or --task): K episodes per task, with distinct seeds",
    )
    p.add_argument(
        "--tasks",
        default=None,
        metavar="SET_OR_PATH",
        help="a named task set of the env file (train, eval...), a JSONL file or a dataset path",
    )
    p.add_argument("--split", default=None, help="the dataset split to load (dataset-backed tasks)")


def build_parser() -> argparse.ArgumentParser:
    from openenv_mcp import __version__

    parser = argparse.ArgumentParser(
        prog="openenv-mcp", description="MCP-native environments for agents: serve, run, check, train, publish."
    )
    parser.add_argument("--version", action="version", version=f"openenv-mcp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list the environments found by name")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("run", help="run an environment's scripted policy for some episodes")
    p.add_argument("env", help="environment name, env.toml path or folder")
    p.add_argument("--episodes", type=int, default=5, help="episodes to play (default 5)")
    p.add_argument("--seed", type=int, default=None, help="seed of the first episode (then +1 each)")
    p.add_argument(
        "--policy",
        choices=["reference", "wrong"],
        default="reference",
        help="which scripted solution plays: the env's reference one (default) or its wrong one",
    )
    p.add_argument("--show-steps", action="store_true", help="print every tool call and its result")
    add_task_arguments(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("demo", help="the tour: serve an environment, show how to connect, play one episode over MCP")
    p.add_argument("env", nargs="?", default="files", help="environment name, env.toml path or folder (default files)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="preferred port (a free one is used if it is taken)")
    p.add_argument("--seed", type=int, default=0, help="seed of the episode the tour plays (default 0)")
    p.add_argument("--once", action="store_true", help="stop after the tour instead of serving until Ctrl-C")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("rollout", help="a model plays episodes through an OpenAI-compatible API; JSONL out")
    p.add_argument("env", help="environment name, env.toml path or folder, or server URL")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", default=None, help="model name sent to the server")
    p.add_argument("--api-key", default=None, help="bearer key (default: $OPENAI_API_KEY)")
    p.add_argument("--episodes", type=int, default=8, help="episodes to play (default 8)")
    p.add_argument("--concurrency", type=int, default=4, help="episodes played at the same time")
    p.add_argument("--max-steps", type=int, default=30, help="tool calls per episode at most")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode (then +1 each)")
    p.add_argument("--task", default=None, help="play only this task id")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: the server's)")
    p.add_argument(
        "--max-tokens", type=int, default=None, help="tokens per model answer at most (default: the server's)"
    )
    p.add_argument("--system", default=None, help="system prompt (default: a short agent instruction)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per model request")
    p.add_argument("--max-retries", type=int, default=5, help="retries of 429/5xx/connection errors")
    p.add_argument(
        "--out",
        default="trajectories.jsonl",
        help="JSONL file, one episode per line; appended to, episodes already in it are skipped",
    )
    p.add_argument(
        "--n", type=int, default=1, help="completions per prompt: n episodes per task and seed, sampled as one group"
    )
    p.add_argument("--logprobs", action="store_true", help="ask for token logprobs and record them per turn")
    p.add_argument(
        "--token-ids",
        action="store_true",
        help="ask for token ids too (vLLM's return_token_ids) and record them per turn",
    )
    add_task_arguments(p)
    p.add_argument(
        "--harness",
        default=None,
        choices=["openai-agents", "pydantic-ai"],
        help="play with this agent harness over the episode's MCP address (docs/deploy.md)",
    )
    p.add_argument(
        "--harness-cmd",
        default=None,
        metavar="CMD",
        help="play with any command; {mcp_url} {prompt_file} {mcp_config} {base_url} {model} are filled in",
    )
    p.add_argument(
        "--harness-timeout",
        type=float,
        default=600.0,
        help="seconds one harness run may take before it is stopped (default 600)",
    )
    p.add_argument(
        "--action-style",
        choices=("tools", "codeact"),
        default="tools",
        help="tools: function calling; codeact: the model writes Python code blocks (docs/codeact.md)",
    )
    from openenv_mcp.cli.branching import add_arguments as add_branch_arguments  # --policy, --branch

    add_branch_arguments(p)
    p.set_defaults(func=_cmd_rollout)

    p = sub.add_parser("serve", help="serve an environment: MCP at /mcp, control plane, /health, /metrics")
    p.add_argument("env", help="environment name, env.toml path or folder")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to bind (default 8000; 0: any free port)")
    p.add_argument(
        "--mode",
        choices=["sim", "prod"],
        default="sim",
        help="sim: control plane + rewards; prod: MCP, /health and /metrics only",
    )
    p.add_argument(
        "--token",
        default=None,
        help="require 'Authorization: Bearer TOKEN' on every route but /health and an episode's own MCP "
        "address; without it only processes of the server's own user (or root) on this machine, outside "
        "any sandbox or container, reach the control plane (docs/security.md)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST",
        help="another Host header to accept (name or name:port; repeatable; '*' for any)",
    )
    p.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="another Origin to accept (scheme://host[:port]; repeatable; '*' for any)",
    )
    p.add_argument(
        "--admin-token",
        default=None,
        help="'Authorization: Bearer ADMIN_TOKEN' sees and drives every episode (env: "
        "OPENENV_MCP_ADMIN_TOKEN); everyone else reaches only its own episodes",
    )
    p.add_argument(
        "--max-episodes",
        type=int,
        default=None,
        help="cap on live episodes (0: none; default: min(32 x CPUs, RAM / 64 MiB), 16..4096)",
    )
    p.add_argument(
        "--max-mcp-episodes",
        type=int,
        default=None,
        help="cap on live episodes (and open sessions) of bare /mcp, each session an episode, within "
        "--max-episodes, so MCP clients never starve the trainer (0: no cap of its own; default: a "
        "quarter of --max-episodes, at least 1)",
    )
    p.add_argument(
        "--max-sessions-per-episode",
        type=int,
        default=8,
        help="cap on MCP sessions open at once on one episode's address (0: none; default 8)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        help="close episodes and MCP sessions idle this many seconds (0: never; default 1800)",
    )
    p.add_argument(
        "--max-request-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="cap on one request body or WebSocket message (default 4 MiB)",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's and the server's log level (default warning)",
    )
    p.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="serve a pool of replicas on the Ray cluster at ADDRESS (HEAD:PORT or 'auto') behind this one URL",
    )
    p.add_argument("--replicas", type=int, default=1, help="--ray: replicas to keep running (default 1)")
    p.add_argument("--max-replicas", type=int, default=None, help="--ray: scale up to this many under load")
    p.add_argument(
        "--episodes-per-replica",
        type=int,
        default=64,
        help="--ray: add a replica (up to --max-replicas) when every live one holds this many episodes (default 64)",
    )
    p.add_argument("--replica-cpus", type=float, default=1.0, help="--ray: CPUs each replica reserves (default 1)")
    p.add_argument(
        "--replica-resources",
        default=None,
        metavar="JSON",
        help="--ray: custom Ray resources each replica reserves, e.g. '{\"env_node\": 1}'",
    )
    add_prod_flags(p)
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("stdio", help="serve one episode as an MCP server over stdin/stdout (IDE configs)")
    add_stdio_arguments(p)
    p.set_defaults(func=_cmd_stdio)

    from openenv_mcp.cli.conformance import add_parser as add_conformance  # openenv-mcp conformance TARGET ...
    from openenv_mcp.cli.mcp_config import add_parser as add_mcp_config  # openenv-mcp mcp-config ENV ...

    add_conformance(sub)
    add_mcp_config(sub)
    from openenv_mcp.cli.validate import add_parser as add_validate  # openenv-mcp validate ENV ...

    add_validate(sub)

    from openenv_mcp.cli import build, discover, init, publish  # one module per command: init, build, publish, discover
    from openenv_mcp.cli import export as export_command  # openenv-mcp export harbor|... (its formats are subcommands)
    from openenv_mcp.cli import harbor as harbor_command  # openenv-mcp harbor build

    for command in (init, build, publish, discover, export_command, harbor_command):
        command.add_parser(sub)
    for each in parsers(parser):
        each.allow_abbrev = False  # `run --task X` must not be read as --tasks X
        each.description = plain(each.description)
    return parser


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser under it, each once."""
    out = [parser]
    for action in parser._actions:  # argparse has no public walk of its subparsers
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                out += parsers(child)
    return out


_ROLE = re.compile(r":[a-z]+:`~?([^`]*)`")


def plain(text: str | None) -> str | None:
    """A docstring's reStructuredText markup (````code````, ``:func:`x```) as plain text for ``--help``."""
    return None if text is None else _ROLE.sub(r"\1", text).replace("``", "")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except OpenEnvError as e:
        err_console.print(f"[red]error:[/red] {e}")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
