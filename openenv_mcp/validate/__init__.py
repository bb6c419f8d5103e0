"""``openenv-mcp validate``: is an environment worth training on?

:func:`validate` plays, on every task of an environment:

1. its scripted ``reference`` solution (must reach ``done``) and ``wrong``
   solution (must not);
2. the reward-hacking probes of :mod:`openenv_mcp.validate.probes` and the environment's own
   (``hack:NAME``, from its solutions module's ``probes(task)``) (must stay at zero; any that
   scores is a finding naming the call that scored);
3. with a ``policy`` (a model behind an OpenAI-compatible API), ``k``
   rollouts per task (:func:`openenv_mcp.rollout.rollout`): pass@1, pass@k,
   reward mean and variance per task, the share of tasks whose group has
   reward variance (the tasks that carry a GRPO signal), and tasks flagged
   ``too_easy`` (every rollout succeeds) or ``too_hard`` (none earns reward).

The result is a :class:`ValidationReport`: ``to_json()``, a rich table
(:func:`openenv_mcp.validate.report.print_report`) and a self-contained HTML page
(:func:`openenv_mcp.validate.report.html_report`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.client.env import AsyncEnv
from openenv_mcp.client.registry import load_environment
from openenv_mcp.errors import ConfigError, OpenEnvError
from openenv_mcp.types import CallTool
from openenv_mcp.validate.probes import HACK_PREFIX, PROBES, CheckResult, is_probe, play_script, probe_actions

__all__ = ["ALL_PROBES", "PROBES", "TaskStats", "ValidationReport", "task_stats", "validate"]

ALL_PROBES = (*PROBES, "hack")
"""What ``validate`` plays by default: the generic probes and (``hack``) every probe of the
environment's own (``hack:NAME`` picks one)."""

FORMAT = "openenv-mcp.validate/1"


@dataclass
class TaskStats:
    """K rollouts of one task."""

    task_id: str
    rewards: list[float]
    successes: list[bool]

    @property
    def k(self) -> int:
        return len(self.rewards)

    @property
    def pass_at_1(self) -> float:
        return sum(self.successes) / self.k if self.k else 0.0

    @property
    def pass_at_k(self) -> float:
        return 1.0 if any(self.successes) else 0.0

    @property
    def reward_mean(self) -> float:
        return statistics.fmean(self.rewards) if self.rewards else 0.0

    @property
    def reward_variance(self) -> float:
        return statistics.pvariance(self.rewards) if len(self.rewards) > 1 else 0.0

    @property
    def flag(self) -> str | None:
        if self.k and all(self.successes):
            return "too_easy"
        if self.k and not any(self.successes) and max(self.rewards) <= 0:
            return "too_hard"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "k": self.k,
            "rewards": self.rewards,
            "successes": self.successes,
            "pass@1": self.pass_at_1,
            f"pass@{self.k}": self.pass_at_k,
            "reward_mean": self.reward_mean,
            "reward_variance": self.reward_variance,
            "flag": self.flag,
        }


def task_stats(trajectories: list[Any], success_score: float = 1.0) -> list[TaskStats]:
    """Group rollout trajectories by task, in first-seen order; a rollout succeeds when its
    reward reaches ``success_score`` (an episode can end ``done`` with a wrong answer)."""
    groups: dict[str, TaskStats] = {}
    for t in trajectories:
        g = groups.setdefault(t.task_id, TaskStats(t.task_id, [], []))
        g.rewards.append(float(t.reward))
        g.successes.append(float(t.reward) >= success_score)
    return list(groups.values())


