"""shutdown.clean finds survivors by membership (the episode's uid, the container label, descent
from the environment server kept by a subreaper), not by working directory (issue 12 item 4)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import anyio
import pytest

import openenv_mcp
from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.conformance import check_env_async
from openenv_mcp.isolation.host.exposure import reachable_by_others
from openenv_mcp.testing import need

from support import ROOT, need_boundaries

FIXTURE = ROOT / "conformance" / "fixtures" / "envs" / "escaping_daemon"
PYTHON = "/usr/bin/python3" if reachable_by_others("/usr/bin/python3") else "python3"


def daemons() -> set[int]:
    """Live ``sleep 127`` processes (the fixture's daemon)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == b"sleep\x00127\x00":
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.anyio
async def test_a_daemon_that_double_forks_setsids_and_chdirs_to_root_is_caught_by_shutdown_clean():
    before = daemons()
    report = await check_env_async(FIXTURE, only="shutdown", official=False)
    result = report.result("shutdown.clean")
    assert result.status == "failed", result.message
    pids = [int(p) for p in re.findall(r"pid (\d+) ", result.message)]
    assert pids and not set(pids) & before  # one daemon per start_daemon call the rule made
    assert result.message == "; ".join(f"pid {p} (sleep 127) still running 5 s after close()" for p in pids)
    deadline = time.monotonic() + 5  # the check leaves nothing behind itself
    while set(pids) & daemons() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(pids) & daemons()


@pytest.mark.parametrize("isolation", ["process", "sandbox"])
def test_the_same_escaping_daemon_behind_a_boundary_is_killed_on_close(isolation):
    server = ToolServerSpec(
        name="daemon", namespace="", command=[PYTHON, str(FIXTURE / "stdio_server.py")], isolation=isolation
    )
    spec = EnvSpec(name="walled-daemon", max_steps=5, tool_servers=[server], base_dir=FIXTURE)
    need_boundaries(spec)
    need(
        isolation != "process" or os.geteuid() == 0,
        "the process boundary kills detached processes through the episode uid's guard and cgroup, which need root: run the tests as root (as CI does)",
    )
    before = daemons()
    with openenv_mcp.make(spec) as env:
        env.reset(seed=0)
        assert env.step(CallTool(name="start_daemon", arguments={})).result.is_error is False
        deadline = time.monotonic() + 5
        while not (started := daemons() - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(started) == 1  # it runs, detached, in /
        (pid,) = started
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
    deadline = time.monotonic() + 5
    while pid in daemons() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid not in daemons()  # close() killed it
    report = anyio.run(lambda: check_env_async(spec, only="shutdown", official=False))
    result = report.result("shutdown.clean")
    assert result.status == "passed", result.message
    assert daemons() - before == set()
