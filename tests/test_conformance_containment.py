"""Containment probes: run from inside a real boundary (process, bubblewrap sandbox)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import need_docker

from openenv_mcp.conformance import check_env_async
from openenv_mcp.testing import need

ENVS = Path(__file__).resolve().parent.parent / "conformance" / "fixtures" / "envs"
HINT = (
    ' (the process boundary is no filesystem or network wall: use isolation = "sandbox" or "docker", '
    "or accept it in a known-failures file if you trust this server)"
)


@pytest.mark.anyio
async def test_a_process_boundary_fails_both_probes_with_the_value_it_reached():
    report = await check_env_async(ENVS / "unwalled", only="containment", official=False)
    file_msg = report.result("containment.host_file").message
    net_msg = report.result("containment.network").message
    assert re.fullmatch(
        r"tool server 'echo' \(process\): the probe read the host file "
        r"'/tmp/openenv-conformance-secret-\w+/secret\.txt': 'read: [0-9a-f]{32}'" + re.escape(HINT),
        file_msg,
    ), file_msg
    assert re.fullmatch(
        r"tool server 'echo' \(process, network 'none'\): the probe connected to a host loopback "
        r"listener 127\.0\.0\.1:\d+: 'connected: [0-9a-f]{32}\\n'" + re.escape(HINT),
        net_msg,
    ), net_msg
    assert not report.ok


@pytest.mark.anyio
@pytest.mark.sandbox
async def test_the_sandbox_boundary_passes_both_probes():
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")
    report = await check_env_async(ENVS / "sandboxed", only="containment", official=False)
    assert [(r.rule, r.status) for r in report.results] == [
        ("containment.host_file", "passed"),
        ("containment.network", "passed"),
    ]


@pytest.mark.anyio
async def test_inprocess_environments_have_nothing_to_probe():
    report = await check_env_async("echo", only="containment", official=False)
    assert report.result("containment.host_file").message == (
        "no tool server runs behind process, sandbox, docker; this environment uses inprocess "
        "(in-process servers share the environment's process: nothing to probe)"
    )


@pytest.mark.anyio
async def test_the_example_known_failures_file_accepts_a_trusted_process_server():
    example = Path(__file__).resolve().parent.parent / "conformance" / "known-failures.example.toml"
    report = await check_env_async(ENVS / "unwalled", only="containment", known_failures=example, official=False)
    assert [r.status for r in report.results] == ["known", "known"]
    assert report.ok and report.exit_code == 0


@pytest.mark.anyio
@pytest.mark.docker
async def test_the_docker_boundary_passes_both_probes_and_leaves_no_container():
    need_docker("tools")
    report = await check_env_async(ENVS / "dockered", only="containment,shutdown", official=False)
    assert [(r.rule, r.status) for r in report.results] == [
        ("shutdown.clean", "passed"),
        ("containment.host_file", "passed"),
        ("containment.network", "passed"),
    ]
