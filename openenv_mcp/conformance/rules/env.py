"""Episode rules: parity of the two faces, determinism, reset, isolation, sim/prod identity.

They need an environment with episodes (an openenv-mcp environment loaded
locally, or served with a control plane). The trajectory they replay is the
environment's scripted reference trajectory for the episode's task where it
has one, else seeded calls generated from the tools' input schemas.

Order and dependency: ``env.determinism`` reports what the determinism probe
(:func:`openenv_mcp.conformance.replay.volatility`, run once per run) found nondeterministic; parity,
reset and isolation ignore exactly those values, and normalize what the
framework varies per episode (:mod:`openenv_mcp.conformance.normalize`). Reset and isolation watch
every channel (:mod:`openenv_mcp.conformance.channels`): tool results, resources, prompts, rewards.
"""

from __future__ import annotations

import json
import time
from typing import Any

from mcp.types import Tool

from openenv_mcp.conformance.argsgen import generate_calls, nonce_words
from openenv_mcp.conformance.base import Context, Failed, Inconclusive, Skipped, call_tool_as_sent, fail_if, rule
from openenv_mcp.conformance.channels import read_only_calls, read_only_tools, shown_pair, snapshot
from openenv_mcp.conformance.normalize import Normalizer, episode_values
from openenv_mcp.conformance.replay import (
    DEPENDENTS,
    Probe,
    Step,
    actions_for,
    brief,
    call_text,
    channel_of,
    next_second,
    observation_difference,
    replay,
    rule_calls,
    rule_noise,
    short,
    state_json,
    two_episodes,
    volatility,
)
from openenv_mcp.conformance.volatility import Volatility
from openenv_mcp.core.environment import Environment
from openenv_mcp.types import CallTool, canonical_json

TIME_BOX = 15.0
"""Seconds the parity rule spends on further tasks once the first one is checked."""


def _tools_json(tools: list[Tool]) -> str:
    return canonical_json([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])


_NOT_IN_MODERN = ("execution",)
"""Tool fields the 2026-07-28 protocol generation no longer carries (the SDK drops them)."""


def _for_version(tools: list[dict[str, Any]], version: str | None) -> list[dict[str, Any]]:
    """The tool list as a client of ``version`` sees it."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if version not in MODERN_PROTOCOL_VERSIONS:
        return tools
    return [{k: v for k, v in t.items() if k not in _NOT_IN_MODERN} for t in tools]


def _tools_difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str | None:
    names_a, names_b = [t.get("name") for t in a], [t.get("name") for t in b]
    if names_a != names_b:
        return f"names {names_a} in the observation, {names_b} over MCP"
    for ta, tb in zip(a, b, strict=True):
        for key in sorted(set(ta) | set(tb)):
            if canonical_json(ta.get(key)) != canonical_json(tb.get(key)):
                return (
                    f"tool {ta.get('name')!r} field {key!r} is {short(canonical_json(ta.get(key)), 80)} in the "
                    f"observation and {short(canonical_json(tb.get(key)), 80)} over MCP"
                )
    return None


def _probe_actions(handle: Any, ctx: Context) -> list[CallTool]:
    """This rule's generated calls; the determinism probe replays calls like these, so what varies
    in them on its own is known (:func:`openenv_mcp.conformance.replay.rule_calls`)."""
    return rule_calls(ctx, handle, ctx.rule_id)


class Compare:
    """Compares two episodes' steps and channels with the framework's per-episode values
    normalized and the probe's nondeterministic values masked; says what it did."""

    def __init__(self, volatile: Volatility, *values: dict[str, str]) -> None:
        self.volatile = volatile
        self.norm = Normalizer(*values)
        self.masked: set[str] = set()

    def text(self, channel: str, raw: str) -> str:
        normalized = self.norm(raw)
        out = self.volatile.mask(channel, normalized)
        if out != normalized:
            self.masked.add(channel)
        return out

    def steps(self, label_a: str, a: list[Step], label_b: str, b: list[Step]) -> str | None:
        """The first step whose result (then reward) differs, named with both values."""
        for i, (sa, sb) in enumerate(zip(a, b, strict=False), 1):
            channel = f"tool {sa.action.name}"
            ra, rb = self.text(channel, sa.result), self.text(channel, sb.result)
            if ra != rb:
                full = "" if brief(ra) != brief(rb) else f" (full results {short(ra, 300)} vs {short(rb, 300)})"
                return f"step {i} {call_text(sa.action)} returned {brief(ra)} {label_a} and {brief(rb)} {label_b}{full}"
        for i, (sa, sb) in enumerate(zip(a, b, strict=False), 1):
            if self.text("reward", str(sa.reward)) != self.text("reward", str(sb.reward)):
                return f"reward: step {i} {call_text(sa.action)} earned {sa.reward} {label_a} and {sb.reward} {label_b}"
        if len(a) != len(b):
            return f"{label_a} took {len(a)} steps, {label_b} took {len(b)}"
        return None

    def channels(self, a: dict[str, str], b: dict[str, str]) -> tuple[str, str, str] | None:
        """The first channel that shows something else: (label, value in a, value in b)."""
        for label in sorted(set(a) | set(b)):
            va = self.text(channel_of(label), a.get(label, "(absent)"))
            vb = self.text(channel_of(label), b.get(label, "(absent)"))
            if va != vb:
                return label, *shown_pair(va, vb)
        return None

    def note(self) -> str | None:
        parts = [self.norm.note()]
        if self.masked:
            parts.append(
                "ignored the values env.determinism found nondeterministic on " + ", ".join(sorted(self.masked))
            )
        return "; ".join(p for p in parts if p) or None


