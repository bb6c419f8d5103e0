"""The official MCP conformance suite as one section of the report.

Uses :mod:`openenv_mcp.conformance.nodetools` (Node 22 tooling). Scenarios listed in a
not-applicable file (by default ``conformance/official-not-applicable.toml``:
the ones that need the suite's own fixture tools) are reported as skipped with
their reason; every other server scenario runs against the subject's MCP face
over real HTTP, a few at a time.
"""

from __future__ import annotations

import time
import tomllib
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.conformance.report import Result
from openenv_mcp.conformance.subject import Subject
from openenv_mcp.errors import ConfigError

__all__ = ["load_scenario_reasons", "official_results"]

CONCURRENCY = 4
"""Scenarios run at the same time (each is one Node process)."""


def load_scenario_reasons(path: str | Path) -> dict[str, str]:
    """``[scenario.NAME] reason = "..."`` tables -> {name: reason}; every entry needs a reason."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"scenario list {str(path)!r} does not exist")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from e
    out = {}
    for name, entry in (data.get("scenario") or {}).items():
        reason = entry.get("reason") if isinstance(entry, dict) else None
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f'{path}: scenario {name!r} needs reason = "why it does not apply"')
        out[name] = reason.strip()
    return out


async def official_results(
    subject: Subject,
    progress: Any = None,
    not_applicable: dict[str, str] | str | Path | None = None,
    scenarios: list[str] | None = None,
) -> list[Result]:
    """One :class:`Result` per official server scenario (``official.<scenario>``)."""
    from openenv_mcp.conformance import nodetools

    if not nodetools.available():
        return [
            Result(
                rule="official",
                severity="warning",
                status="skipped",
                section="official",
                message=f"Node 22 MCP tooling not installed: {nodetools.INSTALL_HINT}",
            )
        ]
    if "http" not in subject.capabilities:
        return [
            Result(
                rule="official",
                severity="warning",
                status="skipped",
                section="official",
                message="the official suite needs the MCP face over HTTP (serving is not installed)",
            )
        ]
    if getattr(subject, "headers", None):
        return [
            Result(
                rule="official",
                severity="warning",
                status="skipped",
                section="official",
                message="the official suite cannot send a bearer token: run it against a server without --token",
            )
        ]
    if not_applicable is None:
        skip = nodetools.not_applicable()
    elif isinstance(not_applicable, dict):
        skip = not_applicable
    else:
        skip = load_scenario_reasons(not_applicable)
    names = scenarios or [s.name for s in await anyio.to_thread.run_sync(nodetools.list_scenarios, "server")]
    rows: dict[str, Result] = {}
    limiter = anyio.CapacityLimiter(CONCURRENCY)

    def timed(url: str, name: str) -> tuple[Any, float]:
        started = time.perf_counter()
        return nodetools.run_server_scenario(url, name), time.perf_counter() - started

    async def run(url: str, name: str) -> None:
        row, took = await anyio.to_thread.run_sync(timed, url, name, limiter=limiter)
        rows[name] = Result(
            rule=f"official.{name}",
            severity="error",
            section="official",
            status="passed" if row.ok else "failed",
            message=row.detail,
            duration=took,
        )

    async with subject.http() as url, anyio.create_task_group() as tg:
        for name in names:
            if name in skip:
                rows[name] = Result(
                    rule=f"official.{name}",
                    severity="error",
                    status="skipped",
                    section="official",
                    message=f"not applicable: {skip[name]}",
                )
            else:
                if progress is not None:
                    progress(f"official.{name}")
                tg.start_soon(run, url, name)
    return [rows[n] for n in names]