@dataclass
class ValidationReport:
    env: str
    tasks: list[str]
    checks: list[CheckResult] = field(default_factory=list)
    rollouts: list[TaskStats] = field(default_factory=list)
    model: str | None = None
    k: int = 0

    # -- findings -------------------------------------------------------------
    def _of(self, check: str) -> list[CheckResult]:
        return [c for c in self.checks if c.check == check]

    @property
    def reference_failures(self) -> list[CheckResult]:
        return [c for c in self._of("reference") if c.error or not c.success]

    @property
    def wrong_successes(self) -> list[CheckResult]:
        return [c for c in self._of("wrong") if c.error or c.success]

    @property
    def scoring_probes(self) -> list[CheckResult]:
        return [c for c in self.checks if is_probe(c.check) and (c.score > 0 or c.error)]

    @property
    def reward_errors(self) -> list[CheckResult]:
        return [c for c in self.checks if c.reward_errors]

    @property
    def variance_share(self) -> float:
        return sum(1 for s in self.rollouts if s.reward_variance > 0) / len(self.rollouts) if self.rollouts else 0.0

    def findings(self) -> list[str]:
        """One line per problem found (empty: the environment passed every check)."""
        out = [
            f"reference solution of task {c.task_id!r} "
            + (f"could not run: {c.error}" if c.error else f"does not reach success (score {c.score:g}{_why(c)})")
            for c in self.reference_failures
        ]
        out += [
            f"wrong solution of task {c.task_id!r} "
            + (f"could not run: {c.error}" if c.error else f"reaches success (score {c.score:g})")
            for c in self.wrong_successes
        ]
        for c in self.scoring_probes:
            if c.error:
                out.append(f"probe {c.check!r} on task {c.task_id!r} could not run: {c.error}")
                continue
            call = c.scoring_call or {}
            at = (
                "at reset"
                if not call.get("name")
                else f"at step {call['step']}: {call['name']} {_short(call.get('arguments'))}"
            )
            out.append(f"probe {c.check!r} scores {c.score:g} on task {c.task_id!r} ({at})")
        for c in self.reward_errors:
            out.append(f"{c.check} on task {c.task_id!r}: reward error: {c.reward_errors[0][:300]}")
        for s in self.rollouts:
            if s.flag:
                out.append(
                    f"task {s.task_id!r} is {s.flag.replace('_', ' ')} for {self.model} "
                    f"(pass@1 {s.pass_at_1:.2f}, reward mean {s.reward_mean:.2f})"
                )
        return out

    def to_json(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "tasks": len(self.tasks),
            "reference_failures": len(self.reference_failures),
            "wrong_successes": len(self.wrong_successes),
            "scoring_probes": len(self.scoring_probes),
            "steps_with_reward_errors": sum(len(c.reward_errors) for c in self.checks),
        }
        if self.rollouts:
            summary.update(
                {
                    "model": self.model,
                    "k": self.k,
                    "pass@1": statistics.fmean(s.pass_at_1 for s in self.rollouts),
                    f"pass@{self.k}": statistics.fmean(s.pass_at_k for s in self.rollouts),
                    "reward_mean": statistics.fmean(s.reward_mean for s in self.rollouts),
                    "variance_share": self.variance_share,
                    "too_easy": [s.task_id for s in self.rollouts if s.flag == "too_easy"],
                    "too_hard": [s.task_id for s in self.rollouts if s.flag == "too_hard"],
                }
            )
        return {
            "format": FORMAT,
            "env": self.env,
            "ok": not self.findings(),
            "summary": summary,
            "findings": self.findings(),
            "checks": [c.to_json() for c in self.checks],
            "rollouts": [s.to_json() for s in self.rollouts],
        }


def _why(check: CheckResult) -> str:
    """``; the reward said: ...`` from what the reward's info said at the end (empty: it said nothing)."""
    return f"; the reward said: {_short(check.info, 400)}" if check.info else ""


def _short(value: Any, limit: int = 120) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


async def validate(
    env: str,
    *,
    probes: tuple[str, ...] = ALL_PROBES,
    policy: Any = None,
    k: int = 4,
    concurrency: int = 1,
    max_steps: int = 30,
    seed: int = 0,
    task_ids: list[str] | None = None,
    on_check: Any = None,
    **options: Any,
) -> ValidationReport:
    """Validate ``env`` (a name, env file or folder; ``options`` go to ``make``).

    ``policy``: an ``OpenAIPolicy`` (or any rollout policy) for ``k`` rollouts per
    task; ``task_ids``: only these tasks (default: every task, in order).
    ``on_check``: called after each scripted episode (progress).
    """
    _check_probe_names(probes)
    environment = load_environment(env, **options)
    tasks = _selected_tasks(environment, task_ids)
    report = ValidationReport(env=environment.name, tasks=[t.id for t in tasks])

    def record(result: CheckResult) -> None:
        report.checks.append(result)
        if on_check is not None:
            on_check(result)

    checks = _ScriptedChecks(environment, probes, seed, record)
    success = environment.spec.success_score
    try:
        for index, task in enumerate(tasks):
            await checks.play_task(index, task)
    finally:
        await environment.aclose()
    if policy is not None:
        report.model, report.k = getattr(policy, "model", None), k
        report.rollouts = task_stats(
            await _rollouts(env, policy, [t.id for t in tasks], k, concurrency, max_steps, seed, options), success
        )
    return report


