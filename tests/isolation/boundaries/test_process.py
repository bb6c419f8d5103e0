"""The process boundary: one persistent session, limits, failures, containment, no leaks.

What the plain process boundary contains (see docs/env-file.md, "Isolation"):
files outside the workspace only through file permissions (it runs as an
unprivileged uid when the environment server is root: a 0600 secret and a
root-owned folder are out of reach, a world-readable file is not), no network
containment at all (loopback is reachable: that case applies to ``sandbox``),
and fork bombs, memory bombs, infinite loops and huge outputs are contained.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from openenv_mcp import BoundaryError, ToolServerSpec
from openenv_mcp.isolation.host.launch import Launch
from openenv_mcp.isolation.host.uids import UID_BASE, lease_uid
from openenv_mcp.isolation.transport.commands import run_launch
from openenv_mcp.isolation.transport.mcpsession import truncation_marker
from openenv_mcp.testing import need

from support import ROOT
from support.containment import (
    DROPS_UID,
    Listener,
    assert_no_leak,
    call,
    hostile_env,
    marked_processes,
    survivors_of_killed_server,
    world_dir,
)


def test_one_persistent_session_per_episode_and_fresh_state_after_reset():
    env, marker = hostile_env("process")
    with env:
        env.reset(seed=0)
        assert call(env, "counter") == ("1", False)
        assert call(env, "counter") == ("2", False)
        env.reset(seed=1)
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


def test_environment_is_scrubbed_to_declared_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("HOST_SECRET_TOKEN", "s3cret")
    monkeypatch.setenv("DECLARED", "passed-through")
    env, marker = hostile_env("process", env={"GIVEN": "1"}, pass_env=["DECLARED", "NOT_SET_ANYWHERE"])
    with env:
        env.reset(seed=0)
        seen = json.loads(call(env, "environ")[0])
        assert sorted(seen) == ["DECLARED", "GIVEN", "HOME", "LANG", "PATH", "TMPDIR"]
        assert seen["DECLARED"] == "passed-through" and seen["LANG"] == "C.UTF-8"
        who = json.loads(call(env, "whoami")[0])
        assert who["cwd"] == str(env.unwrapped.episode.workspace.path)
        assert seen["HOME"] != who["cwd"] and seen["TMPDIR"] == seen["HOME"]
    assert_no_leak(marker)


def test_workspace_is_seeded_private_and_writable(tmp_path):
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "notes.txt").write_text("hello")
    env, marker = hostile_env("process", workspace="seed", base_dir=tmp_path)
    with env:
        env.reset(seed=0)
        assert call(env, "list_dir", path=".") == ('["notes.txt"]', False)
        assert call(env, "read_file", path="notes.txt") == ("hello", False)
        assert call(env, "write_file", path="out.txt", text="new") == ("written", False)
        assert (env.unwrapped.episode.workspace.path / "out.txt").read_text() == "new"
        env.reset(seed=1)
        assert call(env, "list_dir", path=".") == ('["notes.txt"]', False)
    assert (seed / "notes.txt").read_text() == "hello"
    assert_no_leak(marker)


def test_runs_as_an_unprivileged_uid_when_root():
    need(DROPS_UID, "the uid drop happens only when the environment server runs as root")
    env, marker = hostile_env("process")
    with env:
        env.reset(seed=0)
        assert json.loads(call(env, "whoami")[0])["uid"] != 0
    assert_no_leak(marker)


def test_private_secret_and_writes_outside_the_workspace_are_refused(tmp_path):
    need(DROPS_UID, "file containment by uid needs the environment server to run as root")
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    secret.chmod(0o600)
    outside = tmp_path / "outside"
    outside.mkdir()
    env, marker = hostile_env("process")
    with env:
        env.reset(seed=0)
        text, error = call(env, "read_file", path=str(secret))
        assert error and text == f"PermissionError: [Errno 13] Permission denied: '{secret}'"
        text, error = call(env, "write_file", path=str(outside / "x.txt"), text="pwned")
        assert error and text == f"PermissionError: [Errno 13] Permission denied: '{outside / 'x.txt'}'"
        assert not (outside / "x.txt").exists()
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


def test_fork_bomb_hits_the_process_limit_and_everything_is_killed_on_close():
    need(
        DROPS_UID,
        "RLIMIT_NPROC holds only for an unprivileged uid (the environment server must be root and "
        "/usr/bin/python3 reachable by other users)",
    )
    env, marker = hostile_env("process", processes=16)
    with env:
        env.reset(seed=0)
        text, error = call(env, "fork_bomb")
        assert not error and text.startswith("fork failed after ") and text.endswith("Resource temporarily unavailable")
        assert int(text.split()[3]) < 16
        assert call(env, "counter") == ("1", False)
        assert len(marked_processes(marker)) > 5
    assert_no_leak(marker)


def test_memory_bomb_kills_only_the_server_which_restarts():
    env, marker = hostile_env("process", memory_mb=200)
    with env:
        env.reset(seed=0)
        assert call(env, "counter") == ("1", False)
        text, error = call(env, "memory_bomb")
        assert error
        assert text.startswith(
            "Tool 'memory_bomb' failed: tool server 'h' exited with code 1 during the call; "
            "it is restarted on the next call; stderr: "
        )
        assert text.endswith("MemoryError")
        assert call(env, "counter") == ("1", False)  # a fresh server: the episode goes on
    assert_no_leak(marker)


def test_infinite_loop_times_out_and_the_server_is_restarted():
    env, marker = hostile_env("process", options={"call_timeout": 1})
    with env:
        env.reset(seed=0)
        assert call(env, "counter") == ("1", False)
        assert call(env, "spin") == ("Tool 'spin' timed out after 1 s", True)
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


def test_a_restart_slower_than_the_call_timeout_does_not_loop():
    """The killed server restarts in the background: a call that times out waiting for it
    does not kill it again, and the one after gets the restarted server."""
    env, marker = hostile_env("process", "--slow-start", options={"call_timeout": 1})
    with env:
        env.reset(seed=0)
        assert call(env, "spin") == ("Tool 'spin' timed out after 1 s", True)
        assert call(env, "counter") == ("Tool 'counter' timed out after 1 s", True)  # still starting
        results = [call(env, "counter") for _ in range(3)]  # the restart finishes within a call or two
        assert ("1", False) in results and results[-1] in (("1", False), ("2", False), ("3", False))
    assert_no_leak(marker)


def test_cpu_time_limit_kills_a_busy_server():
    env, marker = hostile_env("process", cpu_seconds=1, call_timeout=20)
    with env:
        env.reset(seed=0)
        text, error = call(env, "spin")
        assert error and text == (
            "Tool 'spin' failed: tool server 'h' was killed by SIGXCPU during the call; "
            "it is restarted on the next call"
        )
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


@pytest.mark.parametrize("size", [1500, 5_000_000])
def test_huge_output_is_cut_with_a_visible_marker(size):
    env, marker = hostile_env("process", output_bytes=1000)
    with env:
        env.reset(seed=0)
        text, error = call(env, "big_output", size=size)
        assert not error
        body, _, tail = text.partition("\n[output truncated")
        assert body == "x" * 1000
        if size == 1500:
            assert text == "x" * 1000 + truncation_marker(1000, size)
        else:  # cut on the pipe: the size counted is the whole message's
            assert text.startswith("x" * 1000 + "\n[output truncated: the tool produced ")
            assert int(tail.split()[4]) > size
        assert call(env, "counter") == ("1", False)  # the same server, still answering
    assert_no_leak(marker)


def test_garbage_on_stdout_and_crashes_are_error_results_then_recovered():
    env, marker = hostile_env("process")
    with env:
        env.reset(seed=0)
        assert call(env, "garbage") == (
            "Tool 'garbage' failed: tool server 'h' wrote non-JSON-RPC output to stdout: 'this is not JSON-RPC' "
            "during the call; it is restarted on the next call",
            True,
        )
        assert call(env, "counter") == ("1", False)
        assert call(env, "crash") == (
            "Tool 'crash' failed: tool server 'h' exited with code 3 during the call; it is restarted on the next call",
            True,
        )
        assert call(env, "counter") == ("1", False)
    assert_no_leak(marker)


@pytest.mark.parametrize(
    ("flags", "limits", "message"),
    [
        (
            ["--exit-early"],
            {},
            "tool server 'h' exited with code 7 before answering initialize; stderr: hostile: exiting early on purpose",
        ),
        (
            ["--garbage-init"],
            {},
            "tool server 'h' wrote non-JSON-RPC output to stdout: 'Welcome to my server!' before answering initialize",
        ),
        (["--hang-init"], {"start_timeout": 1}, "tool server 'h' did not answer initialize within 1 s"),
    ],
)
def test_servers_that_fail_to_start_raise_a_clear_boundary_error(flags, limits, message):
    env, marker = hostile_env("process", *flags, **limits)
    with env:
        with pytest.raises(BoundaryError) as info:
            env.reset(seed=0)
        assert str(info.value) == message
    assert_no_leak(marker)


def test_a_missing_command_says_so():
    env, _ = hostile_env("process", python="no-such-binary-xyz")
    with (
        env,
        pytest.raises(
            BoundaryError,
            match=r"^tool server 'h' could not start: command 'no-such-binary-xyz' "
            r"not found on PATH$",
        ),
    ):
        env.reset(seed=0)


def test_detached_grandchildren_are_killed_on_close():
    need(
        os.geteuid() == 0,
        "the process boundary kills detached processes through the episode uid's guard and cgroup, which need root: run the tests as root (as CI does)",
    )
    env, marker = hostile_env("process")
    with env:
        env.reset(seed=0)
        assert call(env, "spawn_orphan") == ("spawned a detached grandchild", False)
        assert len(marked_processes(marker)) == 2
    assert_no_leak(marker)


def test_world_readable_host_files_are_readable_from_the_process_boundary():
    """Documented limit: the process boundary hides only what file permissions hide (use sandbox)."""
    env, marker = hostile_env("process")
    with world_dir() as folder, env:
        (folder / "public.txt").write_text("anyone may read this")
        (folder / "public.txt").chmod(0o644)
        env.reset(seed=0)
        assert call(env, "read_file", path=str(folder / "public.txt")) == ("anyone may read this", False)
    assert_no_leak(marker)


def test_loopback_is_reachable_from_the_process_boundary():
    """Documented limit: the process boundary has no network containment (use sandbox)."""
    listener = Listener()
    env, marker = hostile_env("process")
    try:
        with env:
            env.reset(seed=0)
            text, error = call(env, "connect", host="127.0.0.1", port=listener.port)
            assert (text, error) == ("connected; got 'secret-banner'", False)
    finally:
        listener.close()
    assert_no_leak(marker)


def test_nothing_outlives_a_killed_environment_server():
    need(
        os.geteuid() == 0,
        "the process boundary kills detached processes through the episode uid's guard and cgroup, which need root: run the tests as root (as CI does)",
    )
    assert survivors_of_killed_server("process") == []


# -- never root by accident; a dropped server runs under uvloop; uid leases are host-wide
def _under_a_private_folder(path: str) -> bool:
    from openenv_mcp.isolation.host.exposure import private_ancestor

    return private_ancestor(os.path.realpath(path)) is not None


def test_a_runtime_under_a_private_folder_still_runs_as_the_episode_uid():
    need(
        os.geteuid() == 0 and _under_a_private_folder(sys.executable),
        "needs root and an interpreter under a private folder such as /root",
    )
    env, marker = hostile_env("process", python=sys.executable)
    with env:
        env.reset(seed=0)
        assert json.loads(call(env, "whoami")[0])["uid"] >= UID_BASE
        assert call(env, "spawn_orphan") == ("spawned a detached grandchild", False)
    assert_no_leak(marker)


def test_run_as_root_is_refused_silently_never_it_must_be_asked_for():
    need(os.geteuid() == 0, "needs root")
    spec = ToolServerSpec(name="h", command=[sys.executable, "-c", "pass"], run_as_root=True)
    assert spec.run_as_root is True
    assert ToolServerSpec(name="h", command=["x"]).run_as_root is False


def test_a_server_dropping_to_its_uid_starts_under_uvloop():
    need(os.geteuid() == 0, "the uid drop happens only as root")
    uvloop = pytest.importorskip("uvloop")

    async def main():
        uid, fd = lease_uid()
        try:
            return uid, await run_launch(
                Launch(["/bin/sh", "-c", "id -u; id -G"], {"PATH": "/usr/bin:/bin"}, "/", uid, []), 20
            )
        finally:
            os.close(fd)

    uid, (code, out, err) = uvloop.run(main())
    assert (code, out.split(), err) == (0, [str(uid), str(uid)], "")


_HOLD_LEASE = """
import os, sys
sys.path.insert(0, sys.argv[1])
from openenv_mcp.isolation.host.uids import lease_uid
uid, fd = lease_uid(start=int(sys.argv[2]))
print(uid, flush=True)
sys.stdin.read()
"""


def test_a_uid_leased_by_another_server_on_the_host_is_never_handed_out():
    need(os.geteuid() == 0, "uids are handed out only as root")
    start = 4_321_000
    other = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LEASE, str(ROOT), str(start)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        held = int(other.stdout.readline())
        assert held == UID_BASE + start
        mine, fd = lease_uid(start=start)
        os.close(fd)
        assert mine != held
    finally:
        other.stdin.close()
        other.wait(timeout=10)
    again, fd = lease_uid(start=start)  # a dead holder's lease frees itself
    os.close(fd)
    assert again == held
