"""Rollouts played by real agent harnesses that speak MCP (``openenv-mcp rollout ENV --harness NAME``).

Each episode is created on the control plane of a served environment (started here, in this process,
for a name or env file; or the server at a URL); the harness gets the episode's own MCP address
(``mcp_url``, its agent key inside: the agent reaches this episode and nothing else) and an
OpenAI-compatible model, plays until it stops, and the environment's reward is read on the control
plane. Harnesses (:mod:`openenv_mcp.rollout.harnesses`):

* ``openai-agents`` — the OpenAI Agents SDK (``MCPServerStreamableHttp`` + ``OpenAIChatCompletionsModel``);
* ``pydantic-ai`` — Pydantic AI (``MCPToolset`` + ``OpenAIChatModel``);
* a command (``--harness-cmd``), any program, with ``{mcp_url}``, ``{prompt_file}``, ``{mcp_config}``,
  ``{base_url}``, ``{model}`` replaced in its arguments.

The Python harnesses' chat-completions traffic is recorded (their own OpenAI client, with a recording
HTTP transport), so a line's ``messages`` and ``tools`` are the model's real last request and answer, in
the same form as the built-in loop's. A harness that raises or runs past ``timeout`` is recorded as
``harness_error`` / ``harness_timeout`` and its episode is closed.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.errors import ConfigError
from openenv_mcp.rollout.harnesses import HARNESSES, CommandHarness, Harness, Recorder, make_harness, steps_from
from openenv_mcp.rollout.runner import DEFAULT_SYSTEM_PROMPT
from openenv_mcp.rollout.trajectory import Trajectory

__all__ = ["HARNESSES", "CommandHarness", "HarnessTrajectory", "harness_rollout", "make_harness", "run_harness_command"]


@dataclass
class HarnessTrajectory(Trajectory):
    """A :class:`Trajectory` played by a harness: which one, its own transcript and how it ended."""

    harness: dict[str, Any] = field(default_factory=dict)
    transcript: Any = None
    error: str | None = None
    step_count: int = 0

    @property
    def rewards(self) -> list[float]:
        return [self.reward]  # the harness drives MCP itself: the reward is read once, at the end

    @property
    def num_steps(self) -> int:
        return self.step_count

    @property
    def tool_errors(self) -> int:
        return sum(1 for s in self.steps or [] if s.get("is_error"))

    def to_json(self) -> dict[str, Any]:
        line = super().to_json()
        line.update({"harness": self.harness, "harness_transcript": self.transcript, "harness_error": self.error})
        return line


# -- the rollout ------------------------------------------------------------------------------
@asynccontextmanager
async def control_plane(env: str, token: str | None) -> AsyncIterator[str]:
    """The URL of a control plane serving ``env``: the URL itself, or a server started here."""
    from openenv_mcp.client.registry import is_url, load_environment

    if is_url(env):
        yield env
        return
    import uvicorn

    from openenv_mcp.serve.app import create_app

    environment = load_environment(env)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(environment, max_episodes=None), log_level="warning", ws_per_message_deflate=False, lifespan="on"
        )
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: server.serve(sockets=[sock]))
        try:
            with anyio.fail_after(30):
                while not server.started:
                    await anyio.sleep(0.01)
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True


async def play(
    url: str,
    harness: Harness,
    info: dict[str, Any],
    *,
    index: int,
    seed: int | None,
    task_id: str | None,
    system_prompt: str,
    model: str | None,
    timeout: float,
    token: str | None = None,
) -> HarnessTrajectory:
    """One episode: create it, let the harness play it over its MCP address, read the reward, close it."""
    from openenv_mcp.client.remote import RemoteAsyncEnv

    started_at = datetime.now(UTC).isoformat()
    t0 = time.perf_counter()
    env = RemoteAsyncEnv(url, token=token)
    recorder = Recorder()
    try:
        obs = await env.reset(seed=seed, task_id=task_id)
        reset_s = time.perf_counter() - t0
        task = obs.task
        traj = HarnessTrajectory(
            episode=index,
            env=env.name,
            seed=seed,
            task_id=task.id if task else None,
            prompt=task.prompt if task else "",
            episode_id=env.episode_id,
            model=model,
            harness=info,
        )
        t1 = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                run = await harness(env.mcp_url or "", traj.prompt, system_prompt, recorder)
            traj.transcript, traj.stop_reason = run.transcript, run.stop_reason
        except TimeoutError:
            traj.stop_reason, traj.error = "harness_timeout", f"the harness ran past {timeout:g} s and was stopped"
        except Exception as e:  # noqa: BLE001 - a harness crash is data, not the end of the rollout
            traj.stop_reason, traj.error = "harness_error", f"{type(e).__name__}: {e}"[:4000]
            traj.transcript = getattr(e, "transcript", None)
        harness_s = time.perf_counter() - t1
        state = await env.state()
        traj.reward, traj.done, traj.truncated = state.cumulative_reward, state.done, state.truncated
        traj.step_count = state.step_count
        if traj.stop_reason == "harness_stopped" and (state.done or state.truncated):
            traj.stop_reason = "done" if state.done else "truncated"
        traj.messages, traj.tools, traj.usage, traj.turns = recorder.conversation()
        traj.steps = steps_from(traj.messages)
        traj.timings = {
            "started_at": started_at,
            "total_s": round(time.perf_counter() - t0, 4),
            "reset_s": round(reset_s, 4),
            "harness_s": round(harness_s, 4),
        }
        return traj
    finally:
        with anyio.CancelScope(shield=True):
            await recorder.aclose()
            await env.close()  # the episode is closed whatever the harness did


async def harness_rollout(
    env: str,
    harness: Harness,
    info: dict[str, Any],
    *,
    episodes: int = 1,
    concurrency: int = 1,
    seed: int = 0,
    task_id: str | None = None,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    model: str | None = None,
    timeout: float = 600.0,
    token: str | None = None,
    on_episode: Callable[[HarnessTrajectory], None] | None = None,
) -> list[HarnessTrajectory]:
    """Play ``episodes`` episodes of ``env`` (name, env file or control-plane URL) with ``harness``."""
    out: list[HarnessTrajectory] = []
    limiter = anyio.Semaphore(max(concurrency, 1))
    async with control_plane(env, token) as url:

        async def one(i: int) -> None:
            async with limiter:
                traj = await play(
                    url,
                    harness,
                    info,
                    index=i,
                    seed=seed + i,
                    task_id=task_id,
                    system_prompt=system_prompt,
                    model=model,
                    timeout=timeout,
                    token=token,
                )
            out.append(traj)
            if on_episode is not None:
                on_episode(traj)

        async with anyio.create_task_group() as tg:
            for i in range(episodes):
                tg.start_soon(one, i)
    return out


def run_harness_command(args: Any, console: Any, err_console: Any) -> int:
    """``openenv-mcp rollout ENV --harness NAME | --harness-cmd CMD``: JSONL as episodes finish, then a summary."""
    from rich.table import Table

    from openenv_mcp.rollout.trajectory import summarize

    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or None
    out = Path(args.out)
    if out.parent and not out.parent.exists():
        raise ConfigError(f"cannot write {str(out)!r}: folder {str(out.parent)!r} does not exist")
    harness, info = make_harness(
        args.harness,
        args.harness_cmd,
        base_url=args.base_url,
        model=args.model,
        api_key=api_key,
        max_steps=args.max_steps,
        timeout=args.timeout,
    )

    async def main() -> list[HarnessTrajectory]:
        with out.open("w") as fh:

            def write(traj: HarnessTrajectory) -> None:
                fh.write(json.dumps(traj.to_json(), ensure_ascii=False) + "\n")
                fh.flush()
                err_console.print(
                    f"episode {traj.episode} ({traj.task_id}): reward {traj.reward:.2f}, "
                    f"{traj.stop_reason}" + (f" - {traj.error}" if traj.error else "")
                )

            return await harness_rollout(
                args.env,
                harness,
                info,
                episodes=args.episodes,
                concurrency=args.concurrency,
                seed=args.seed,
                task_id=args.task,
                system_prompt=args.system or DEFAULT_SYSTEM_PROMPT,
                model=args.model,
                timeout=args.harness_timeout,
                on_episode=write,
            )

    trajectories = anyio.run(main)
    stats = summarize(trajectories)  # type: ignore[arg-type]
    name = info["name"] + (f" {info['version']}" if info.get("version") else "")
    table = Table(title=f"rollout: {args.env} · {name} · {args.model} · {len(trajectories)} episodes")
    for col in ("reward mean", "reward std", "success rate", "mean steps", "harness failures"):
        table.add_column(col, justify="right")
    failures = sum(1 for t in trajectories if t.error)
    table.add_row(
        f"{stats['reward_mean']:.3f}",
        f"{stats['reward_std']:.3f}",
        f"{stats['success_rate']:.0%}",
        f"{stats['mean_steps']:.1f}",
        str(failures),
    )
    console.print(table)
    console.print(f"wrote {len(trajectories)} trajectories to {out}")
    return 0
