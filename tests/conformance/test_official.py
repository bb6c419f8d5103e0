"""The official MCP conformance suite through openenv-mcp, behind each boundary.

``tool_servers/conformance_fixture`` implements the suite's fixture tools,
resources and prompts. Served through openenv-mcp (``conformance/official-fixture``),
every official server scenario passes, except those listed with reasons in
``conformance/official-fixture/exceptions.toml`` — and those must still fail
(so the list cannot go stale). Also: the official section of a report for a
plain environment skips the fixture scenarios with their reasons.
"""

from __future__ import annotations

import shutil

import pytest

from openenv_mcp.conformance import check_env_async, nodetools
from openenv_mcp.conformance.official import load_scenario_reasons
from openenv_mcp.errors import ConfigError
from openenv_mcp.testing import need

from support import ROOT, need_docker

FIXTURE = ROOT / "conformance" / "official-fixture"
EXCEPTIONS = FIXTURE / "exceptions.toml"
pytestmark = pytest.mark.node


def _node() -> None:
    need(nodetools.available(), f"Node 22 MCP tooling missing: {nodetools.INSTALL_HINT}")


BOUNDARIES = ["inprocess", "process", "sandbox", "docker"]
TOOL_SERVER_SCENARIOS = (
    "tools-list",
    "tools-call-simple-text",
    "tools-call-audio",
    "tools-call-mixed-content",
    "tools-call-error",
    "json-schema-2020-12",
    "resources-list",
    "resources-read-binary",
    "resources-templates-read",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
)
"""Behind process/sandbox/docker, scenarios that reach the tool server through the boundary: every
content type, errors, schema keywords, resources (binary, templates) and prompts. The lifecycle,
ping, DNS-rebinding and SSE scenarios test the serving layer, the same for every boundary; they
run (with all the others) for inprocess."""


@pytest.mark.anyio
@pytest.mark.parametrize("boundary", BOUNDARIES)
async def test_every_official_scenario_passes_through_the_environment_layer(boundary):
    _node()
    if boundary == "sandbox":
        need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")
    if boundary == "docker":
        need_docker("tools")
    env_file = FIXTURE / ("env.toml" if boundary == "inprocess" else f"{boundary}.toml")
    names = [s.name for s in nodetools.list_scenarios("server")]
    if boundary != "inprocess":
        names = [n for n in names if n in TOOL_SERVER_SCENARIOS]
    report = await check_env_async(
        env_file, only="official", official_not_applicable=EXCEPTIONS, official_scenarios=names
    )
    rows = [r for r in report.results if r.rule.startswith("official.")]
    exceptions = load_scenario_reasons(EXCEPTIONS)
    assert len(rows) == len(names) and len(rows) >= len(TOOL_SERVER_SCENARIOS), [r.rule for r in rows]
    failed = [f"{r.rule}: {r.message}" for r in rows if r.status == "failed"]
    assert not failed, failed
    skipped = {r.rule.removeprefix("official.") for r in rows if r.status == "skipped"}
    assert skipped <= set(exceptions)
    assert all(r.message.startswith("not applicable: ") for r in rows if r.status == "skipped")
    assert report.ok


@pytest.mark.anyio
async def test_the_listed_exceptions_really_fail_through_the_environment_layer():
    _node()
    exceptions = load_scenario_reasons(EXCEPTIONS)
    installed = {s.name for s in nodetools.list_scenarios("server")}
    report = await check_env_async(
        FIXTURE / "env.toml",
        only="official",
        official_not_applicable={},
        official_scenarios=sorted(set(exceptions) & installed),
    )
    passing = [r.rule for r in report.results if r.status == "passed"]
    assert not passing, f"these scenarios pass now: remove them from {EXCEPTIONS.name}: {passing}"


@pytest.mark.anyio
async def test_a_plain_environment_skips_the_fixture_scenarios_with_their_reasons():
    _node()
    report = await check_env_async(
        "echo", only="official", official_scenarios=["server-initialize", "tools-call-simple-text"]
    )
    row = report.result("official.tools-call-simple-text")
    assert row.status == "skipped"
    assert row.message == (
        "not applicable: calls the suite's fixture tool `test_simple_text` (passes vacuously "
        "on the unknown-tool error text)"
    )
    assert report.result("official.server-initialize").status == "passed"
    assert report.ok


def test_a_scenario_list_entry_without_reason_is_refused(tmp_path):
    bad = tmp_path / "na.toml"
    bad.write_text("[scenario.ping]\n")
    with pytest.raises(ConfigError, match=r"scenario 'ping' needs reason = \"why it does not apply\""):
        load_scenario_reasons(bad)