def _caveat(probe: Probe, claim: str = "leaked state") -> str:
    if probe.problems or probe.fatal:
        return f" (env.determinism fails too: this may be nondeterminism rather than {claim})"
    return ""


def _writes_failed(steps: list[Step], read_only: set[str], what: str) -> None:
    """Raise :class:`Inconclusive` when every call that could write returned an error."""
    writes = [s for s in steps if s.action.name not in read_only]
    if not writes or not all(json.loads(s.result).get("isError") for s in writes):
        return
    first = writes[0]
    raise Inconclusive(
        f"every call that could write failed ({len(writes)} of {len(steps)} calls, e.g. {call_text(first.action)} "
        f"returned {brief(first.result)}): the writes failed, nothing changed, so {what} could not be tested "
        "(give the environment solutions that succeed, or a writable workspace)"
    )


# -- determinism -------------------------------------------------------------------
@rule(
    "env.determinism",
    "error",
    "the same seed gives the same task, first observation and results, whatever time it is",
    needs=("episodes",),
    timeout=300,
    runs_after=DEPENDENTS,
)
async def check_determinism(ctx: Context) -> str | None:
    probe = await volatility(ctx)
    if not probe.fatal:
        for rule_id in DEPENDENTS:  # what varies in their calls (already there when they ran first)
            await rule_noise(ctx, rule_id)
    if probe.fatal:
        raise Failed(probe.fatal)
    if probe.problems:
        shown_problems = "; ".join(probe.problems[:6])
        more = f" (and {len(probe.problems) - 6} more)" if len(probe.problems) > 6 else ""
        raise Failed(
            f"two episodes reset with seed {ctx.seed}, same trajectory: {shown_problems}{more}; env.parity, "
            f"env.reset_restores and env.episode_isolation ignore these values on "
            f"{', '.join(probe.volatile.channels())} (each tool's first call ran one wall-clock second apart; "
            "from the calls reset and isolation generate, only clock-, counter- and random-name-shaped values)"
        )
    ctx.conclude(tally=probe.tally)
    return None


