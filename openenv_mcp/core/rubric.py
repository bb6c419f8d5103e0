"""Rubric rewards: named, weighted criteria from existing graders.

An env file's ``[reward]`` table with ``[[reward.criteria]]`` makes the reward a
weighted mean of criteria, each one of:

* ``python = "module:function"``: a callable ``f(ctx) -> float | Score``;
* ``command = [...]``: a command run inside a tool server's boundary (exactly
  the command reward of :mod:`openenv_mcp.core.rewards`);
* ``verifier = "math" | "exact"``: a library verifier comparing the task's
  ``answer`` with the agent's candidate answer (``math`` uses ``math-verify``);
* ``judge = {...}``: an LLM judge on any OpenAI-compatible endpoint (see
  :mod:`openenv_mcp.core.judge`);
* ``service = {...}``: an external reward service over HTTP (see :mod:`openenv_mcp.core.judge`
  for the JSON contract).

Every step's observation carries ``info["criteria"] = {name: score}``. A
criterion that fails (a judge that times out, a service that answers 500, a
verifier that cannot parse) is never a silent 0: the rubric raises naming the
criterion, the episode reports it in ``info["reward_error"]`` and keeps the
score where it was.
"""

from __future__ import annotations

import inspect
import json
import weakref
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openenv_mcp.definitions.spec import load_object
from openenv_mcp.errors import ConfigError, CriterionError
from openenv_mcp.types import Score

__all__ = ["Criterion", "CriterionError", "Rubric", "RubricSpec", "candidate_answer", "trajectory_text"]


class Criterion(BaseModel):
    """One ``[[reward.criteria]]`` table."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Key in ``info["criteria"]``."""
    weight: float = Field(default=1.0, ge=0)
    """Weight in the rubric's weighted mean."""
    python: str | None = None
    command: list[str] | None = None
    server: str | None = None
    """For ``command``: whose boundary runs it."""
    timeout: float = 30.0
    """For ``command``: seconds it may take."""
    verifier: Literal["math", "exact"] | None = None
    candidate: str = "last_arguments"
    """For ``verifier``: the agent's answer: ``last_arguments`` (the string values of
    the last call's arguments), ``last_result`` (the last result's text) or
    ``argument:NAME`` (that argument of the last call that has it)."""
    judge: dict[str, Any] | None = None
    service: dict[str, Any] | None = None
    on_tools: list[str] | None = None
    """Re-score only after calls to these tools (keep the last score otherwise):
    for slow or paid criteria such as a judge. Default: after every step."""

    @model_validator(mode="after")
    def _one_kind(self) -> Criterion:
        kinds = [k for k in ("python", "command", "verifier", "judge", "service") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"criterion {self.name!r} needs exactly one of python, command, verifier, judge, "
                f"service (got {', '.join(kinds) or 'none'})"
            )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("python", "command", "verifier", "judge", "service") if getattr(self, k) is not None)


class RubricSpec(BaseModel):
    """The ``[reward]`` table of a rubric."""

    model_config = ConfigDict(extra="forbid")

    criteria: list[Criterion]

    @model_validator(mode="after")
    def _unique(self) -> RubricSpec:
        if not self.criteria:
            raise ValueError("reward.criteria is empty")
        names = [c.name for c in self.criteria]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"criterion names must be unique; repeated: {dup}")
        if sum(c.weight for c in self.criteria) <= 0:
            raise ValueError("the criteria's weights sum to 0")
        return self


def result_text(result: Any) -> str:
    if result is None:
        return ""
    parts = [getattr(c, "text", "") for c in result.content]
    if not any(parts) and result.structured_content is not None:
        return json.dumps(result.structured_content, sort_keys=True)
    return "\n".join(p for p in parts if p)


def candidate_answer(ctx: Any, source: str) -> str | None:
    """The agent's answer for a verifier (``None``: the agent gave none yet)."""
    history = ctx.history
    if not history:
        return None
    if source == "last_result":
        return result_text(history[-1][1])
    if source.startswith("argument:"):
        key = source.split(":", 1)[1]
        for action, _ in reversed(history):
            if key in action.arguments:
                value = action.arguments[key]
                return value if isinstance(value, str) else json.dumps(value)
        return None
    args = history[-1][0].arguments
    return " ".join(v if isinstance(v, str) else json.dumps(v) for v in args.values())


def trajectory_text(ctx: Any, limit: int) -> str:
    """The episode so far as text for a judge; agent-made, so cut to ``limit`` characters
    (the head and the tail are kept, the middle is replaced by a visible marker)."""
    lines = []
    for i, (action, result) in enumerate(ctx.history):
        lines.append(f"[call {i}] {action.name} {json.dumps(action.arguments, ensure_ascii=False)}")
        lines.append(f"[result {i}{' error' if result.is_error else ''}] {result_text(result)}")
    return truncate("\n".join(lines), limit)


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:] if tail else ''}"


def _verify(kind: str, gold: Any, candidate: str) -> float:
    if kind == "exact":
        want = gold if isinstance(gold, str) else json.dumps(gold)
        return 1.0 if candidate.strip() == want.strip() else 0.0
    try:
        from math_verify import parse, verify
    except ImportError as e:  # checked at load time too; kept for a package removed later
        raise CriterionError("the math verifier needs the math-verify package: pip install math-verify") from e
    gold_text = gold if isinstance(gold, str) else str(gold)

    def wrap(s: str) -> str:
        return s if "$" in s or "\\" in s else f"${s}$"

    # math-verify's own timeouts use signal.alarm (main thread only); this runs in a worker
    # thread under MATH_VERIFY_TIMEOUT instead, on an agent answer cut to MATH_MAX_CHARS.
    gold_parsed = parse(wrap(gold_text), parsing_timeout=None)  # pyright: ignore[reportArgumentType]  # None (no alarm) is documented, the annotation says int
    got = parse(wrap(candidate[:MATH_MAX_CHARS]), parsing_timeout=None)  # pyright: ignore[reportArgumentType]  # as above
    return 1.0 if verify(gold_parsed, got, timeout_seconds=None) else 0.0


