"""The per-episode uids: leases and the guard that kills every process of a uid when its episode ends."""

from __future__ import annotations

import os
import subprocess
import time

from openenv_mcp.isolation.host.uids import UIDS
from openenv_mcp.testing import need


def live_processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = open(f"/proc/{entry}/status").read()  # noqa: SIM115, PTH123
            except OSError:
                continue
            if f"\nUid:\t{uid}\t" in status and "\nState:\tZ" not in status:
                found.append(int(entry))
    return found


def test_the_guard_kills_a_detached_process_of_the_uid_when_the_episode_releases_it():
    need(os.geteuid() == 0, "per-episode uids need root (run the tests as root, as CI does)")
    uid = UIDS.acquire("test-guard-episode")
    assert uid is not None
    started = subprocess.Popen(
        ["/bin/sh", "-c", "setsid sleep 300 & sleep 300"], user=uid, group=uid, extra_groups=[], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 10
        while len(live_processes_of(uid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(live_processes_of(uid)) == 3  # the shell, its sleep and the setsid'd sleep
        UIDS.release("test-guard-episode")
        started.wait(timeout=10)
        deadline = time.monotonic() + 5
        while live_processes_of(uid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert live_processes_of(uid) == []
    finally:
        started.kill()
        started.wait()