# -- parity ------------------------------------------------------------------------
@rule(
    "env.parity",
    "error",
    "the MCP face and step() give the same tools, results, end state and reward",
    needs=("episodes",),
    timeout=120,
)
async def check_parity(ctx: Context) -> str | None:
    probe = await volatility(ctx)
    environment = ctx.subject.environment
    tasks = environment.tasks.tasks[: ctx.max_tasks] if environment is not None else [None]
    started = time.monotonic()
    checked = 0
    notes: set[str] = set()
    for n, task in enumerate(tasks):
        if checked and time.monotonic() - started > TIME_BOX:
            break
        seed = ctx.seed + n
        task_id = task.id if task is not None else None
        for kind in ("reference", "wrong"):
            async with two_episodes(ctx, seed, task_id) as (a, b):
                compare = Compare(probe.volatile, episode_values(a), episode_values(b))
                actions = await actions_for(ctx, a, kind)
                tools_a = a.first_observation().get("tools") or []
                steps_a: list[Step] = []
                steps_b: list[Step] = []
                async with b.mcp() as client:  # lockstep: a shared store looks the same to both
                    listed = json.loads(_tools_json((await client.list_tools()).tools))
                    version = client.protocol_version
                    for action in actions:
                        if a.ended:
                            break
                        steps_a += await replay(a, [action])
                        result = await call_tool_as_sent(client, action.name, action.arguments)
                        steps_b.append(Step(action, canonical_json(result), steps_a[-1].reward))
                        state = await b.state()  # the MCP face does not say when the episode ends
                        if state.done or state.truncated:
                            break
                state_a, state_b = state_json(await a.state()), state_json(await b.state())
            scripted = ctx.subject.trajectory(b.task, kind) is not None
            where = f"task {b.task.id!r} ({kind + ' trajectory' if scripted else 'generated calls'}, seed {seed})"
            diff = _tools_difference(_for_version(tools_a, version), _for_version(listed, version))
            if diff:
                raise Failed(
                    f"{where}: tools/list over MCP (protocol {version}) differs from the reset "
                    f"observation's tools: {diff}"
                )
            diff = compare.steps("via step()", steps_a, "via MCP tools/call", steps_b)
            if diff:
                raise Failed(f"{where}: {diff}{_caveat(probe, 'a difference between the faces')}")
            ignored = {"cumulative_reward"} if "reward" in probe.volatile.channels() else set()
            keys = [k for k in state_a if k not in ignored and state_a[k] != state_b.get(k)]
            if keys:
                raise Failed(
                    f"{where}: end state differs in {keys}: via step() "
                    f"{ {k: state_a[k] for k in keys} }, via MCP { {k: state_b.get(k) for k in keys} }"
                )
            notes.add(compare.note() or "")
            if not scripted:
                break  # generated calls: one run per task is enough
        checked += 1
    ctx.conclude()
    return "; ".join(sorted(n for n in notes if n)) or None


# -- reset and isolation -----------------------------------------------------------
@rule(
    "env.reset_restores",
    "error",
    "changes made in an episode are gone after reset, on every channel (tools, resources, prompts, reward)",
    needs=("episodes",),
    timeout=300,
)
async def check_reset_restores(ctx: Context) -> str | None:
    probe = await volatility(ctx)
    a = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        values_a = episode_values(a)
        first_a = a.first_observation()
        actions = _probe_actions(a, ctx)
        read_only = read_only_tools(first_a.get("tools") or [])
        reads = read_only_calls(actions, read_only)
        fresh_a = await snapshot(a, reads)
        steps_a = await replay(a, actions)
        end_a = await snapshot(a)
    finally:
        await a.close()
    _writes_failed(steps_a, read_only, "whether reset restores the world")
    b = await ctx.subject.new_episode(seed=ctx.seed)  # the reset
    try:
        values_b, first_b = episode_values(b), b.first_observation()
        fresh_b = await snapshot(b, reads)
        steps_b = await replay(b, actions)
        end_b = await snapshot(b)
    finally:
        await b.close()

    def difference(compare: Compare) -> str | None:
        diff = observation_difference(
            "after reset", json.loads(compare.norm(json.dumps(first_b))),
            "in the first episode", json.loads(compare.norm(json.dumps(first_a))),
        )  # fmt: skip
        if diff is None and (seen := compare.channels(fresh_a, fresh_b)):
            diff = (
                f"before any call, {seen[0]} shows {seen[2]}, where the first episode showed {seen[1]} before its calls"
            )
        if diff is None:
            diff = compare.steps("after reset", steps_b, "in the first episode", steps_a)
        if diff is None and (seen := compare.channels(end_a, end_b)):
            diff = f"after the calls, {seen[0]} shows {seen[2]} after reset and {seen[1]} in the first episode"
        return diff

    diff = difference(Compare(probe.volatile, values_a, values_b))
    if diff:  # what varies on its own in these calls? (learned after this rule's episodes, not before)
        await rule_noise(ctx, ctx.rule_id, actions)
    compare = Compare(probe.volatile, values_a, values_b)
    diff = difference(compare)
    unmasked = None if diff else difference(Compare(Volatility(), values_a, values_b))
    if unmasked and await _writes_explain(ctx, probe.volatile):
        diff = unmasked + _UNMASKED
    if diff:
        raise Failed(
            f"replaying generated calls after reset(seed={ctx.seed}): {diff}: changes made in the "
            f"previous episode are still visible{'' if unmasked else _caveat(probe)}"
        )
    ctx.conclude()
    return compare.note()


