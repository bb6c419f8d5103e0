"""Two environment servers started at the same moment on one host, each creating episodes concurrently
from several threads, never hand one per-episode uid to two live episodes.

The uid range is squeezed (``$OPENENV_MCP_UID_SPAN``) so that both servers keep wanting the same few uids:
every uid is then held by one server, released, and taken by the other, many times over. Two things would
show a collision: two holds of one uid that overlap in time (``CLOCK_MONOTONIC`` is one clock for the whole
host), and an episode's process killed during its hold (a uid's release kills every process of the uid, so a
second episode on the same uid loses its processes when the first one closes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

from openenv_mcp.testing import need

from support import ROOT, replay_size
from support.containment import DROPS_UID

LEASE_SPAN = 8
"""uids the two servers share when they only lease (3 episodes at a time each: 6 of 8 busy most of the time)."""
EPISODE_SPAN = 3
"""uids the two servers share when they run sandboxed episodes (2 at a time each: 4 wanted, 3 there)."""

_LEASES = """
import json, random, subprocess, sys, threading, time
from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.host.uids import UIDS

rounds, tag = int(sys.argv[1]), sys.argv[2]
holds, busy = [], []


def episode(n):
    for r in range(rounds):
        name = f"{tag}-{n}-{r}"
        try:
            uid = UIDS.acquire(name)
        except BoundaryError:
            busy.append(name)  # every uid of the span was held at that moment: a clear error, not a shared uid
            time.sleep(0.01)
            continue
        worker = subprocess.Popen(["sleep", "60"], user=uid, group=uid, extra_groups=[])
        start = time.monotonic()
        time.sleep(random.uniform(0.0, 0.02))
        alive = worker.poll() is None
        end = time.monotonic()
        holds.append([uid, start, end, alive])
        UIDS.release(name)  # its guard kills the worker
        worker.wait(timeout=10)


print("ready", flush=True)  # imported and set up: the test starts both servers' episodes at once
sys.stdin.readline()
threads = [threading.Thread(target=episode, args=(n,)) for n in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"holds": holds, "busy": len(busy)}))
"""

_EPISODES = """
import json, sys, threading, time
sys.path.insert(0, sys.argv[3])
from support.containment import call, hostile_env

rounds, isolation = int(sys.argv[1]), sys.argv[2]
holds, errors, busy = [], [], []


def episode(n):
    done = 0
    while done < rounds:
        env, marker = hostile_env(isolation)
        try:
            env.reset(seed=n)
            first = json.loads(call(env, "whoami")[0])
            start = time.monotonic()
            time.sleep(0.02)
            text, error = call(env, "whoami")  # the same server still answers: nobody killed its uid
            end = time.monotonic()
            alive = not error and json.loads(text)["pid"] == first["pid"]
            holds.append([first["uid"], start, end, alive])
            done += 1
        except Exception as e:
            if "no free episode uid" not in str(e) or len(busy) > 200:
                errors.append(repr(e))
                return
            busy.append(n)  # every uid of the span was held at that moment: a clear error, not a shared uid
            time.sleep(0.05)
        finally:
            env.close()


print("ready", flush=True)  # imported and set up: the test starts both servers' episodes at once
sys.stdin.readline()
threads = [threading.Thread(target=episode, args=(n,)) for n in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"holds": holds, "errors": errors, "busy": len(busy)}))
"""


def _two_servers(script: str, span: int, *args: str) -> list[dict]:
    """Run ``script`` in two processes that start their episodes at the same moment (each says ``ready`` once
    imported; then both are told to go, however slow the machine is); their reports."""
    env = {**os.environ, "OPENENV_MCP_UID_SPAN": str(span), "PYTHONPATH": str(ROOT / "tests")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args, tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for tag in ("a", "b")
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.poll()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def _assert_never_shared(reports: list[dict], span: int) -> None:
    by_uid: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for report, server in zip(reports, "ab", strict=True):
        for uid, start, end, alive in report["holds"]:
            assert alive, f"server {server}: a process of its episode on uid {uid} was killed during the episode"
            by_uid[uid].append((start, end, server))
    assert len(by_uid) <= span
    for uid, holds in by_uid.items():
        holds.sort()
        for (_, end, one), (start, _, other) in zip(holds, holds[1:], strict=False):
            assert start >= end, f"uid {uid} was held by live episodes of servers {one} and {other} at once"
    # the squeeze worked: uids went from one server to the other
    assert any(len({s for _, _, s in holds}) == 2 for holds in by_uid.values()), dict(by_uid)


def test_two_servers_leasing_uids_at_once_never_give_one_uid_to_two_live_episodes():
    need(os.geteuid() == 0, "per-episode uids need root (run the tests as root, as CI does)")
    rounds = replay_size(6, 40)  # each hold is ~10 ms: enough rounds that uids change servers whatever the load
    reports = _two_servers(_LEASES, LEASE_SPAN, str(rounds))
    assert sum(len(r["holds"]) for r in reports) + sum(r["busy"] for r in reports) == 2 * 3 * rounds
    _assert_never_shared(reports, LEASE_SPAN)


@pytest.mark.sandbox
def test_two_servers_creating_sandboxed_episodes_at_once_never_share_an_episode_uid():
    need(DROPS_UID, "per-episode uids need root and a Python an unprivileged uid can run (/usr/bin/python3)")
    need(shutil.which("bwrap") is not None, "the sandbox boundary needs bubblewrap (apt-get install bubblewrap)")
    rounds = replay_size(2, 10)
    reports = _two_servers(_EPISODES, EPISODE_SPAN, str(rounds), "sandbox", str(ROOT / "tests"))
    assert [r["errors"] for r in reports] == [[], []]
    assert sum(len(r["holds"]) for r in reports) == 2 * 2 * rounds
    _assert_never_shared(reports, EPISODE_SPAN)
