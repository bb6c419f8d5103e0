"""Containment probes: run from inside a real boundary (process, bubblewrap sandbox)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from openenv_mcp.conformance import check_env_async
from openenv_mcp.testing import need

from support import ROOT, need_docker

ENVS = ROOT / "conformance" / "fixtures" / "envs"
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
    example = ROOT / "conformance" / "known-failures.example.toml"
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


# -- issue 12 item 5: the docker probes need nothing inside the server's image ----------------------
@pytest.mark.anyio
@pytest.mark.docker
async def test_the_docker_probes_check_a_server_image_without_python_in_its_own_container():
    """The server's image has no python3, and neither has the default image for docker commands
    (``OPENENV_MCP_DOCKER_IMAGE``): a probe that needed python3 in some image, or that ran in
    another image than the server's, cannot pass here."""
    need_docker("nopython")
    code = (
        "import asyncio, json, sys\n"
        "from openenv_mcp.conformance import check_env_async\n"
        "r = asyncio.run(check_env_async(sys.argv[1], only='containment,shutdown', official=False))\n"
        "print(json.dumps([[x.rule, x.status, x.message] for x in r.results]))\n"
    )
    env = {**os.environ, "OPENENV_MCP_DOCKER_IMAGE": "openenv-mcp/nopython"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(ENVS / "nopython")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [
        ["shutdown.clean", "passed", ""],
        ["containment.host_file", "passed", ""],
        ["containment.network", "passed", ""],
    ]


def test_the_outside_probe_reaches_what_a_process_sharing_the_host_namespaces_reaches(tmp_path):
    """The probe run from outside is no empty pass: pointed at a process in the host's own
    namespaces (this one), it reads the host file and connects to the host listener."""
    from openenv_mcp.conformance.containment_probe import probe_from_outside

    from support.containment import Listener

    need(shutil.which("nsenter") is not None and os.geteuid() == 0, "needs nsenter and root")
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    assert probe_from_outside(os.getpid(), "read_file", {"path": str(secret)}) == "read: host secret"
    listener = Listener()
    try:
        answer = probe_from_outside(os.getpid(), "connect", {"host": "127.0.0.1", "port": listener.port})
        assert answer == "connected: secret-banner"
    finally:
        listener.close()
