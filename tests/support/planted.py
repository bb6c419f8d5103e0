"""Helpers of the planted-bug tests (tests/conformance/test_planted_*.py).

Each fixture in conformance/corpus/planted/ plants one bug; conformance/corpus/planted/expected.toml
says which rule must catch it, the message it must give (a regular expression naming the channel and
the planted value) and the rules run with it. :func:`check_planted` runs ``check_env`` on the bug and
on its fixed twin and compares.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tomllib
from pathlib import Path
from typing import Any

from openenv_mcp.conformance import check_env
from openenv_mcp.conformance.report import Report
from openenv_mcp.testing import need

from support import ROOT
from support.containment import marked_processes

PLANTED = ROOT / "conformance" / "corpus" / "planted"
SHARED = Path("/tmp/openenv-mcp-planted")
"""Where the buggy fixtures keep their shared state (conformance/corpus/planted/_kit.py)."""
CALLS = 6
"""Generated calls per trajectory (the default is 12): enough for every fixture, half the time."""


def table() -> dict[str, Any]:
    return tomllib.loads((PLANTED / "expected.toml").read_text())


def run(target: Path, rules: list[str]) -> Report:
    """``openenv-mcp conformance TARGET --only RULES --no-official --seed 0``."""
    return check_env(str(target), official=False, seed=0, calls=CALLS, only=",".join(rules))


def kill_marked(marker: str) -> list[int]:
    """Kill (and return) the processes whose command line holds ``marker``: a fixture's survivors."""
    pids = marked_processes(marker)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def check_planted(name: str) -> None:
    """The planted bug is caught by its rule with the expected message (channel and value), the rules
    run with it give their expected status, and the fixed twin passes all of them."""
    fixture = table()[name]
    also: dict[str, str] = fixture.get("also", {})
    rules = [fixture["rule"], *also]
    marker = fixture.get("survivor_marker")
    if marker:
        need(
            os.geteuid() == 0,
            "the process boundary kills detached processes through the episode uid's guard and cgroup, which need root: run the tests as root (as CI does)",
        )
        kill_marked(marker)
    shutil.rmtree(SHARED / name, ignore_errors=True)  # what earlier runs left in the buggy store
    report = run(PLANTED / name, rules)
    if marker:
        survivors = kill_marked(marker)
        assert not survivors, f"planted {name}: processes {survivors} ({marker}) survived the conformance run"
    result = report.result(fixture["rule"])
    assert result.status == "failed", f"planted {name}: {fixture['rule']} is {result.status}: {result.message}"
    assert re.fullmatch(fixture["message"], result.message), (
        f"planted {name}: the {fixture['rule']} message is not the expected one:\n{result.message}"
    )
    wrong = [
        f"{rule} is {report.result(rule).status}, expected {status}: {report.result(rule).message[:300]}"
        for rule, status in also.items()
        if report.result(rule).status != status
    ]
    assert not wrong, f"planted {name}: " + "; ".join(wrong)
    twin = run(PLANTED / name / "fixed", rules)
    if marker:
        survivors = kill_marked(marker)
        assert not survivors, f"fixed twin of {name}: processes {survivors} ({marker}) survived close"
    bad = [f"{r.rule} {r.status}: {r.message[:300]}" for r in twin.results if r.status != "passed"]
    assert not bad, f"fixed twin of {name} does not pass: " + "; ".join(bad)
