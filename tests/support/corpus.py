"""Helpers of the corpus tests (tests/conformance/test_corpus.py; the planted fixtures' are in tests/support/planted.py).

The corpus (conformance/corpus/) is third-party MCP servers installed by conformance/corpus/install.sh,
wrapped with one env file per boundary. The verdicts each must give are written, with their reasons, in
conformance/corpus/expected.toml; these helpers run ``check_env`` and compare.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

from openenv_mcp.conformance import check_env
from openenv_mcp.conformance.report import Report
from openenv_mcp.testing import need

from support import ROOT, docker_problem

CORPUS = ROOT / "conformance" / "corpus"
BOUNDARIES = ("process", "sandbox", "docker")
CALLS = 4
"""Generated calls per trajectory in the corpus runs (the default is 12; every tool is called at least once
anyway, and the servers that need real work ship solutions, so 4 keeps CI's time modest)."""
REPEATED = "env.determinism,env.parity,env.reset_restores,env.episode_isolation,wire.parity,shutdown.clean"
"""Rules run again for the identical-verdict check: those whose verdict depends on values that vary at run time
(clock, randomness, per-episode paths, processes); the static ones (schemas, names) cannot change."""
REPEAT_BOUNDARY = "process"
"""Where the second run happens (every server once: the cheapest boundary, CI time is the limit)."""
INSTALL = "run `bash conformance/corpus/install.sh` (npm and PyPI servers, Docker images)"


def expected() -> dict[str, Any]:
    return tomllib.loads((CORPUS / "expected.toml").read_text())


def corpus_pairs() -> list[tuple[str, str]]:
    """The (server, boundary) pairs the verdict test checks: each server behind its ``ci`` boundary (expected.toml),
    or, with ``OPENENV_MCP_FULL_CORPUS=1`` (``make test-corpus``), every server behind every boundary."""
    servers = {server: entry for server, entry in expected().items() if "kind" in entry}
    full = os.environ.get("OPENENV_MCP_FULL_CORPUS") == "1"
    return [
        (server, boundary)
        for server, entry in sorted(servers.items())
        for boundary in BOUNDARIES
        if full or boundary == entry["ci"]
    ]


def need_corpus(server: str, boundary: str) -> None:
    """Skip (fail under OPENENV_MCP_REQUIRE_ALL=1) when the server or the boundary's engine is missing."""
    need((CORPUS / server / "runtime" / "npm").is_dir(), f"the corpus is not installed: {INSTALL}")
    if boundary == "sandbox":
        from openenv_mcp.errors import BoundaryError
        from openenv_mcp.isolation.boundaries.sandbox import bwrap_path

        try:
            bwrap_path()
        except BoundaryError as e:
            need(False, f"corpus {server} behind sandbox: {e}")
    if boundary == "docker":
        problem = docker_problem()
        need(problem is None, f"corpus {server} behind docker: {problem}")
        image = f"openenv-mcp/corpus-{server}"
        found = subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=60)
        need(found.returncode == 0, f"the image {image} is missing: {INSTALL}")


def run(target: Path, **options: Any) -> Report:
    """``openenv-mcp conformance TARGET`` without the official suite (it has its own tests)."""
    return check_env(str(target), official=False, seed=0, **options)


def statuses(report: Report) -> dict[str, str]:
    return {r.rule: r.status for r in report.results}


def expected_statuses(server: str, boundary: str, rules: list[str]) -> dict[str, str]:
    """Rule -> expected status for one corpus entry: its own table, then [defaults], then ``passed``."""
    table = expected()
    entry = table[server][boundary].get("rules", {})
    defaults = {**table.get("defaults", {}), **table.get(f"{boundary}_boundary", {})}
    return {rule: (entry.get(rule) or defaults.get(rule) or {"status": "passed"})["status"] for rule in rules}


def check_corpus(server: str, boundary: str) -> None:
    """Run conformance on a corpus entry: the expected table holds; behind :data:`REPEAT_BOUNDARY` a second
    run of the rules whose verdict could vary (:data:`REPEATED`) gives the same verdicts."""
    need_corpus(server, boundary)
    target = CORPUS / server / boundary
    first = run(target, calls=CALLS)
    got = statuses(first)
    want = expected_statuses(server, boundary, list(got))
    wrong = [
        f"{rule}: expected {want[rule]}, got {got[rule]}: {first.result(rule).message[:300]}"
        for rule in got
        if got[rule] != want[rule]
    ]
    assert not wrong, f"corpus {server} behind {boundary}:\n" + "\n".join(wrong)
    if boundary != REPEAT_BOUNDARY:
        return
    second = statuses(run(target, calls=CALLS, only=REPEATED))
    changed = [f"{rule}: {got[rule]} then {second.get(rule)}" for rule in second if second[rule] != got.get(rule)]
    assert not changed, f"corpus {server} behind {boundary}: two runs disagree: " + "; ".join(changed)


def corpus_table() -> str:
    """The corpus table of docs/conformance.md, rendered from conformance/corpus/expected.toml."""
    table = expected()
    lines = [
        "| server | kind | package@version | boundary | verdict | rules not passing | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for server, entry in table.items():
        if "kind" not in entry:
            continue
        for boundary in BOUNDARIES:
            row = entry[boundary]
            rules = {**table.get(f"{boundary}_boundary", {}), **row.get("rules", {})}
            off = ", ".join(f"`{rule}` {value['status']}" for rule, value in rules.items()) or "none"
            lines.append(
                f"| {server} | {entry['kind']} | {entry['package']} | {boundary} | {row['verdict']} | {off} "
                f"| {row['reason']} |"
            )
    return "\n".join(lines)
