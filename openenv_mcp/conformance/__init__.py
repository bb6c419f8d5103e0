"""The conformance checker: does a tool environment keep the openenv-mcp promise?

Modelled on Gymnasium's ``env_checker``: one ``check_*`` function per rule,
each with a stable id and a severity, run against an environment (by name, env
file or folder), a running server (URL) or a plain MCP server object::

    from openenv_mcp.conformance import check_env, assert_conformant
    report = check_env("echo")            # a Report: one Result per rule
    report.print(); report.ok; report.to_json()
    assert_conformant("path/to/env.toml")  # pytest-friendly: raises with the failures

Command line: ``openenv-mcp conformance TARGET [--json F] [--only R] [--skip R]
[--known-failures F]``. Rules live in ``rules.mcp`` (MCP lifecycle, listing,
tools/call), ``rules.env`` (parity, determinism, reset, isolation, sim/prod),
``rules.answers``, ``rules.wire`` (robustness over HTTP), ``rules.shutdown``
and ``rules.containment``.
"""

from __future__ import annotations

from typing import Any

from openenv_mcp.conformance.base import RULES, Context, Failed, Rule, Skipped, rule
from openenv_mcp.conformance.report import KnownFailures, Report, Result, load_known_failures
from openenv_mcp.conformance.runner import check_env, check_env_async, select_rules
from openenv_mcp.errors import ConformanceError

__all__ = [
    "RULES",
    "ConformanceError",
    "Context",
    "Failed",
    "KnownFailures",
    "Report",
    "Result",
    "Rule",
    "Skipped",
    "assert_conformant",
    "assert_conformant_async",
    "check_env",
    "check_env_async",
    "load_known_failures",
    "rule",
    "select_rules",
]


def assert_conformant(target: Any, **kwargs: Any) -> Report:
    """Check ``target``; raise :class:`ConformanceError` (an AssertionError) listing the errors."""
    report = check_env(target, **kwargs)
    if not report.ok:
        raise ConformanceError(report)
    return report


async def assert_conformant_async(target: Any, **kwargs: Any) -> Report:
    """The async twin of :func:`assert_conformant`."""
    report = await check_env_async(target, **kwargs)
    if not report.ok:
        raise ConformanceError(report)
    return report
