"""The fork rule: a fork is the original at the moment of the fork, and the two never share state.

``env.fork_faithful`` plays the episode's reference trajectory (else seeded generated calls) and
forks it at several steps (:meth:`Episode.fork <openenv_mcp.core.episode.Episode.fork>`, the
environment's own strategy per tool server, docs/fork.md). At each fork point it takes two forks
and plays the rest of the trajectory three times, in this order: on the first fork, on the
original, on the second fork. All three must give the same results, rewards and end state
(per-episode values normalized, what ``env.determinism`` found nondeterministic ignored): the
original runs after the first fork wrote (a fork's writes visible in the original fail it), the
second fork runs after the original wrote (the original's writes visible in a fork fail it), and
a fork that lost state the original had (a server's memory a snapshot does not copy) fails it too.
"""

from __future__ import annotations

import time

from openenv_mcp.conformance.base import Context, Failed, Skipped, rule
from openenv_mcp.conformance.normalize import episode_values
from openenv_mcp.conformance.replay import Step, actions_for, replay, state_json, volatility
from openenv_mcp.conformance.rules.env import Compare
from openenv_mcp.conformance.subject import EpisodeHandle
from openenv_mcp.core.fork import choose_strategy
from openenv_mcp.errors import ForkDiverged, ForkError
from openenv_mcp.types import CallTool

TIME_BOX = 10.0
"""Seconds the rule spends on further fork points once the first one is checked."""


def fork_points(length: int) -> list[int]:
    """Steps to fork at (after that many calls): the last step, then the middle (then the start when
    the trajectory is too short for two points)."""
    points = {max(length - 1, 0), length // 2}
    if len(points) < 2:
        points.add(0)
    return sorted(points, reverse=True)


@rule(
    "env.fork_faithful",
    "error",
    "a fork equals the original at the fork (the same continuation gives the same results and rewards), "
    "and actions in one are invisible in the other",
    needs=("local", "episodes"),
    timeout=300,
)
async def check_fork_faithful(ctx: Context) -> str | None:
    environment = ctx.subject.environment
    if environment is None or all(s.fork is None for s in environment.servers):
        raise Skipped(
            'no tool server declares how it forks (fork = "snapshot" | "replay" | "refuse" in '
            "[[tool_servers]], docs/fork.md): an environment opts in to the fork check by declaring it"
        )
    probe = await volatility(ctx)
    original = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        actions = await actions_for(ctx, original, "reference")
        strategy = _strategy(original)
    finally:
        await original.close()
    if not actions:
        raise Skipped("no calls to play: give the environment a reference solution")
    started = time.monotonic()
    notes: set[str] = set()
    checked = []
    for point in fork_points(len(actions)):
        if checked and time.monotonic() - started > TIME_BOX:
            break
        note = await _check_point(ctx, probe, actions, point, strategy)
        if note:
            notes.add(note)
        checked.append(point)
    ctx.conclude()
    where = ", ".join(str(p) for p in sorted(checked))
    return "; ".join([f"forked by {strategy} after steps {where} of {len(actions)}", *sorted(notes)])


def _strategy(handle: EpisodeHandle) -> str:
    try:
        return choose_strategy(handle.episode)
    except ForkError as e:
        raise Skipped(f"the environment refuses to fork: {e}") from None


async def _check_point(ctx: Context, probe, actions: list[CallTool], point: int, strategy: str) -> str | None:
    original = await ctx.subject.new_episode(seed=ctx.seed)
    forks: list[EpisodeHandle] = []
    try:
        prefix = await replay(original, actions[:point])
        if original.ended:
            return None  # the trajectory ended early: nothing to continue
        where = f"forked by {strategy} after step {len(prefix)} (seed {ctx.seed})"
        try:
            forks = [EpisodeHandle(e, original.tally) for e in await original.episode.fork(2)]
        except ForkDiverged as e:
            raise Failed(f"{where}: {e}") from None
        except ForkError as e:
            raise Failed(f"{where}: the fork failed: {e}") from None
        at_fork = state_json(await original.state())
        for n, f in enumerate(forks, 1):
            got = state_json(await f.state())
            keys = [k for k in at_fork if at_fork[k] != got.get(k)]
            if keys:
                raise Failed(
                    f"{where}: fork {n}'s state differs from the original's in {keys}: "
                    f"original { {k: at_fork[k] for k in keys} }, fork { {k: got.get(k) for k in keys} }"
                )
        rest = actions[point:]
        runs: list[tuple[str, EpisodeHandle, list[Step]]] = []
        for label, handle in (("in fork 1", forks[0]), ("in the original", original), ("in fork 2", forks[1])):
            runs.append((label, handle, await replay(handle, rest)))
        values = [episode_values(h) for _, h, _ in runs]
        compare = Compare(probe.volatile, *values)
        (label_a, handle_a, steps_a) = runs[1]
        for label_b, handle_b, steps_b in (runs[0], runs[2]):
            diff = compare.steps(label_b, steps_b, label_a, steps_a)
            if diff:
                order = (
                    "the fork, played before the original, lost or changed the original's state"
                    if label_b == "in fork 1"
                    else "the fork, played after the original, sees the original's writes or lost its state"
                )
                raise Failed(f"{where}, the same {len(rest)} calls on each: {diff}: {order}")
            end_a, end_b = state_json(await handle_a.state()), state_json(await handle_b.state())
            keys = [k for k in end_a if end_a[k] != end_b.get(k)]
            if keys:
                raise Failed(
                    f"{where}: after the same calls the end state differs in {keys}: {label_a} "
                    f"{ {k: end_a[k] for k in keys} }, {label_b} { {k: end_b.get(k) for k in keys} }"
                )
        return compare.note()
    finally:
        for f in forks:
            await f.close()
        await original.close()