def _check_probe_names(probes: tuple[str, ...]) -> None:
    unknown = {p for p in probes if p not in ALL_PROBES and not p.startswith(HACK_PREFIX)}
    if unknown:
        raise ConfigError(f"unknown probe(s) {sorted(unknown)}; known: {', '.join(ALL_PROBES)}, hack:NAME")


def _selected_tasks(environment: Any, task_ids: list[str] | None) -> list[Any]:
    """The environment's tasks in order, or those of ``task_ids`` in that order (an unknown id refused)."""
    tasks = list(environment.tasks.tasks)
    if task_ids is None:
        return tasks
    known = {t.id: t for t in tasks}
    missing = [i for i in task_ids if i not in known]
    if missing:
        raise ConfigError(f"unknown task id(s) {missing}; known: {', '.join(list(known)[:10])}...")
    return [known[i] for i in task_ids]


@dataclass
class _ScriptedChecks:
    """The scripted episodes of one validation, task after task, each in a fresh episode: the
    ``reference`` and ``wrong`` solutions, the generic probes (over the tools the first task lists;
    ``replay`` replays earlier tasks' reference trajectories, so it waits for one), then the
    environment's own ``hack:NAME`` probes."""

    environment: Any
    probes: tuple[str, ...]
    seed: int
    record: Callable[[CheckResult], None]
    earlier: list[list[CallTool]] = field(default_factory=list)
    tools: list[Any] | None = None

    def make_env(self) -> AsyncEnv:
        return AsyncEnv(self.environment)

    async def play(self, task_id: str, check: str, actions: Any) -> CheckResult:
        return await play_script(self.make_env, task_id, check, actions, self.seed, self.environment.spec.success_score)

    async def play_task(self, index: int, task: Any) -> None:
        reference = await self.solutions(task)
        if self.tools is None:
            self.tools = await self.listed_tools(task)
        for probe in self.probes:
            if probe == "replay" and not self.earlier:
                continue
            if probe == "hack" or probe.startswith(HACK_PREFIX):
                continue
            actions = probe_actions(probe, self.tools, index, self.earlier, self.environment.max_steps)
            self.record(await self.play(task.id, probe, actions))
        for name, script in self.environment.probes(task, self.seed).items():
            check = f"{HACK_PREFIX}{name}"
            if "hack" in self.probes or check in self.probes:
                self.record(await self.play(task.id, check, script))
        if reference:
            self.earlier.append(reference)

    async def solutions(self, task: Any) -> list[CallTool] | None:
        """Play the task's ``reference`` and ``wrong`` scripts (one the environment cannot give is a
        failed check); the reference's played calls."""
        reference = None
        for kind in ("reference", "wrong"):
            try:
                script = self.environment.script(task, kind, self.seed)
            except OpenEnvError as e:
                self.record(CheckResult(task_id=task.id, check=kind, error=str(e)))
                continue
            result = await self.play(task.id, kind, script)
            self.record(result)
            if kind == "reference":
                reference = result.played
        return reference

    async def listed_tools(self, task: Any) -> list[Any]:
        probe_env = self.make_env()
        try:
            return (await probe_env.reset(seed=self.seed, task_id=task.id)).tools or []
        finally:
            await probe_env.close()


async def _rollouts(
    env: str,
    policy: Any,
    task_ids: list[str],
    k: int,
    concurrency: int,
    max_steps: int,
    seed: int,
    options: dict[str, Any],
) -> list[Any]:
    from openenv_mcp.rollout import rollout

    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k}")
    trajectories = []
    for n, task_id in enumerate(task_ids):  # K episodes per task, distinct seeds
        trajectories += await rollout(
            env,
            policy,
            episodes=k,
            concurrency=concurrency,
            max_steps=max_steps,
            seed=seed + n * k,
            task_id=task_id,
            **options,
        )
    return trajectories