@rule(
    "env.episode_isolation",
    "error",
    "two concurrent episodes never see each other's writes, on any channel (tools, resources, prompts, reward)",
    needs=("episodes",),
    timeout=300,
)
async def check_episode_isolation(ctx: Context) -> str | None:
    probe = await volatility(ctx)
    async with two_episodes(ctx, ctx.seed) as (a, b):
        values = episode_values(a), episode_values(b)
        actions = _probe_actions(a, ctx)
        read_only = read_only_tools(a.first_observation().get("tools") or [])
        reads = read_only_calls(actions, read_only)
        fresh_a = await snapshot(a, reads)
        steps_a = await replay(a, actions)  # A writes while B is live ...
        _writes_failed(steps_a, read_only, "whether episodes are isolated")
        fresh_b = await snapshot(b, reads)  # ... B looks before any call ...
        steps_b = await replay(b, actions)  # ... then B replays the same calls
        end_a, end_b = await snapshot(a), await snapshot(b)

    def difference(compare: Compare) -> str | None:
        if seen := compare.channels(fresh_a, fresh_b):
            return f"{seen[0]}: episode B read {seen[2]} after A's calls, before any of its own; A read {seen[1]} fresh"
        diff = compare.steps("in episode B", steps_b, "in episode A", steps_a)
        if diff is None and (seen := compare.channels(end_a, end_b)):
            diff = f"after the same calls, {seen[0]} shows {seen[2]} in episode B and {seen[1]} in episode A"
        return diff

    diff = difference(Compare(probe.volatile, *values))
    if diff:  # what varies on its own in these calls? (learned after this rule's episodes, not before)
        await rule_noise(ctx, ctx.rule_id, actions)
    compare = Compare(probe.volatile, *values)
    diff = difference(compare)
    unmasked = None if diff else difference(Compare(Volatility(), *values))
    if unmasked and await _writes_explain(ctx, probe.volatile):
        diff = unmasked + _UNMASKED
    if diff:
        raise Failed(
            f"two live episodes (seed {ctx.seed}), A replayed generated calls, then B the same ones: "
            f"{diff}: A's writes are visible in B{'' if unmasked else _caveat(probe)}"
        )
    ctx.conclude()
    return compare.note()


_UNMASKED = (
    " (env.determinism took this value for nondeterminism, but two control episodes replaying the same calls "
    "on arguments of their own agree on it: it is state one episode wrote and another read)"
)


async def _writes_explain(ctx: Context, volatile: Volatility) -> bool:
    """A difference only the determinism masks hid: state one episode wrote and the other read
    (a shared counter differs between lockstep episodes too, so the probe took it for noise), or
    the server's own nondeterminism? Control: two fresh episodes replay the rule's calls, each on
    a vocabulary of its own (neither can read what the other wrote), compared with each one's
    words replaced by one placeholder: if they agree, the masked difference was the writes'."""
    if not volatile.channels():
        return False
    key = f"control {ctx.rule_id}"  # one control per rule: its calls are the ones whose values it judges
    if key not in ctx.cache:
        ctx.cache[key] = await _control_agrees(ctx)
    return ctx.cache[key]


async def _control_agrees(ctx: Context) -> bool:
    handles = [await ctx.subject.new_episode(seed=ctx.seed)]
    try:
        handles.append(await ctx.subject.new_episode(seed=ctx.seed))
        tools = [Tool.model_validate(t) for t in handles[0].first_observation().get("tools", [])]
        runs: list[tuple[dict[str, str], list[Step], dict[str, str]]] = []
        started = time.time()
        for n, handle in enumerate(handles):
            if n:  # a clock printed to the second differs between the two, as in the determinism probe
                await next_second(started)
            words = nonce_words()
            calls = generate_calls(
                tools, f"{ctx.seed}:{ctx.rule_id}", ctx.calls, words, ctx.sample_calls(handles[0].task)
            )
            steps = await replay(handle, calls)
            values = episode_values(handle) | {f"control word {i}": w for i, w in enumerate(words, 1)}
            runs.append((values, steps, await snapshot(handle)))
            if n == 0 and not steps:
                return False
    finally:
        for handle in handles:
            await handle.close()
    (values_c, steps_c, end_c), (values_d, steps_d, end_d) = runs
    control = Compare(Volatility(), values_c, values_d)
    return control.steps("in one", steps_c, "in the other", steps_d) is None and not control.channels(end_c, end_d)