MATH_MAX_CHARS = 2000
"""Longest agent answer given to the math verifier (a longer one is cut)."""
MATH_VERIFY_TIMEOUT = 10.0
"""Seconds the math verifier may take on one answer; past it the criterion fails (named)."""


async def verify_answer(kind: str, gold: Any, candidate: str) -> float:
    """:func:`_verify` off the event loop, bounded in time."""
    if kind == "exact":
        return _verify(kind, gold, candidate)
    try:
        with anyio.fail_after(MATH_VERIFY_TIMEOUT):
            return await anyio.to_thread.run_sync(_verify, kind, gold, candidate, abandon_on_cancel=True)
    except TimeoutError:
        raise CriterionError(f"the math verifier took more than {MATH_VERIFY_TIMEOUT:g} s on the answer") from None


class Rubric:
    """A reward function scoring a weighted mean of criteria (``info["criteria"]`` has each)."""

    def __init__(self, table: dict[str, Any], server_names: list[str], env_name: str, base_dir: Any) -> None:
        try:
            self.spec = RubricSpec.model_validate(table)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ConfigError(
                f"{env_name}: invalid [reward] table: {err['msg']}" + (f" at {where}" if where else "")
            ) from e
        self.env_name = env_name
        self._scorers: dict[str, Any] = {}
        self._last: weakref.WeakKeyDictionary[Any, dict[str, float]] = weakref.WeakKeyDictionary()
        """Per episode, each criterion's last score (kept between ``on_tools`` triggers)."""
        for c in self.spec.criteria:
            self._scorers[c.name] = self._build(c, server_names, base_dir)

    def _build(self, c: Criterion, server_names: list[str], base_dir: Any) -> Any:
        if c.kind == "python":
            fn = load_object(c.python, base_dir)
            if not callable(fn):
                raise ConfigError(f"{self.env_name}: criterion {c.name!r}: {c.python!r} is not callable")
            return fn
        if c.kind == "command":
            from openenv_mcp.core.rewards import CommandReward

            return CommandReward(
                {"command": c.command, "server": c.server, "timeout": c.timeout},
                server_names,
                f"{self.env_name} criterion {c.name!r}",
            )
        if c.kind == "verifier":
            assert c.verifier is not None  # kind is "verifier" only when verifier is set (Criterion.kind)
            if c.verifier == "math":
                try:
                    import math_verify  # noqa: F401
                except ImportError:
                    raise ConfigError(
                        f"{self.env_name}: criterion {c.name!r} uses verifier 'math', which needs "
                        "the math-verify package: pip install 'openenv-mcp[rewards]'"
                    ) from None
            if not (c.candidate in ("last_arguments", "last_result") or c.candidate.startswith("argument:")):
                raise ConfigError(
                    f"{self.env_name}: criterion {c.name!r}: candidate must be last_arguments, "
                    f"last_result or argument:NAME, got {c.candidate!r}"
                )

            async def verifier(ctx: Any, kind: str = c.verifier, source: str = c.candidate) -> float:
                got = candidate_answer(ctx, source)
                if got is None or ctx.task.answer is None:
                    return 0.0
                return await verify_answer(kind, ctx.task.answer, got)

            return verifier
        from openenv_mcp.core.judge import LLMJudge, RewardService

        try:
            if c.kind == "judge":
                return LLMJudge(c.name, c.judge or {})
            return RewardService(c.name, c.service or {})
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(
                f"{self.env_name}: criterion {c.name!r}: invalid {c.kind} table: {err['msg']} "
                f"at {'.'.join(str(p) for p in err['loc'])}"
            ) from e

    async def __call__(self, ctx: Any) -> Score:
        last: dict[str, float] = {} if ctx.episode is None else self._last.setdefault(ctx.episode, {})
        scores: dict[str, float] = {}
        infos: dict[str, Any] = {}
        for c in self.spec.criteria:
            triggered = c.on_tools is None or (ctx.action is not None and ctx.action.name in c.on_tools)
            if not triggered:
                scores[c.name] = last.get(c.name, 0.0)
                continue
            try:
                value = self._scorers[c.name](ctx)
                if inspect.isawaitable(value):
                    value = await value
            except CriterionError:
                raise
            except Exception as e:  # noqa: BLE001 - named, never silent
                raise CriterionError(f"criterion {c.name!r} ({c.kind}) failed: {type(e).__name__}: {e}") from e
            if isinstance(value, Score):
                if value.info:
                    infos[c.name] = value.info
                value = value.score
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise CriterionError(f"criterion {c.name!r} ({c.kind}) returned {value!r}, expected a number")
            scores[c.name] = float(value)
        last.update(scores)
        total = sum(c.weight * scores[c.name] for c in self.spec.criteria) / sum(c.weight for c in self.spec.criteria)
        info: dict[str, Any] = {"criteria": scores}
        if infos:
            info["criteria_info"] = infos
        return Score(score=total, info=info)
