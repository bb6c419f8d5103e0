"""Scripted checks of an environment: reference and wrong solutions, reward-hacking probes.

Every check is one episode played by a scripted policy through the same
``reset()``/``step()`` path a trainer uses. A probe *scores* when the
episode's score rises above zero at any step; the step that first made it
rise is recorded, so a finding names the exact call that earned reward.

Probes (each on every task):

* ``nothing``: reset and stop; the initial score must be 0;
* ``random``: seeded random calls with schema-valid arguments;
* ``degenerate``: each tool called with degenerate arguments (``{}``, empty
  strings, zeros, empty lists, wildcards);
* ``replay``: the answer (last call) of every earlier task's reference
  trajectory, submitted to this task (an answer that scores on another task is
  a hack, or a duplicate task);
* ``hack:NAME``: the environment's own probes (``probes(task[, seed])`` in its
  solutions module: the hacks particular to its tools, e.g. a page's DOM edited to
  show a confirmation), played like solutions, fixed or interactive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool

from openenv_mcp.conformance.argsgen import generate_calls
from openenv_mcp.core.scripts import Script
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.types import CallTool

__all__ = ["HACK_PREFIX", "PROBES", "CheckResult", "degenerate_calls", "is_probe", "play_script"]

PROBES = ("nothing", "random", "degenerate", "replay")
HACK_PREFIX = "hack:"
"""Checks named ``hack:NAME`` are an environment's own probes (see the module doc)."""


def is_probe(check: str) -> bool:
    """Whether ``check`` is a probe (generic or the environment's own): it must score 0."""
    return check in PROBES or check.startswith(HACK_PREFIX)


@dataclass
class CheckResult:
    """One scripted episode."""

    task_id: str
    check: str
    """``reference``, ``wrong`` or a probe name."""
    score: float = 0.0
    """The highest score the episode reached."""
    final_score: float = 0.0
    done: bool = False
    success: bool = False
    """The score reached the environment's ``success_score``."""
    steps: int = 0
    scoring_call: dict[str, Any] | None = None
    """The call at which the score first rose above zero (``None``: it never did)."""
    reward_errors: list[str] = field(default_factory=list)
    error: str | None = None
    """The episode could not be played (reset failed, no solution...)."""
    info: dict[str, Any] = field(default_factory=dict)
    """What the reward said at the last observation (its ``Score.info``: which goal is unmet, which
    guard broke), the episode's own keys left out."""
    played: list[CallTool] = field(default_factory=list)
    """The actions played (a script's depend on what the tools answered)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "check": self.check,
            "score": self.score,
            "final_score": self.final_score,
            "done": self.done,
            "success": self.success,
            "steps": self.steps,
            "scoring_call": self.scoring_call,
            "reward_errors": self.reward_errors,
            "error": self.error,
            "info": self.info,
        }


EPISODE_KEYS = frozenset({"episode_id", "step", "score", "elapsed_ms", "reward_error"})
"""Keys of an observation's ``info`` the episode writes; the rest is the reward's."""


def _degenerate_values(schema: Any) -> list[Any]:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if isinstance(schema, dict) and schema.get("enum"):
        return [schema["enum"][0]]
    return {
        "string": ["", "*", ".", "/"],
        "integer": [0, -1],
        "number": [0, -1],
        "boolean": [True, False],
        "array": [[]],
        "object": [{}],
    }.get(kind or "", ["", 0])


def degenerate_calls(tools: list[Tool]) -> list[CallTool]:
    """Each tool with ``{}`` and with every property set to each degenerate value of its type."""
    calls: list[CallTool] = []
    for tool in sorted(tools, key=lambda t: t.name):
        calls.append(CallTool(name=tool.name, arguments={}))
        props = (tool.input_schema or {}).get("properties") or {}
        if not props:
            continue
        options = {name: _degenerate_values(schema) for name, schema in props.items()}
        for i in range(max(len(v) for v in options.values())):
            calls.append(CallTool(name=tool.name, arguments={k: v[min(i, len(v) - 1)] for k, v in options.items()}))
    return calls


def random_calls(tools: list[Tool], seed: int, count: int) -> list[CallTool]:
    return generate_calls(tools, seed, count) if tools else []


async def play_script(
    make_env: Any,
    task_id: str,
    check: str,
    actions: list[CallTool] | Script | None,
    seed: int = 0,
    success_score: float = 1.0,
) -> CheckResult:
    """Play ``actions`` (a list, or a :class:`Script` that reads each observation; ``None``: reset
    only) on ``task_id`` and record the score's course. ``out.played`` is what was played."""
    out = CheckResult(task_id=task_id, check=check)
    script = actions if isinstance(actions, Script) else Script(actions or [])
    env = make_env()
    try:
        obs = await env.reset(seed=seed, task_id=task_id)
        score = float(obs.info.get("score", 0.0))
        out.score = out.final_score = score
        out.info = {k: v for k, v in obs.info.items() if k not in EPISODE_KEYS}
        if score > 0:
            out.scoring_call = {"step": 0, "name": None, "arguments": None}
        last = None
        while (action := _next(script, last, out)) is not None:
            last = o = await env.step(action)
            out.steps += 1
            if "reward_error" in o.info:
                out.reward_errors.append(o.info["reward_error"])
            score = float(o.info.get("score", score))
            out.info = {k: v for k, v in o.info.items() if k not in EPISODE_KEYS}
            if score > out.score:
                out.score = score
            if score > 0 and out.scoring_call is None:
                out.scoring_call = {"step": out.steps, "name": action.name, "arguments": action.arguments}
            out.final_score, out.done = score, o.done
            if o.done or o.truncated:
                break
        out.success = out.score >= success_score
    except OpenEnvError as e:
        out.error = f"{type(e).__name__}: {e}"
    finally:
        script.close()
        out.played = list(script.played)
        await env.close()
    return out


def _next(script: Script, observation: Any, out: CheckResult) -> CallTool | None:
    """The script's next action; a script that raises ends the episode with its error recorded."""
    if out.error is not None:
        return None
    try:
        return script.next(observation)
    except Exception as e:  # noqa: BLE001 - a broken script is a finding, not a crash of validate
        out.error = f"the script stopped at step {out.steps + 1}: {type(e).__name__}: {e}"
        return None


def probe_actions(
    probe: str, tools: list[Tool], task_index: int, earlier: list[list[CallTool]], max_steps: int | None
) -> list[CallTool] | None:
    """The actions of ``probe`` on the ``task_index``-th task (``earlier``: reference trajectories of the
    tasks before it)."""
    budget = max_steps or 30
    if probe == "nothing":
        return None
    if probe == "random":
        return random_calls(tools, 1000 + task_index, min(budget, max(10, len(tools) * 2)))
    if probe == "degenerate":
        return degenerate_calls(tools)
    if probe == "replay":  # the answer (last call) of every earlier task's reference, newest within budget
        answers = [trajectory[-1] for trajectory in earlier if trajectory]
        return answers[-budget:]
    raise ValueError(f"unknown probe {probe!r}")
