"""Running the rules: selection, time limits, the official suite section, the report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.conformance import rules as _rules  # noqa: F401  (registers the rules, in run order)
from openenv_mcp.conformance.base import RULES, Context, Failed, Inconclusive, Rule, Skipped, leaf
from openenv_mcp.conformance.report import Report, Result, load_known_failures
from openenv_mcp.conformance.subject import Subject, make_subject
from openenv_mcp.errors import ConfigError

__all__ = ["check_env", "check_env_async", "select_rules"]

_NEEDS_WHY = {
    "episodes": "needs episodes (an openenv-mcp environment, not a plain MCP server)",
    "local": "needs the environment's definition (give a name, env file or folder, not a URL)",
    "http": "needs the MCP face over HTTP (serving is not installed)",
}


def _split(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    return [part.strip() for item in value for part in item.split(",") if part.strip()]


def _matches(rule_id: str, selector: str) -> bool:
    return (
        rule_id == selector
        or rule_id.startswith(selector + ".")
        or (selector == "official" and rule_id.startswith("official"))
    )


def select_rules(only: Any = None, skip: Any = None) -> list[Rule]:
    """The rules chosen by ``only``/``skip`` (ids or id prefixes such as ``env`` or ``tools``)."""
    only_l, skip_l = _split(only), _split(skip)
    known = list(RULES) + ["official"]
    for sel in only_l + skip_l:
        if not any(_matches(r, sel) for r in known):
            raise ConfigError(f"unknown rule {sel!r}; rules: {', '.join(RULES)}, official")
    chosen = [r for r in RULES.values() if not only_l or any(_matches(r.id, s) for s in only_l)]
    return [r for r in chosen if not any(_matches(r.id, s) for s in skip_l)]


def run_order(rules: list[Rule]) -> list[Rule]:
    """``rules`` in registration order, except that a rule waits for the selected rules it
    ``runs_after``."""
    selected = {r.id for r in rules}
    out: list[Rule] = []
    waiting = list(rules)
    while waiting:
        ready = next(r for r in waiting if all(d in {o.id for o in out} or d not in selected for d in r.runs_after))
        waiting.remove(ready)
        out.append(ready)
    return out


async def _run_rule(rule: Any, ctx: Context) -> Result:
    started = time.perf_counter()
    missing = sorted(rule.needs - ctx.subject.capabilities)
    status, message = "passed", ""
    if missing:
        status, message = "skipped", _NEEDS_WHY.get(missing[0], f"needs {missing[0]}")
    elif rule.id not in ("mcp.handshake", "control_plane.hidden") and ctx.failed("mcp.handshake"):
        status, message = "skipped", "mcp.handshake failed: no MCP session, nothing else can be checked"
    else:
        ctx.subject.tally.reset()
        ctx.rule_id = rule.id
        ctx.notes = []
        try:
            with anyio.fail_after(rule.timeout):
                note = await rule.fn(ctx)
            if isinstance(note, str):
                message = note
        except Exception as raised:  # task groups (SDK clients) wrap what a rule raises: unwrap
            e = leaf(raised)
            if isinstance(e, Failed):
                status, message = "failed", str(e)
            elif isinstance(e, Skipped):
                status, message = "skipped", str(e)
            elif isinstance(e, Inconclusive):
                status, message = "inconclusive", str(e)
            elif isinstance(e, TimeoutError):
                status, message = "failed", f"the rule did not finish within {rule.timeout:g} s"
            else:  # the target broke the check itself: that is a failure, with the cause
                status, message = "failed", f"{type(e).__name__}: {e}"
    if status == "passed" and ctx.notes:
        message = "; ".join(ctx.notes)
    return Result(
        rule=rule.id,
        severity=rule.severity,
        status=status,
        message=message,
        duration=time.perf_counter() - started,
        title=rule.title,
    )


async def check_env_async(
    target: Any,
    *,
    only: Any = None,
    skip: Any = None,
    known_failures: str | Path | dict[str, str] | None = None,
    seed: int = 0,
    calls: int = 12,
    max_tasks: int = 4,
    official: bool | None = None,
    progress: Any = None,
    official_not_applicable: str | Path | dict[str, str] | None = None,
    official_scenarios: list[str] | None = None,
    **options: Any,
) -> Report:
    """Check ``target`` and return a :class:`Report` (see :func:`check_env`)."""
    known = (
        known_failures
        if isinstance(known_failures, dict)
        else load_known_failures(known_failures)
        if known_failures
        else {}
    )
    rules = select_rules(only, skip)
    if official is None:  # default: when Node 22 tooling is there and the selection allows it
        from openenv_mcp.conformance import nodetools

        official = nodetools.available() and (not _split(only) or any(_matches("official", s) for s in _split(only)))
    want_official = official and not any(_matches("official", s) for s in _split(skip))
    subject: Subject = make_subject(target, **options)
    report = Report(target=subject.label)
    ctx = Context(subject=subject, seed=seed, calls=calls, max_tasks=max_tasks)
    started = time.perf_counter()
    try:
        await subject.prepare()
        for r in run_order(rules):
            if progress is not None:
                progress(r.id)
            result = await _run_rule(r, ctx)
            ctx.results[r.id] = result
        report.results.extend(ctx.results[r.id] for r in rules)
        if want_official:
            from openenv_mcp.conformance.official import official_results

            report.results.extend(
                await official_results(
                    subject, progress=progress, not_applicable=official_not_applicable, scenarios=official_scenarios
                )
            )
    finally:
        await subject.aclose()
    report.duration = time.perf_counter() - started
    report.apply_known(known)
    return report


def check_env(target: Any, **kwargs: Any) -> Report:
    """Check an environment (name, env file or folder, URL, EnvSpec, Environment or MCP server object).

    Options: ``only``/``skip`` (rule ids or prefixes, comma-separated or lists),
    ``known_failures`` (a TOML/JSON file or a dict rule -> reason), ``seed``,
    ``calls`` (generated calls per trajectory), ``max_tasks`` (tasks the parity
    rule replays, time-boxed), ``official`` (also run the
    official MCP conformance suite; default: when its Node 22 tooling is
    installed and ``only`` does not exclude it), ``official_not_applicable``
    (a TOML file of ``[scenario.NAME] reason = ...`` to skip, default
    ``conformance/official-not-applicable.toml``).
    Inside an event loop use :func:`check_env_async`.
    """
    return anyio.run(lambda: check_env_async(target, **kwargs))
