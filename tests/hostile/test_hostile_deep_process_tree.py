"""An agent builds a process tree as deep as it can (each process starts the next and waits for it), or
forks away forever (each process forks and exits, so no parent link leads to the newest), and hopes
something outlives the episode: closing leaves no process behind, in bounded time.

Through an episode the ``processes`` cap (``RLIMIT_NPROC`` of the episode's uid) stops a 100k-deep chain
after a few dozen levels. The reaper itself (the stdio transport's kill: the process group, every
descendant by parent links, and with ``kill_uid`` every process of the uid) is then run on a chain as deep
as the machine builds cheaply (``make test``), or on a 100k-deep one (``make test-replay``): the uid's
process cap is kept under half the kernel's ``pid_max`` (the machine is shared) and the chain grows for at
most a set time, so the reaper meets whatever depth was reached, still growing or not.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import time
import uuid
from pathlib import Path

import anyio
import pytest

from openenv_mcp.isolation.host.launch import Launch
from openenv_mcp.isolation.host.proctree import kill_uid, uid_processes
from openenv_mcp.isolation.host.uids import lease_uid
from openenv_mcp.isolation.transport.stdio import StdioProcess
from openenv_mcp.testing import need

from support import replay_size
from support.containment import DROPS_UID, call, hostile_env, marked_processes

CHAIN = 'if [ "$1" -gt 0 ] && /bin/sh -c "$0" "$0" $(($1 - 1)) "$2" "$3"; then :; else echo "$1" >&"$2"; exec sleep 3600; fi'
"""The hostile server's ``deep_chain`` (tests/fixtures/hostile_server.py): ``sh -c CHAIN CHAIN depth fd marker``,
each level a shell that starts the next and waits; the bottom writes how many levels were left to ``fd``."""

GROWING = 'if [ "$1" -gt 0 ] && setsid -w /bin/sh -c "$0" "$0" $(($1 - 1)) "$2" "$3"; then :; else exec sleep 3600; fi'
"""The same chain with each level in a session (and process group) of its own, killed while it still grows."""

CLOSE_WITHIN = 30.0
"""Seconds closing an episode (or reaping a chain) may take, whatever the agent built."""


def _gone(uid: int, marker: str, within: float = 10.0) -> tuple[list[int], list[int]]:
    """Processes of ``uid`` and processes carrying ``marker`` still alive after ``within`` s."""
    deadline = time.monotonic() + within
    while (left := (uid_processes(uid), marked_processes(marker))) != ([], []) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


# -- through an episode: the process cap holds, closing leaves nothing
@pytest.mark.parametrize("isolation", ["process", pytest.param("sandbox", marks=pytest.mark.sandbox)])
def test_a_100k_deep_chain_stops_at_the_episode_process_cap_and_closing_the_episode_leaves_nothing(isolation):
    need(DROPS_UID, "the process cap holds for an unprivileged uid: run as root with a /usr/bin/python3")
    if isolation == "sandbox":
        need(shutil.which("bwrap") is not None, "the sandbox boundary needs bubblewrap (apt-get install bubblewrap)")
    env, marker = hostile_env(isolation, processes=64)
    try:
        env.reset(seed=0)
        uid = json.loads(call(env, "whoami")[0])["uid"]
        text, error = call(env, "deep_chain", depth=100_000)
        assert not error, text
        made = re.fullmatch(r"a chain of (\d+) processes \(the next fork failed\)", text)
        assert made is not None, text
        assert 10 <= int(made[1]) <= 64, text  # the server and its chain share the uid's 64 processes
        assert len(uid_processes(uid)) >= int(made[1])
    finally:
        started = time.monotonic()
        env.close()
        closed = time.monotonic() - started
    assert _gone(uid, marker) == ([], [])
    assert closed < CLOSE_WITHIN


@pytest.mark.parametrize("isolation", ["process", pytest.param("sandbox", marks=pytest.mark.sandbox)])
def test_a_process_forking_away_forever_does_not_outlive_its_episode(isolation):
    need(DROPS_UID, "per-episode uids need root and a Python an unprivileged uid can run (/usr/bin/python3)")
    if isolation == "sandbox":
        need(shutil.which("bwrap") is not None, "the sandbox boundary needs bubblewrap (apt-get install bubblewrap)")
    env, marker = hostile_env(isolation)
    try:
        env.reset(seed=0)
        info = json.loads(call(env, "whoami")[0])
        assert call(env, "fork_away") == ("forking away", False)
        deadline = time.monotonic() + 10
        runners: set[int] = set()
        while len(runners) < 3 and time.monotonic() < deadline:  # it has moved on to new pids already
            runners.update(p for p in marked_processes(marker) if p != info["pid"])
            time.sleep(0.02)
        assert len(runners) >= 3, runners
    finally:
        started = time.monotonic()
        env.close()
        closed = time.monotonic() - started
    assert _gone(info["uid"], marker) == ([], [])
    # no wait ran out: the runner holds the server's stdout, and closing used to wait 5 s for that pipe
    assert closed < 4.0, f"closing took {closed:.1f} s"


# -- the reaper itself on a deep chain
def _pid_max() -> int:
    return int(Path("/proc/sys/kernel/pid_max").read_text())


async def _build_and_reap(script: str, depth: int, grow_for: float, kill_all_of_uid: bool) -> tuple[int, float]:
    """Start a chain of ``depth`` shells (``script``) as a leased uid under the stdio transport, let it grow
    until it reports its bottom (at most ``grow_for`` s), then stop the transport: ``(levels, seconds the stop
    took)``; nothing of the chain may be left."""
    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    uid, lease = lease_uid()
    cap = min(depth + 16, _pid_max() // 2)  # the machine is shared: the uid never takes half the pids
    launch = Launch(
        ["/bin/sh", "-c", script, script, str(depth), "2", marker],
        {"PATH": "/usr/bin:/bin"},
        "/",
        uid,
        [(resource.RLIMIT_NPROC, (cap, cap))],
    )
    process = StdioProcess("chain", launch, 1 << 16, 1 << 16, kill_uid=kill_all_of_uid)
    try:
        await process.spawn()
        assert process.proc is not None and process.proc.stderr is not None
        left = None
        with anyio.move_on_after(grow_for):
            async for line in process.proc.stderr:  # dash's "Cannot fork" lines, then the bottom's count
                if line.strip().isdigit():
                    left = int(line)
                    break
        made = len(uid_processes(uid)) if left is None else depth - left + 1
        assert made >= 20, f"the chain did not grow: {made} levels"
        started = time.monotonic()
        await process.stop()
        took = time.monotonic() - started
        assert _gone(uid, marker) == ([], []), f"a chain of {made} levels left processes behind"
        return made, took
    finally:
        kill_uid(uid)
        os.close(lease)


@pytest.mark.parametrize("kill_all_of_uid", [False, True], ids=["by-parent-links", "and-by-uid"])
def test_the_reaper_leaves_nothing_of_a_deep_chain_in_bounded_time(kill_all_of_uid):
    need(os.geteuid() == 0, "the chain runs as a leased unprivileged uid: needs root")
    depth = replay_size(400, 100_000)
    made, took = anyio.run(_build_and_reap, CHAIN, depth, replay_size(60.0, 900.0), kill_all_of_uid)
    print(f"reaped a chain of {made} processes in {took:.2f} s")
    assert took < CLOSE_WITHIN + made / 1000


def test_the_reaper_by_parent_links_catches_a_chain_still_growing_one_session_per_process():
    need(os.geteuid() == 0, "the chain runs as a leased unprivileged uid: needs root")
    made, took = anyio.run(_build_and_reap, GROWING, 100_000, replay_size(2.0, 60.0), False)
    print(f"reaped a growing chain of {made} processes in {took:.2f} s")
    assert took < CLOSE_WITHIN + made / 1000
