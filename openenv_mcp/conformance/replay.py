"""Driving episodes for the env rules, and the determinism probe the other rules depend on.

Rule order and dependency, explicitly: ``env.determinism`` reports what :func:`volatility`
found; ``env.parity``, ``env.reset_restores`` and ``env.episode_isolation`` (and
``wire.parity``) mask what it found. :func:`volatility` runs once per conformance run (cached
in the context), whichever of those rules asks first, so ``--only env.episode_isolation``
masks the same values as a full run.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.types import Tool

from openenv_mcp.conformance.argsgen import generate_calls, nonce_words
from openenv_mcp.conformance.base import Context
from openenv_mcp.conformance.channels import shown_pair, snapshot
from openenv_mcp.conformance.normalize import Normalizer, episode_values
from openenv_mcp.conformance.subject import CallTally
from openenv_mcp.conformance.volatility import Volatility
from openenv_mcp.types import CallTool, canonical_json

__all__ = [
    "DEPENDENTS",
    "Probe",
    "Step",
    "actions_for",
    "brief",
    "call_text",
    "channel_of",
    "next_second",
    "observation_difference",
    "replay",
    "rule_calls",
    "rule_noise",
    "short",
    "state_json",
    "two_episodes",
    "volatility",
]


def short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Step:
    """One replayed call: the action, its canonical result and the reward it earned."""

    action: CallTool
    result: str
    reward: float | None = None


async def replay(handle: Any, actions: list[CallTool]) -> list[Step]:
    """Step ``actions`` until the episode ends."""
    out = []
    for action in actions:
        if handle.ended:
            break
        obs = await handle.step(action)
        out.append(Step(action, canonical_json(obs.result), obs.reward))
    return out


async def actions_for(ctx: Context, handle: Any, kind: str = "reference") -> list[CallTool]:
    """The scripted trajectory of the episode's task, else seeded generated calls."""
    scripted = ctx.subject.trajectory(handle.task, kind)
    if scripted is not None:
        return scripted
    tools = [Tool.model_validate(t) for t in handle.first_observation().get("tools", [])]
    return generate_calls(tools, ctx.seed, ctx.calls, samples=ctx.sample_calls(handle.task))


DEPENDENTS = ("env.reset_restores", "env.episode_isolation")
"""Rules that replay generated calls of their own and ignore what the probe learned."""


def rule_calls(ctx: Context, handle: Any, rule_id: str) -> list[CallTool]:
    """The generated calls ``rule_id`` replays: seeded per rule (values drawn from a schema's small
    pool, ``pattern`` or ``enum``, differ from what an earlier rule wrote), over a vocabulary unique
    to this experiment (reads and writes hit the same keys; nothing an earlier rule wrote can look
    like it)."""
    tools = [Tool.model_validate(t) for t in handle.first_observation().get("tools", [])]
    return generate_calls(tools, f"{ctx.seed}:{rule_id}", ctx.calls, nonce_words(), ctx.sample_calls(handle.task))


def channel_of(label: str) -> str:
    """The masking channel of a snapshot label (a tool's read calls share the tool's channel)."""
    return " ".join(label.split(" ")[:2]) if label.startswith("tool ") else label


async def next_second(started: float) -> None:
    """Wait until the wall-clock second after the one ``started`` fell in has begun."""
    await anyio.sleep(max(0.0, int(started) + 1 - time.time()) + 0.01)


def call_text(action: CallTool) -> str:
    return f"tools/call {action.name!r} {short(json.dumps(action.arguments), 60)}"


@dataclass
class Probe:
    """What the determinism probe found: values to ignore, and the problems to report."""

    volatile: Volatility = field(default_factory=Volatility)
    problems: list[str] = field(default_factory=list)
    """Differences between the two episodes: the first per channel, naming the call and both values."""
    fatal: str | None = None
    """A difference no mask can express (another task, another first observation)."""
    tally: CallTally = field(default_factory=CallTally)
    """The probe's calls (one episode's side): whether they tested anything (``env.determinism``
    concludes on them, whichever rule ran the probe)."""
    _seen: dict[str, int] = field(default_factory=dict)

    def add(self, channel: str, problem: str) -> None:
        """Record a difference: the first one per channel is shown, the others counted."""
        if channel not in self._seen:
            self._seen[channel] = len(self.problems)
            self.problems.append(problem)
            return
        i = self._seen[channel]
        first, _, count = self.problems[i].partition(" (and ")
        n = int(count.split(" ")[0]) + 1 if count else 1
        self.problems[i] = f"{first} (and {n} more on {channel})"


async def volatility(ctx: Context) -> Probe:
    """Run the determinism probe once per context: two episodes of one seed in lockstep,
    the second run of each tool's first call (and of the channel snapshots) one wall-clock
    second boundary after the first, so clocks show; randomness and hash order show anyway."""
    if "volatility" not in ctx.cache:
        ctx.cache["volatility"] = await _probe(ctx)
    return ctx.cache["volatility"]


async def _probe(ctx: Context) -> Probe:
    probe = Probe()
    seed = ctx.seed + 1
    a = await ctx.subject.new_episode(seed=seed)
    b = await ctx.subject.new_episode(seed=seed)
    try:
        if a.task.id != b.task.id:
            probe.fatal = f"reset(seed={seed}) picked task {a.task.id!r} once and {b.task.id!r} the next time"
            return probe
    finally:
        await a.close()
        await b.close()
    a = await ctx.subject.new_episode(seed=ctx.seed)
    b = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        norm = Normalizer(episode_values(a), episode_values(b))
        diff = observation_difference(
            "in one episode", json.loads(norm(json.dumps(a.first_observation()))),
            "in the other", json.loads(norm(json.dumps(b.first_observation()))),
        )  # fmt: skip
        if diff:
            probe.fatal = f"reset(seed={ctx.seed}) twice: {diff}"
            return probe
        await _lockstep(a, b, await actions_for(ctx, a), probe, norm)
        state_a, state_b = state_json(await a.state()), state_json(await b.state())
        if state_a != state_b and not probe.problems:
            probe.problems.append(f"end states differ: {state_a} != {state_b}")
    finally:
        await a.close()
        await b.close()
    return probe


