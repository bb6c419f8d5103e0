"""The determinism probe replays what the rules that depend on it replay (issue 12 item 1).

``env.reset_restores`` and ``env.episode_isolation`` ignore the values ``env.determinism`` found
nondeterministic; when the env file ships solutions, determinism replays those, while reset and
isolation replay generated calls (every tool once). A clock or random name reachable only through the
generated calls was then never learned, and reset/isolation blamed it on leaked state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_mcp.conformance import check_env_async

from support import ROOT

RAW = ROOT / "conformance" / "fixtures" / "raw_stdio.py"
RULES = "env.determinism,env.reset_restores,env.episode_isolation"


@pytest.mark.anyio
async def test_a_clock_reached_only_by_generated_calls_is_nondeterminism_not_a_leak_when_solutions_are_shipped(
    tmp_path: Path,
):
    (tmp_path / "solutions.json").write_text(
        json.dumps(
            {
                "default": {
                    "reference": [
                        {"name": "write_note", "arguments": {"key": "a", "text": "one"}},
                        {"name": "read_note", "arguments": {"key": "a"}},
                    ]
                }
            }
        )
    )
    (tmp_path / "env.toml").write_text(
        f"""[env]
name = "clock-with-solutions"
description = "Notes (the solutions' calls), the time and scratch files (only generated calls reach them)."
max_steps = 40
solutions = "solutions.json"

[[tool_servers]]
name = "clock"
namespace = ""
command = ["/usr/bin/python3", "{RAW}", "clock"]
isolation = "process"
"""
    )
    report = await check_env_async(tmp_path, only=RULES, official=False)
    statuses = {r.rule: r.status for r in report.results}
    assert statuses == {
        "env.determinism": "failed",
        "env.reset_restores": "passed",
        "env.episode_isolation": "passed",
    }, [(r.rule, r.message) for r in report.results]
    message = report.result("env.determinism").message
    assert "tools/call 'now' {} returned \"It is " in message, message
    assert "tools/call 'scratch'" in message, message
