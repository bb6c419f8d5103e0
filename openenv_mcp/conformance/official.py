"""The official MCP conformance suite as one section of the report.

Uses :mod:`openenv_mcp.official_suite` (Node 22 tooling). The scenarios listed
in ``conformance/official-not-applicable.toml`` (they need the suite's own
fixture tools) are reported as skipped with their reason; every other server
scenario runs against the subject's MCP face over real HTTP.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from .report import Result
from .subject import Subject

__all__ = ["official_results"]


async def official_results(subject: Subject, progress: Any = None,
                           not_applicable: dict[str, str] | None = None) -> list[Result]:
    """One :class:`Result` per official server scenario (``official.<scenario>``)."""
    from .. import official_suite

    if not official_suite.available():
        return [Result(rule="official", severity="warning", status="skipped", section="official",
                       message=f"Node 22 MCP tooling not installed: {official_suite.INSTALL_HINT}")]
    if "http" not in subject.capabilities:
        return [Result(rule="official", severity="warning", status="skipped", section="official",
                       message="the official suite needs the MCP face over HTTP (serving is not installed)")]
    skip = official_suite.not_applicable() if not_applicable is None else not_applicable
    names = [s.name for s in await anyio.to_thread.run_sync(official_suite.list_scenarios, "server")]
    out: list[Result] = []
    async with subject.http() as url:
        for name in names:
            rid = f"official.{name}"
            if name in skip:
                out.append(Result(rule=rid, severity="error", status="skipped", section="official",
                                  message=f"not applicable: {skip[name]}"))
                continue
            if progress is not None:
                progress(rid)
            started = time.perf_counter()
            row = await anyio.to_thread.run_sync(official_suite.run_server_scenario, url, name)
            out.append(Result(rule=rid, severity="error", section="official",
                              status="passed" if row.ok else "failed", message=row.detail,
                              duration=time.perf_counter() - started))
    return out
