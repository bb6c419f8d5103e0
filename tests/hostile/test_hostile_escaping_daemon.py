"""An agent makes a tool server start a daemon that escapes its parent (double fork, ``setsid``,
``chdir /``) and hopes it outlives the episode (issue 12 item 4): it never does, under ``process``
(also when the server runs as root on purpose: its cgroup holds the daemon), ``sandbox``, and
the episode keeps answering until it closes."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import EnvSpec, ToolServerSpec
from openenv_mcp.isolation.host import cgroup
from openenv_mcp.testing import need

from support.containment import FIXTURE, PYTHON, assert_no_leak, call, marked_processes


def daemon_env(isolation: str, run_as_root: bool) -> tuple[openenv_mcp.Env, str]:
    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    server = ToolServerSpec(
        name="h",
        namespace="",
        command=[PYTHON, str(FIXTURE), "--marker", marker],
        isolation=isolation,
        run_as_root=run_as_root,
    )
    return openenv_mcp.make(EnvSpec(name="daemon", max_steps=None, tool_servers=[server])), marker


def started_daemon(marker: str) -> int:
    """The detached grandchild: working directory ``/``, in a session it does not lead."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        daemons = [p for p in marked_processes(marker) if _is_daemon(p)]
        if daemons:
            return daemons[0]
        time.sleep(0.05)
    raise AssertionError(f"no detached daemon of {marker} started")


def _is_daemon(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return os.readlink(f"/proc/{pid}/cwd") == "/" and int(fields[3]) != pid  # cwd /, not a session leader
    except (OSError, ValueError, IndexError):
        return False


@pytest.mark.parametrize(
    ("isolation", "run_as_root"), [("process", False), ("process", True), ("sandbox", False)], ids=str
)
def test_a_daemon_that_double_forks_setsids_and_chdirs_to_root_dies_with_the_episode(isolation, run_as_root):
    need(os.geteuid() == 0, "the boundaries hold daemons by uid/cgroup when the environment server runs as root")
    if run_as_root:
        need(cgroup.hierarchy() is not None, "a root server's daemons are held by its cgroup: needs cgroup v2")
    env, marker = daemon_env(isolation, run_as_root)
    with env:
        env.reset(seed=0)
        assert call(env, "spawn_orphan") == ("spawned a detached grandchild", False)
        daemon = started_daemon(marker)
        assert os.readlink(f"/proc/{daemon}/cwd") == "/"
        assert call(env, "counter") == ("1", False)  # the episode keeps answering
    assert_no_leak(marker)
