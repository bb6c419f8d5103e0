"""Episode rules: parity of the two faces, determinism, reset, isolation, sim/prod identity.

They need an environment with episodes (an openenv-mcp environment loaded
locally, or served with a control plane). The trajectory they replay is the
environment's scripted reference trajectory for the episode's task where it
has one, else seeded calls generated from the tools' input schemas.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from mcp.types import Tool

from ...core.environment import Environment
from ...types import CallTool, canonical_json
from ..argsgen import generate_calls, nonce_words
from ..base import Context, Failed, Skipped, fail_if, rule
from ..subject import EpisodeHandle

TIME_BOX = 15.0
"""Seconds the parity rule spends on further tasks once the first one is checked."""


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
                    f"tool {ta.get('name')!r} field {key!r} is {_short(canonical_json(ta.get(key)), 80)} in the "
                    f"observation and {_short(canonical_json(tb.get(key)), 80)} over MCP"
                )
    return None


def _state_json(state: Any) -> dict[str, Any]:
    return state.model_dump(mode="json", exclude={"episode_id"})


async def _actions(ctx: Context, handle: EpisodeHandle, kind: str = "reference") -> list[CallTool]:
    scripted = ctx.subject.trajectory(handle.task, kind)
    if scripted is not None:
        return scripted
    tools = [Tool.model_validate(t) for t in handle.first_observation().get("tools", [])]
    return generate_calls(tools, ctx.seed, ctx.calls, samples=ctx.sample_calls(handle.task))


def _probe_actions(ctx: Context, handle: EpisodeHandle) -> list[CallTool]:
    """Generated calls over a vocabulary unique to this experiment: reads and writes hit the
    same keys, and nothing an earlier rule wrote can look like it."""
    tools = [Tool.model_validate(t) for t in handle.first_observation().get("tools", [])]
    # seeded per rule: values drawn from a schema's small pool (pattern, enum) differ from what an
    # earlier rule wrote, so a leak of its writes is visible here too
    return generate_calls(tools, f"{ctx.seed}:{ctx.rule_id}", ctx.calls, nonce_words(), ctx.sample_calls(handle.task))


def _brief(canonical: str) -> str:
    """A result as a person reads it: its text content (and the error flag)."""
    try:
        data = json.loads(canonical)
    except json.JSONDecodeError:
        return _short(canonical)
    if not isinstance(data, dict) or "content" not in data:
        return _short(canonical)
    texts = [c.get("text", f"<{c.get('type')}>") for c in data.get("content", []) if isinstance(c, dict)]
    text = json.dumps(" ".join(texts))
    if data.get("structuredContent") is not None:
        text += f" structured {json.dumps(data['structuredContent'], sort_keys=True)}"
    return _short(("error " if data.get("isError") else "") + text)


async def _replay(handle: EpisodeHandle, actions: list[CallTool]) -> list[tuple[CallTool, str]]:
    """Step ``actions`` until the episode ends; (action, canonical result) per step."""
    out = []
    for action in actions:
        if handle.ended:
            break
        obs = await handle.step(action)
        out.append((action, canonical_json(obs.result)))
    return out


def _first_difference(
    label_a: str, a: list[tuple[CallTool, str]], label_b: str, b: list[tuple[CallTool, str]]
) -> str | None:
    for i, ((action, ra), (_, rb)) in enumerate(zip(a, b, strict=False), 1):
        if ra != rb:
            full = "" if _brief(ra) != _brief(rb) else f" (full results {_short(ra, 300)} vs {_short(rb, 300)})"
            return (
                f"step {i} tools/call {action.name!r} {_short(json.dumps(action.arguments), 60)} returned "
                f"{_brief(ra)} {label_a} and {_brief(rb)} {label_b}{full}"
            )
    if len(a) != len(b):
        return f"{label_a} took {len(a)} steps, {label_b} took {len(b)}"
    return None


def _observation_difference(label_a: str, a: dict[str, Any], label_b: str, b: dict[str, Any]) -> str | None:
    for key in sorted(set(a) | set(b)):
        va, vb = canonical_json(a.get(key)), canonical_json(b.get(key))
        if va != vb:
            return f"first observation field {key!r} is {_short(va)} {label_a} and {_short(vb)} {label_b}"
    return None


_VOLATILE = [
    (
        re.compile(
            r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2} \d{4} "
            r"\d{2}:\d{2}:\d{2}( GMT[+-]\d{4})?( \([^)]*\))?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(\.\d+)?\b"), "<time>"),
    (re.compile(r"\b1\d{9}(\d{3})?(\.\d+)?\b"), "<epoch>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
]
"""Values that change with the clock or at random whatever the world's state: masked when
reset and isolation compare episodes (they look for leaked *state*; env.determinism, which
does not mask, reports time-dependent results)."""


def _masked(steps: list[tuple[CallTool, str]]) -> list[tuple[CallTool, str]]:
    out = []
    for action, text in steps:
        for pattern, placeholder in _VOLATILE:
            text = pattern.sub(placeholder, text)
        out.append((action, text))
    return out


def _caveat(ctx: Context, claim: str = "leaked state") -> str:
    if ctx.failed("env.determinism"):
        return f" (env.determinism failed too: this may be nondeterminism rather than {claim})"
    return ""


# -- determinism -------------------------------------------------------------------
@rule(
    "env.determinism",
    "error",
    "the same seed gives the same task, first observation and results",
    needs=("episodes",),
    timeout=120,
)
async def check_determinism(ctx: Context) -> None:
    for seed in (ctx.seed + 1,):
        a = await ctx.subject.new_episode(seed=seed)
        b = await ctx.subject.new_episode(seed=seed)
        try:
            if a.task.id != b.task.id:
                raise Failed(f"reset(seed={seed}) picked task {a.task.id!r} once and {b.task.id!r} the next time")
        finally:
            await a.close()
            await b.close()
    a = await ctx.subject.new_episode(seed=ctx.seed)
    b = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        diff = _observation_difference("in one episode", a.first_observation(), "in the other", b.first_observation())
        if diff:
            raise Failed(f"reset(seed={ctx.seed}) twice: {diff}")
        actions = await _actions(ctx, a)
        steps_a: list[tuple[CallTool, str]] = []
        steps_b: list[tuple[CallTool, str]] = []
        for action in actions:  # interleaved, so neither episode runs ahead of the other
            if a.ended or b.ended:
                break
            steps_a += await _replay(a, [action])
            steps_b += await _replay(b, [action])
        diff = _first_difference("in one episode", steps_a, "in the other", steps_b)
        if diff:
            raise Failed(f"two episodes reset with seed {ctx.seed}, same trajectory: {diff}")
        sa, sb = _state_json(await a.state()), _state_json(await b.state())
        if sa != sb:
            raise Failed(f"two episodes reset with seed {ctx.seed}, same trajectory: end states differ: {sa} != {sb}")
    finally:
        await a.close()
        await b.close()
    ctx.conclude()


# -- parity ------------------------------------------------------------------------
@rule(
    "env.parity",
    "error",
    "the MCP face and step() give the same tools, results, end state and reward",
    needs=("episodes",),
    timeout=120,
)
async def check_parity(ctx: Context) -> None:
    environment = ctx.subject.environment
    tasks = environment.tasks.tasks[: ctx.max_tasks] if environment is not None else [None]
    started = time.monotonic()
    checked = 0
    for n, task in enumerate(tasks):
        if checked and time.monotonic() - started > TIME_BOX:
            break
        seed = ctx.seed + n
        task_id = task.id if task is not None else None
        for kind in ("reference", "wrong"):
            a = await ctx.subject.new_episode(seed=seed, task_id=task_id)
            try:
                actions = await _actions(ctx, a, kind)
                tools_a = a.first_observation().get("tools") or []
                steps_a = await _replay(a, actions)
                state_a = _state_json(await a.state())
            finally:
                await a.close()
            b = await ctx.subject.new_episode(seed=seed, task_id=task_id)
            try:
                steps_b: list[tuple[CallTool, str]] = []
                async with b.mcp() as client:
                    listed = json.loads(_tools_json((await client.list_tools()).tools))
                    version = client.protocol_version
                    for action in actions:
                        steps_b.append((action, canonical_json(await client.call_tool(action.name, action.arguments))))
                        state = await b.state()  # the MCP face does not say when the episode ends
                        if state.done or state.truncated:
                            break
                state_b = _state_json(await b.state())
            finally:
                await b.close()
            scripted = ctx.subject.trajectory(b.task, kind) is not None
            where = f"task {b.task.id!r} ({kind + ' trajectory' if scripted else 'generated calls'}, seed {seed})"
            diff = _tools_difference(_for_version(tools_a, version), _for_version(listed, version))
            if diff:
                raise Failed(
                    f"{where}: tools/list over MCP (protocol {version}) differs from the reset "
                    f"observation's tools: {diff}"
                )
            diff = _first_difference("via step()", steps_a, "via MCP tools/call", steps_b)
            if diff:
                raise Failed(f"{where}: {diff}{_caveat(ctx, 'a difference between the faces')}")
            if state_a != state_b:
                keys = [k for k in state_a if state_a[k] != state_b.get(k)]
                raise Failed(
                    f"{where}: end state differs in {keys}: via step() "
                    f"{ {k: state_a[k] for k in keys} }, via MCP { {k: state_b.get(k) for k in keys} }"
                )
            if not scripted:
                break  # generated calls: one run per task is enough
        checked += 1
    ctx.conclude()


# -- reset and isolation -----------------------------------------------------------
@rule(
    "env.reset_restores", "error", "changes made in an episode are gone after reset", needs=("episodes",), timeout=120
)
async def check_reset_restores(ctx: Context) -> None:
    a = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        first_a = a.first_observation()
        actions = _probe_actions(ctx, a)
        steps_a = await _replay(a, actions)
    finally:
        await a.close()
    b = await ctx.subject.new_episode(seed=ctx.seed)  # the reset
    try:
        diff = _observation_difference("after reset", b.first_observation(), "in the first episode", first_a)
        if diff is None:
            diff = _first_difference(
                "after reset", _masked(await _replay(b, actions)), "in the first episode", _masked(steps_a)
            )
    finally:
        await b.close()
    if diff:
        raise Failed(
            f"replaying generated calls after reset(seed={ctx.seed}): {diff}: changes made in the "
            f"previous episode are still visible{_caveat(ctx)}"
        )
    ctx.conclude()


@rule(
    "env.episode_isolation",
    "error",
    "two concurrent episodes never see each other's writes",
    needs=("episodes",),
    timeout=120,
)
async def check_episode_isolation(ctx: Context) -> None:
    a = await ctx.subject.new_episode(seed=ctx.seed)
    try:
        b = await ctx.subject.new_episode(seed=ctx.seed)
    except BaseException:
        await a.close()
        raise
    try:
        actions = _probe_actions(ctx, a)
        steps_a = await _replay(a, actions)  # A writes while B is live ...
        steps_b = await _replay(b, actions)  # ... then B replays the same calls
        diff = _first_difference("in episode B", _masked(steps_b), "in episode A", _masked(steps_a))
    finally:
        await a.close()
        await b.close()
    if diff:
        raise Failed(
            f"two live episodes (seed {ctx.seed}), A replayed generated calls, then B the same ones: "
            f"{diff}: A's writes are visible in B{_caveat(ctx)}"
        )
    ctx.conclude()


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
                    f"tool {name!r} {alias} differs: sim {_short(canonical_json(a), 100)}, "
                    f"prod {_short(canonical_json(b), 100)}"
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
    from ..subject import UrlSubject

    async with ctx.subject.http() as url:
        served = UrlSubject(url)
        await served.prepare()
        try:
            if "episodes" not in served.capabilities:
                raise Skipped("the served environment has no control plane (production mode)")
            served.trajectory = ctx.subject.trajectory  # type: ignore[method-assign]  # the scripted ones
            await check_parity(Context(subject=served, seed=ctx.seed, calls=ctx.calls, results=ctx.results))
        finally:
            await served.aclose()