async def _lockstep(
    a: Any, b: Any, actions: list[CallTool], probe: Probe, norm: Normalizer, noise_only: bool = False, label: str = ""
) -> None:
    """Replay ``actions`` in ``a`` and ``b`` in lockstep (neither runs ahead of the other, so a store
    they share looks the same to both), each tool's first call and the closing channel snapshots a
    wall-clock second apart; learn what differs into ``probe`` (``noise_only``: see
    :meth:`Volatility.learn`)."""
    timed: set[str] = set()
    for i, action in enumerate(actions, 1):
        if a.ended or b.ended:
            break
        started = time.time()
        [sa] = await replay(a, [action])
        if action.name not in timed:  # each tool's first call: a second boundary in between
            timed.add(action.name)
            await next_second(started)
        [sb] = await replay(b, [action])
        outcome = json.loads(sa.result) if sa.result.startswith("{") else {}
        texts = [c.get("text", "") for c in outcome.get("content", []) if isinstance(c, dict)]
        probe.tally.record_outcome(action, bool(outcome.get("isError")), " ".join(texts))
        where = f"{label}step {i} {call_text(action)}"
        ra, rb = norm(sa.result), norm(sb.result)
        if probe.volatile.learn(f"tool {action.name}", where, ra, rb, noise_only):
            probe.add(
                f"tool {action.name}", f"{where} returned {brief(ra)} in one episode and {brief(rb)} in the other"
            )
        if sa.reward != sb.reward and probe.volatile.learn("reward", where, str(sa.reward), str(sb.reward), noise_only):
            probe.add("reward", f"{where} earned reward {sa.reward} in one episode and {sb.reward} in the other")
    started = time.time()
    snap_a = await snapshot(a)
    await next_second(started)
    snap_b = await snapshot(b)
    for key in sorted(set(snap_a) | set(snap_b)):
        va, vb = norm(snap_a.get(key, "(absent)")), norm(snap_b.get(key, "(absent)"))
        if probe.volatile.learn(channel_of(key), label + key, va, vb, noise_only):
            one, other = shown_pair(va, vb)
            probe.add(channel_of(key), f"{label}{key} shows {one} in one episode and {other} in the other")


async def rule_noise(ctx: Context, rule_id: str, actions: list[CallTool] | None = None) -> Probe:
    """Add to the determinism probe what varies on its own in ``rule_id``'s generated calls
    (``actions``, else :func:`rule_calls`), once per run: two fresh episodes replay them in lockstep.

    Reset and isolation replay calls of their own that the trajectory may never make (a clock or
    a random file name only they reach). Those calls write, and on a store episodes share they
    would see each other's writes: only clock-, counter- and random-name-shaped differences are
    learned (``noise_only``). And this runs *after* the rule's own episodes (``env.determinism``
    runs after those rules), so writing the rule's values first cannot hide the rule's leak."""
    probe = await volatility(ctx)
    key = f"noise {rule_id}"
    if key in ctx.cache:
        return probe
    ctx.cache[key] = True
    async with two_episodes(ctx, ctx.seed) as (a, b):
        calls = actions if actions is not None else rule_calls(ctx, a, rule_id)
        norm = Normalizer(episode_values(a), episode_values(b))
        await _lockstep(a, b, calls, probe, norm, noise_only=True, label=f"{rule_id}'s generated calls, ")
    return probe


@asynccontextmanager
async def two_episodes(ctx: Context, seed: int, task_id: str | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """Two live episodes of ``seed``, both closed at the end (the first also when the second cannot start)."""
    a = await ctx.subject.new_episode(seed=seed, task_id=task_id)
    try:
        b = await ctx.subject.new_episode(seed=seed, task_id=task_id)
    except BaseException:
        await a.close()
        raise
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


def observation_difference(label_a: str, a: dict[str, Any], label_b: str, b: dict[str, Any]) -> str | None:
    for key in sorted(set(a) | set(b)):
        va, vb = canonical_json(a.get(key)), canonical_json(b.get(key))
        if va == vb:
            continue
        if key == "info" and isinstance(a.get(key), dict) and isinstance(b.get(key), dict):
            for sub in sorted(set(a[key]) | set(b[key])):
                sa, sb = canonical_json(a[key].get(sub)), canonical_json(b[key].get(sub))
                if sa != sb:
                    what = "reward: the score" if sub == "score" else f"field 'info.{sub}'"
                    return f"{what} in the first observation is {short(sa)} {label_a} and {short(sb)} {label_b}"
        return f"first observation field {key!r} is {short(va)} {label_a} and {short(vb)} {label_b}"
    return None


def state_json(state: Any) -> dict[str, Any]:
    return state.model_dump(mode="json", exclude={"episode_id"})


def brief(canonical: str) -> str:
    """A result as a person reads it: its text content (and the error flag)."""
    try:
        data = json.loads(canonical)
    except json.JSONDecodeError:
        return short(canonical)
    if not isinstance(data, dict) or "content" not in data:
        return short(canonical)
    texts = [c.get("text", f"<{c.get('type')}>") for c in data.get("content", []) if isinstance(c, dict)]
    text = json.dumps(" ".join(texts))
    if data.get("structuredContent") is not None:
        text += f" structured {json.dumps(data['structuredContent'], sort_keys=True)}"
    return short(("error " if data.get("isError") else "") + text)
