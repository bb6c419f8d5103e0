"""The sandbox boundary (bubblewrap): everything the process boundary holds, plus
no network, a read-only root, a private /tmp and workspace, its own PID namespace.

Every containment case applies here: host files outside the workspace (even
world-readable ones in /tmp), writes outside the workspace, host loopback,
fork bomb, memory bomb, infinite loop. Each ends with a clear error, the
environment still answering, and no leaked process.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from openenv_mcp import BoundaryError
from openenv_mcp.testing import need

from support.containment import (
    DROPS_UID,
    IS_ROOT,
    Listener,
    assert_no_leak,
    call,
    hostile_env,
    marked_processes,
    survivors_of_killed_server,
    world_dir,
)


@pytest.fixture(autouse=True)
def _bwrap():
    need(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")


def test_workspace_is_mounted_at_slash_workspace_and_state_persists_per_episode(tmp_path):
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "a.txt").write_text("seeded")
    env, marker = hostile_env("sandbox", workspace="seed", base_dir=tmp_path)
    with env:
        env.reset(seed=0)
        who = json.loads(call(env, "whoami")[0])
        assert who["cwd"] == "/workspace"
        assert who["pid"] < 10  # its own PID namespace
        assert call(env, "read_file", path="/workspace/a.txt") == ("seeded", False)
        assert call(env, "write_file", path="b.txt", text="mine") == ("written", False)
        assert (env.unwrapped.episode.workspace.path / "b.txt").read_text() == "mine"
        assert call(env, "counter") == ("1", False)
        assert call(env, "counter") == ("2", False)
        env.reset(seed=1)
        assert call(env, "counter") == ("1", False)
        assert call(env, "list_dir", path=".") == ('["a.txt"]', False)
    assert_no_leak(marker)


def test_host_secret_outside_the_workspace_is_invisible():
    env, marker = hostile_env("sandbox")
    with world_dir() as secret_dir, env:
        secret = secret_dir / "secret.txt"
        secret.write_text("top secret")
        secret.chmod(0o644)  # world-readable on the host: only the sandbox hides it
        env.reset(seed=0)
        assert call(env, "read_file", path=str(secret)) == (
            f"FileNotFoundError: [Errno 2] No such file or directory: '{secret}'",
            True,
        )
        assert call(env, "list_dir", path="/root") == (
            "FileNotFoundError: [Errno 2] No such file or directory: '/root'",
            True,
        )
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


def test_writes_outside_the_workspace_fail_and_never_reach_the_host():
    env, marker = hostile_env("sandbox")
    with world_dir() as outside, env:
        env.reset(seed=0)
        assert call(env, "write_file", path="/usr/pwned", text="x") == (
            "OSError: [Errno 30] Read-only file system: '/usr/pwned'",
            True,
        )
        assert call(env, "write_file", path=str(outside / "x.txt"), text="x") == (
            f"FileNotFoundError: [Errno 2] No such file or directory: '{outside / 'x.txt'}'",
            True,
        )
        assert call(env, "write_file", path="/tmp/private.txt", text="x") == ("written", False)
        assert call(env, "counter") == ("1", False)
        assert not (outside / "x.txt").exists()
    assert not Path("/tmp/private.txt").exists()
    assert_no_leak(marker)


def test_host_loopback_listener_is_unreachable():
    listener = Listener()
    env, marker = hostile_env("sandbox")
    try:
        with env:
            env.reset(seed=0)
            assert call(env, "connect", host="127.0.0.1", port=listener.port) == (
                "ConnectionRefusedError: [Errno 111] Connection refused",
                True,
            )
            assert call(env, "counter") == ("1", False)
        assert not listener.connected.is_set()
    finally:
        listener.close()
    assert_no_leak(marker)


def test_fork_bomb_is_capped_and_killed_with_the_sandbox():
    need(
        DROPS_UID,
        "RLIMIT_NPROC holds only for an unprivileged uid (the environment server must be root and "
        "/usr/bin/python3 reachable by other users)",
    )
    env, marker = hostile_env("sandbox", processes=16)
    with env:
        env.reset(seed=0)
        text, error = call(env, "fork_bomb")
        assert not error and text.startswith("fork failed after ") and text.endswith("Resource temporarily unavailable")
        assert call(env, "counter") == ("1", False)
        assert len(marked_processes(marker)) > 5
    assert_no_leak(marker)


def test_memory_bomb_kills_only_the_server_which_restarts():
    env, marker = hostile_env("sandbox", memory_mb=200)
    with env:
        env.reset(seed=0)
        text, error = call(env, "memory_bomb")
        assert error and text.startswith(
            "Tool 'memory_bomb' failed: tool server 'h' exited with code 1 during "
            "the call; it is restarted on the next call; stderr: "
        )
        assert text.endswith("MemoryError")
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


def test_infinite_loop_times_out_and_the_sandbox_is_restarted():
    env, marker = hostile_env("sandbox", options={"call_timeout": 1})
    with env:
        env.reset(seed=0)
        assert call(env, "spin") == ("Tool 'spin' timed out after 1 s", True)
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


def test_detached_grandchildren_die_with_the_sandbox():
    env, marker = hostile_env("sandbox")
    with env:
        env.reset(seed=0)
        assert call(env, "spawn_orphan") == ("spawned a detached grandchild", False)
    assert_no_leak(marker)


def test_missing_bubblewrap_says_how_to_install_it(monkeypatch, tmp_path):
    env, _ = hostile_env("sandbox")
    monkeypatch.setenv("PATH", str(tmp_path))
    with env, pytest.raises(BoundaryError) as info:
        env.reset(seed=0)
    assert str(info.value) == (
        "isolation 'sandbox' needs bubblewrap, and 'bwrap' is not installed: run "
        "`apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap` (Fedora)"
    )


def test_the_sandbox_drops_to_an_unprivileged_uid_even_for_a_runtime_in_a_private_folder():
    need(IS_ROOT, "the uid drop happens only when the environment server runs as root")
    need(shutil.which("setpriv") is not None, "setpriv (util-linux) is not installed")
    env, marker = hostile_env("sandbox", python=sys.executable, processes=16)
    with env:
        env.reset(seed=0)
        assert json.loads(call(env, "whoami")[0])["uid"] >= 1000
        text, error = call(env, "fork_bomb")
        assert not error and text.startswith("fork failed after ")
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


def test_a_python_server_from_a_virtualenv_runs_in_the_sandbox():
    from openenv_mcp import CallTool, EnvSpec, ToolServerSpec, make

    spec = EnvSpec(
        name="echo-sandbox",
        max_steps=None,
        tool_servers=[
            ToolServerSpec(
                name="echo",
                namespace="",
                command=["python", "-m", "openenv_mcp.tool_servers.echo"],
                isolation="sandbox",
            )
        ],
    )
    with make(spec) as env:
        obs = env.reset(seed=0)
        assert [t.name for t in obs.tools] == ["echo"]
        result = env.step(CallTool(name="echo", arguments={"text": "inside"})).result
        assert result.structured_content == {"result": "inside"} and not result.is_error


def test_nothing_outlives_a_killed_environment_server():
    assert survivors_of_killed_server("sandbox") == []


def test_a_checkout_under_tmp_with_its_interpreter_inside_runs_in_the_sandbox():
    """Regression: a checkout in /tmp (CI clones anywhere) put the server's interpreter and its env
    folder under the sandbox's private /tmp; binding both (one inside the other) made bwrap fail
    with "Can't create file at /tmp/.../python"."""
    import os
    import tempfile

    from support.containment import FIXTURE

    checkout = Path(tempfile.mkdtemp(prefix="openenv-checkout-", dir="/tmp"))
    try:
        (checkout / "venv" / "bin").mkdir(parents=True)
        python = checkout / "venv" / "bin" / "python"
        python.symlink_to(os.path.realpath(sys.executable))
        shutil.copy(FIXTURE, checkout / "server.py")
        checkout.chmod(0o755)
        env, marker = hostile_env("sandbox", python=str(python), base_dir=checkout, script=checkout / "server.py")
        with env:
            env.reset(seed=0)
            assert call(env, "counter") == ("1", False)
        assert_no_leak(marker)
    finally:
        shutil.rmtree(checkout, ignore_errors=True)


def test_a_folder_outside_the_system_ones_is_there_only_when_the_env_file_binds_it(tmp_path):
    import uuid as _uuid

    import openenv_mcp
    from openenv_mcp import EnvSpec, ToolServerSpec

    from support.containment import FIXTURE, PYTHON

    folder = Path("/opt") / f"openenv-mcp-test-{_uuid.uuid4().hex}"
    folder.mkdir()
    try:
        (folder / "data.txt").write_text("shared data")
        (folder / "data.txt").chmod(0o644)
        for ro_bind in ([], [str(folder)]):
            server = ToolServerSpec(
                name="h", namespace="", command=[PYTHON, str(FIXTURE)], isolation="sandbox", ro_bind=ro_bind
            )
            spec = EnvSpec(name="hostile", max_steps=None, tool_servers=[server], base_dir=tmp_path)
            with openenv_mcp.make(spec) as env:
                env.reset(seed=0)
                text, is_error = call(env, "read_file", path=str(folder / "data.txt"))
                assert (text, is_error) == (
                    ("shared data", False)
                    if ro_bind
                    else (f"FileNotFoundError: [Errno 2] No such file or directory: '{folder / 'data.txt'}'", True)
                )
        with pytest.raises(Exception, match=r"bind path 'no-such-folder' does not exist"):
            bad = ToolServerSpec(
                name="h", namespace="", command=[PYTHON, str(FIXTURE)], isolation="sandbox", bind=["no-such-folder"]
            )
            with openenv_mcp.make(EnvSpec(name="x", max_steps=None, tool_servers=[bad], base_dir=tmp_path)) as env:
                env.reset(seed=0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