# -- sim/prod identity ---------------------------------------------------------------
IDENTITY_FIELDS = (
    ("input_schema", "inputSchema"),
    ("output_schema", "outputSchema"),
    ("description", "description"),
    ("title", "title"),
    ("annotations", "annotations"),
)
"""What a production face must keep of every simulation tool (besides its name)."""


@rule(
    "env.prod_identity",
    "error",
    "the production face (--mode prod, on a user's folder when the environment "
    "works on one) offers the same tool names, schemas, descriptions and annotations as simulation",
    needs=("local",),
    timeout=120,
)
async def check_prod_identity(ctx: Context) -> None:
    import tempfile

    environment = ctx.subject.environment
    if environment is None:
        raise Skipped("needs an environment loaded locally")
    spec = environment.spec
    listed: dict[str, dict[str, Tool]] = {}
    with tempfile.TemporaryDirectory(prefix="openenv-mcp-prod-identity-") as folder:
        # production as a user runs it: on an (empty) folder of theirs when the environment works on one
        user = folder if spec.prod_workspace == "required" else None
        for mode in ("sim", "prod"):
            try:
                env = Environment(
                    spec, mode=mode, workdir=environment.workdir, workspace=user if mode == "prod" else None
                )
                episode = await env.new_episode(seed=ctx.seed)
            except Exception as e:
                raise Failed(
                    f"the {mode} face could not start, so its interface cannot be compared: {e} "
                    "(give it what it needs, e.g. the variables in pass_env)"
                ) from e
            try:
                listed[mode] = {t.name: t for t in episode.tools}
            finally:
                await episode.close()
    sim, prod = listed["sim"], listed["prod"]
    problems = []
    if set(sim) != set(prod):
        problems.append(
            f"tools only in sim: {sorted(set(sim) - set(prod))}, only in prod: {sorted(set(prod) - set(sim))}"
        )
    for name in sorted(set(sim) & set(prod)):
        for field, alias in IDENTITY_FIELDS:
            a, b = _wire(getattr(sim[name], field)), _wire(getattr(prod[name], field))
            if canonical_json(a) != canonical_json(b):
                problems.append(
                    f"tool {name!r} {alias} differs: sim {short(canonical_json(a), 100)}, "
                    f"prod {short(canonical_json(b), 100)}"
                )
    variants = [s.name for s in spec.tool_servers if s.prod]
    fail_if([f"servers {variants}: {p}" if variants else p for p in problems])


def _wire(value: Any) -> Any:
    """A tool field as it goes on the wire (models dumped by alias, unset fields left out)."""
    return value.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(value, "model_dump") else value


# -- parity over the real wire -----------------------------------------------------------
@rule(
    "wire.parity",
    "error",
    "served over real HTTP, an episode's own MCP address and the control plane's step "
    "give the same tools, results, end state and reward",
    needs=("local", "http"),
    timeout=120,
)
async def check_wire_parity(ctx: Context) -> None:
    from openenv_mcp.conformance.subject import UrlSubject

    async with ctx.subject.http() as url:
        served = UrlSubject(url, values=getattr(ctx.subject, "served_values", None))  # the same paths normalized
        await served.prepare()
        try:
            if "episodes" not in served.capabilities:
                raise Skipped("the served environment has no control plane (production mode)")
            served.trajectory = ctx.subject.trajectory  # type: ignore[method-assign]  # the scripted ones
            probe = await volatility(ctx)  # the same values ignored as in env.parity
            await check_parity(
                Context(
                    subject=served, seed=ctx.seed, calls=ctx.calls, results=ctx.results, cache={"volatility": probe}
                )
            )
        finally:
            await served.aclose()
