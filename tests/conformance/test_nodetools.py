"""The official MCP conformance suite (Node 22, ``@modelcontextprotocol/conformance``) against real servers.

- every applicable server scenario passes against ``openenv-mcp serve`` (dns-rebinding-protection
  included), and the not-applicable list only names real scenarios of the installed suite;
- the parser is checked on the suite's real output against plain FastMCP, which fails
  dns-rebinding-protection by default: a failing scenario must come back as ``failed``.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from openenv_mcp.conformance import nodetools
from openenv_mcp.conformance.nodetools import ScenarioResult, served_env
from openenv_mcp.testing import free_port, need

ALWAYS_APPLICABLE = {
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
}


@pytest.fixture(scope="module")
def tooling():
    need(nodetools.available(), f"Node 22 MCP tooling missing: {nodetools.INSTALL_HINT}")


@pytest.fixture(scope="module")
def served(tooling):
    with served_env("echo") as base:
        yield base


@pytest.fixture(scope="module")
def plain_fastmcp(tooling):
    port = free_port()
    code = (
        "import uvicorn; from openenv_mcp.tool_servers.echo import server; "
        f"uvicorn.run(server.http_app(path='/mcp'), host='127.0.0.1', port={port}, log_level='warning')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(300):
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_suite_lists_server_and_client_scenarios(tooling):
    scenarios = nodetools.list_scenarios(None)
    server = {s.name for s in scenarios if s.kind == "server"}
    client = {s.name for s in scenarios if s.kind == "client"}
    assert ALWAYS_APPLICABLE <= server
    assert "initialize" in client and "initialize" not in server
    dns = next(s for s in scenarios if s.name == "dns-rebinding-protection")
    assert "2025-11-25" in dns.spec_versions


def test_not_applicable_list_names_only_real_scenarios_with_reasons(tooling):
    skip = nodetools.not_applicable()
    server = {s.name for s in nodetools.list_scenarios("server")}
    assert skip, "conformance/official-not-applicable.toml is missing or empty"
    assert set(skip) <= server, f"not scenarios of the installed suite: {sorted(set(skip) - server)}"
    assert all(len(reason) > 20 for reason in skip.values())
    assert not ALWAYS_APPLICABLE & set(skip)
    assert ALWAYS_APPLICABLE <= set(nodetools.applicable_scenarios())


def test_parser_reports_a_failing_scenario_as_failed(plain_fastmcp):
    rows = {r.scenario: r for r in nodetools.run_server_scenarios(plain_fastmcp, ["ping", "dns-rebinding-protection"])}
    assert rows["ping"].status == "passed"
    assert rows["ping"].detail == "1/1 checks passed"
    dns = rows["dns-rebinding-protection"]
    assert dns.status == "failed" and not dns.ok
    assert dns.detail == (
        "localhost-host-rebinding-rejected: Expected HTTP 4xx for invalid Host/Origin headers, got 200"
    )
    assert {c.status for c in dns.checks} == {"SUCCESS", "FAILURE"}


def test_unknown_scenario_is_an_error_row(plain_fastmcp):
    [row] = nodetools.run_server_scenarios(plain_fastmcp, ["no-such-scenario"])
    assert row.status == "error" and row.scenario == "no-such-scenario"
    assert row.detail.startswith("no results (exit 1)")


def test_every_applicable_scenario_passes_against_openenv_mcp_serve(served):
    names = nodetools.applicable_scenarios()
    assert "dns-rebinding-protection" in names
    rows = nodetools.run_server_scenarios(served + "/mcp", names)
    assert [r.scenario for r in rows] == names
    failed = [f"{r.scenario}: {r.status}: {r.detail}" for r in rows if not r.ok]
    assert not failed, "\n".join(failed)
    assert all(isinstance(r, ScenarioResult) and r.checks for r in rows)


def test_logging_is_not_applicable_because_the_capability_is_not_declared(served):
    """The not-applicable reason for logging-set-level must stay true: no logging capability."""
    with httpx.Client() as client:
        r = client.post(
            served + "/mcp",
            headers={"Accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            },
        )
    assert r.status_code == 200
    assert "logging" not in r.json()["result"]["capabilities"]


def test_make_conformance_entry_point_prints_the_table(served):
    proc = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.conformance.nodetools", "--url", served + "/mcp"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Official MCP conformance suite" in proc.stdout
    assert "dns-rebinding-protection" in proc.stdout and "tools-call-image" in proc.stdout
    n = len(nodetools.applicable_scenarios())
    assert f"{n} passed, 0 failed" in proc.stdout


def test_served_env_says_why_the_server_did_not_start():
    from openenv_mcp.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        with served_env("no-such-env"):
            pass
    assert "`openenv-mcp serve no-such-env` exited with 2: " in str(info.value)
    assert "error: unknown environment 'no-such-env'" in str(info.value)


def test_tools_dir_says_how_to_install_when_missing(tmp_path, monkeypatch):
    from openenv_mcp.errors import ConfigError

    monkeypatch.setenv(nodetools.ENV_VAR, str(tmp_path))
    assert not nodetools.available()
    with pytest.raises(ConfigError) as info:
        nodetools.tools_dir()
    assert str(info.value) == (
        f"Node 22 MCP tooling not found in {tmp_path}: {nodetools.INSTALL_HINT}, or set {nodetools.ENV_VAR}"
    )
