"""The rollout loop: a policy plays episodes of an environment, one trajectory each."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.rollout.messages import tools_to_functions
from openenv_mcp.rollout.outfile import episode_key
from openenv_mcp.rollout.policy import Policy, Turn
from openenv_mcp.rollout.trajectory import Trajectory
from openenv_mcp.rollout.turns import BeforeAction, Clock, ask_policy, play_turns
from openenv_mcp.types import Observation

__all__ = ["DEFAULT_SYSTEM_PROMPT", "ask_policy", "env_factory", "plan_episodes", "play_episode", "rollout"]

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent working in an environment through tools. Read the task, call the tools "
    "you need (one or more per turn), look at their results, and keep going until the task is "
    "done. When you are finished, answer without calling a tool."
)


# -- the loop -----------------------------------------------------------------------
def env_factory(env: Any, mode_options: dict[str, Any]) -> tuple[Callable[[], Any], str, bool]:
    """(a function making one async env, the env's name, whether it may be called many times)."""
    from openenv_mcp.client.env import AsyncEnv, Env
    from openenv_mcp.client.registry import is_url, load_environment, make_async
    from openenv_mcp.definitions.spec import EnvSpec

    if isinstance(env, Env):
        env = env.unwrapped
    if callable(env) and not hasattr(env, "reset"):
        return env, getattr(env, "__name__", "env"), True
    if hasattr(env, "reset") and hasattr(env, "step"):
        return (lambda: env), getattr(env, "name", "env"), False
    if is_url(env):
        return (lambda: make_async(env, **mode_options)), str(env), True
    if not isinstance(env, str | Path | EnvSpec):
        raise ConfigError(
            f"rollout needs an environment name, env-file path, EnvSpec, server URL, env object "
            f"or a function making one; got {type(env).__name__}"
        )
    environment = load_environment(env, **mode_options)

    def make() -> AsyncEnv:
        return AsyncEnv(environment)

    make.environment = environment  # type: ignore[attr-defined]  # its task list, for all_tasks/repeat
    return make, environment.name, True


async def play_episode(
    make_env: Callable[[], Any],
    policy: Policy,
    *,
    index: int,
    env_name: str,
    seed: int | None,
    task_id: str | None = None,
    max_steps: int = 30,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    model: str | None = None,
    close: bool = True,
    sample: int = 0,
    key: str | None = None,
    action_style: str = "tools",
    before_action: BeforeAction | None = None,
) -> Trajectory:
    """Play one episode: reset, then ask the policy and run its tool calls (or, with
    ``action_style="codeact"``, its code blocks: see :mod:`openenv_mcp.rollout.codeact`) until the end.
    ``before_action``: awaited between two steps, just before each tool call is sent (:class:`Pause`)."""
    env = make_env()
    if inspect.isawaitable(env):
        env = await env
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    model_s = env_s = 0.0
    try:
        obs: Observation = await env.reset(seed=seed, task_id=task_id)
        reset_s = time.perf_counter() - t0
        state = await env.state()
        prompt = obs.task.prompt if obs.task is not None else ""
        tools, back = tools_to_functions(obs.tools or [])
        messages: list[dict[str, Any]] = []
        if action_style == "codeact":
            from openenv_mcp.rollout.codeact import CODEACT_SYSTEM_PROMPT, stubs

            base = CODEACT_SYSTEM_PROMPT if system_prompt in (None, DEFAULT_SYSTEM_PROMPT) else system_prompt + "\n\n"
            system_prompt = base + stubs(obs.tools or [])
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": prompt})
        steps: list[dict[str, Any]] = []
        completions: list[dict[str, Any]] = []
        usage: dict[str, int] = {}
        traj = Trajectory(
            episode=index,
            env=env_name,
            seed=state.seed,
            task_id=state.task_id,
            prompt=prompt,
            episode_id=state.episode_id,
            model=model,
            messages=messages,
            tools=tools,
            steps=steps,
            usage=usage,
            key=key,
            sample=sample,
            completions=completions,
        )
        if action_style == "codeact":
            from openenv_mcp.rollout.codeact import play_codeact_turns

            async def ask(msgs: list[dict[str, Any]], offered: list[dict[str, Any]]) -> Turn:
                nonlocal model_s
                m0 = time.perf_counter()
                try:
                    return await ask_policy(policy, msgs, offered)
                finally:
                    model_s += time.perf_counter() - m0

            env_s += await play_codeact_turns(env, ask, traj, messages, max_steps)
        clock = await play_turns(
            env,
            policy,
            traj,
            messages,
            tools,
            back,
            max_steps,
            clock=Clock(model_s, env_s),
            before_action=before_action,
        )
        model_s, env_s = clock.model_s, clock.env_s
        try:
            final = await env.state()
            traj.reward = final.cumulative_reward
        except OpenEnvError:
            pass
        traj.timings = {
            "started_at": started_at.isoformat(),
            "total_s": round(time.perf_counter() - t0, 4),
            "reset_s": round(reset_s, 4),
            "model_s": round(model_s, 4),
            "env_s": round(env_s, 4),
        }
        return traj
    finally:
        if close:
            with anyio.CancelScope(shield=True):
                await env.close()


async def rollout(
    env: Any,
    policy: Policy,
    *,
    episodes: int = 1,
    concurrency: int = 1,
    max_steps: int = 30,
    seed: int | None = 0,
    task_id: str | None = None,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    model: str | None = None,
    on_episode: Callable[[Trajectory], Any] | None = None,
    all_tasks: bool = False,
    repeat: int = 1,
    n: int = 1,
    skip: Collection[str] = (),
    action_style: str = "tools",
    **env_options: Any,
) -> list[Trajectory]:
    """Play ``episodes`` episodes of ``env`` with ``policy``, at most ``concurrency`` at a time.

    Args:
        env: an environment name, env-file path or ``http://HOST:PORT`` server URL
            (one env per concurrent episode is made), a zero-argument factory
            returning an ``AsyncEnv``-like object, or one ``AsyncEnv``/``Env``
            instance (then ``concurrency`` must be 1).
        policy: ``policy(messages, tools) -> Turn | dict`` (sync or async),
            e.g. an :class:`OpenAIPolicy`.
        max_steps: tool calls per episode before it stops (``stop_reason``
            ``max_steps``); the environment's own ``max_steps`` truncates too.
        seed: episode ``i`` is reset with ``seed + i`` (``None``: random seeds,
            recorded in each trajectory).
        task_id: pin every episode to one task.
        all_tasks: play every task of the environment once, in order (instead of
            ``episodes``); ``repeat``: K episodes per task with distinct seeds
            (:meth:`TaskSet.order`).
        n: completions per prompt: every planned episode is played ``n`` times (a
            group, ``sample`` 0..n-1) and the group's first turn is one request for
            ``n`` choices (:meth:`OpenAIPolicy.sample`).
        skip: episode keys (:func:`~openenv_mcp.rollout.outfile.episode_key`) already
            played, e.g. read from an interrupted run's file: not played again.
        system_prompt: the system message (``None`` for none).
        model: recorded in each trajectory.
        on_episode: called with each finished trajectory (in finishing order).
        action_style: ``tools`` (function calling) or ``codeact`` (the model writes Python; each
            code block is one ``RunCode``; see :mod:`openenv_mcp.rollout.codeact`).
        env_options: passed to ``make_async`` (``mode``, ``call_timeout``, ``tasks``,
            ``split``...).

    Returns the trajectories sorted by episode index. A :class:`PolicyError`
    (bad key, unreachable server, retries exhausted) stops the whole rollout.
    """
    if episodes < 1 or concurrency < 1 or max_steps < 1 or n < 1 or repeat < 1:
        raise ConfigError("episodes, concurrency, max_steps, n and repeat must be at least 1")
    if action_style not in ("tools", "codeact"):
        raise ConfigError(f"action_style must be 'tools' or 'codeact', not {action_style!r}")
    make_env, name, reusable = env_factory(env, env_options)
    if not reusable and concurrency > 1:
        raise ConfigError(
            "one env instance plays one episode at a time: pass an environment name, URL or factory for concurrency > 1"
        )
    if model is None:
        model = getattr(policy, "model", None)
    plan = plan_episodes(
        env, make_env, episodes=episodes, seed=seed, task_id=task_id, all_tasks=all_tasks, repeat=repeat
    )
    results: list[Trajectory] = []
    limiter = anyio.Semaphore(concurrency)
    groups = {(t, s): _Group(policy, n) for t, s in plan}
    todo = [
        (i * n + k, t, s, k)
        for i, (t, s) in enumerate(plan)
        for k in range(n)
        if s is None or episode_key(s, t, k) not in skip
    ]

    async def one(index: int, pinned: str | None, episode_seed: int | None, sample: int) -> None:
        async with limiter:
            member = groups[(pinned, episode_seed)].member(sample) if n > 1 else policy
            traj = await play_episode(
                make_env,
                member,
                index=index,
                env_name=name,
                seed=episode_seed,
                task_id=pinned,
                max_steps=max_steps,
                system_prompt=system_prompt,
                model=model,
                close=reusable,
                sample=sample,
                key=None if episode_seed is None else episode_key(episode_seed, pinned, sample),
                action_style=action_style,
            )
            results.append(traj)
            if on_episode is not None:
                out = on_episode(traj)
                if inspect.isawaitable(out):
                    await out

    try:
        async with anyio.create_task_group() as tg:
            for item in todo:
                tg.start_soon(one, *item)
    except BaseExceptionGroup as group:  # surface the first real error, not the group
        first = group.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    if not reusable:
        await make_env().close()
    return sorted(results, key=lambda t: t.episode)


def plan_episodes(
    env: Any,
    make_env: Callable[[], Any],
    *,
    episodes: int,
    seed: int | None,
    task_id: str | None,
    all_tasks: bool,
    repeat: int,
) -> list[tuple[str | None, int | None]]:
    """The (task_id, seed) of every planned episode."""
    if not all_tasks and repeat == 1:
        if seed is None:
            return [(task_id, None) for _ in range(episodes)]
        return [(task_id, seed + i) for i in range(episodes)]
    environment = (
        getattr(make_env, "environment", None)
        or getattr(env, "environment", None)
        or getattr(getattr(env, "unwrapped", None), "environment", None)
    )
    tasks = getattr(environment, "tasks", None)
    if tasks is None:
        raise ConfigError(
            "all_tasks/repeat need the environment's task list: give an environment name, env file "
            "or AsyncEnv, not a server URL or a factory"
        )
    return tasks.order(episodes, seed=seed or 0, all_tasks=all_tasks, repeat=repeat, task_id=task_id)


class _Group:
    """The ``n`` episodes of one prompt: their first turn is one request for ``n`` choices."""

    def __init__(self, policy: Policy, n: int) -> None:
        self.policy, self.n = policy, n
        self.first: list[Turn] | None = None
        self.lock = anyio.Lock()

    def member(self, sample: int) -> Policy:
        async def ask(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
            if any(m.get("role") == "assistant" for m in messages):
                return await ask_policy(self.policy, messages, tools)
            async with self.lock:
                if self.first is None:
                    sampler = getattr(self.policy, "sample", None)
                    if callable(sampler):
                        choices: Any = sampler(messages, tools, self.n)  # an optional Policy method
                        self.first = list(await choices)
                    else:
                        self.first = [await ask_policy(self.policy, messages, tools) for _ in range(self.n)]
            return self.first[sample]

        return ask
