"""Finding and killing a server's processes: its process tree, every process of a uid.

What the process boundaries use to leave nothing behind: a server's descendants (by parent links in
``/proc``, stopped as they are found so that a tree still growing is caught whole: :func:`kill_tree`), the
live processes of an episode's uid, and ``kill(-1)`` as that uid, which reaches double-forked, ``setsid``
descendants too (parent links do not: their parent exited, so the uid, the server's cgroup or its PID
namespace has to catch those).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from openenv_mcp.isolation.host.launch import SYSTEM_PATH

__all__ = ["descendants", "kill_tree", "kill_uid", "uid_processes"]

KILL_ROUNDS = 100
STOP_WAIT = 1.0
"""Seconds :func:`kill_tree` waits for the processes it stopped in one round to be stopped."""


def kill_uid(uid: int) -> None:
    """SIGKILL every process running as ``uid``: atomically, by ``kill(-1)`` as that uid, or (a minimal
    system may have no ``kill(1)``: procps is not installed) one by one through pidfds until none is left."""
    kill = shutil.which("kill", path=SYSTEM_PATH)
    if kill is not None:
        try:
            subprocess.run(
                [kill, "-KILL", "-1"],
                user=uid,
                group=uid,
                extra_groups=[],
                env={},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=5,
                check=False,
            )
            return  # kill(-1) reached every process of the uid: no /proc scans on the closing path
        except (OSError, subprocess.SubprocessError):
            pass  # could not run it: kill them one by one below
    for _ in range(KILL_ROUNDS):  # each round also catches what the last one's processes forked meanwhile
        pids = uid_processes(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                fd = os.pidfd_open(pid)  # the pid cannot be reused for another process while this is open
                try:
                    if pid in uid_processes(uid, [str(pid)]):
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                finally:
                    os.close(fd)
        time.sleep(0.01)


def descendants(pid: int) -> list[int]:
    """``pid``'s descendants (by parent links in ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, ppid)`` of ``pid``, or ``None`` once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _stop_if_child(pid: int, parents: set[int]) -> bool:
    """SIGSTOP ``pid`` if it is (still) a child of one of ``parents``: checked through a pidfd, so a pid
    reused meanwhile by another process is never signalled."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        stat = _stat(pid)
        if stat is None or stat[1] not in parents:
            return False
        signal.pidfd_send_signal(fd, signal.SIGSTOP)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def kill_tree(root: int) -> list[int]:
    """SIGKILL ``root`` and every descendant, also of a tree that keeps growing (a chain whose newest process
    forks the next, each in a session of its own); the descendants killed.

    Each round lists ``/proc`` (reading only the pids not seen before, so a round is quick however large
    the tree) and SIGSTOPs the descendants found (a stopped process cannot fork), then waits until they
    are stopped; when two rounds in a row find nothing new the tree is frozen whole, and everything in it is
    killed. Iterative: no recursion, however deep the tree. A process that left the tree before it was
    stopped (its parent exited: a double fork) is not found by parent links."""
    parent_of: dict[int, int] = {}
    tree, tried, stopped = {root}, {root}, set()
    with contextlib.suppress(OSError):
        os.kill(root, signal.SIGSTOP)
    quiet = 0
    for _ in range(KILL_ROUNDS):
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in parent_of and (stat := _stat(int(entry))) is not None:
                parent_of[int(entry)] = stat[1]
        grown = True
        while grown:  # the closure of ``tree`` under parent links (a parent is always seen with or before its child)
            before = len(tree)
            tree.update(pid for pid, ppid in parent_of.items() if ppid in tree)
            grown = len(tree) > before
        candidates = tree - tried
        tried.update(candidates)
        # only what was stopped is killed below: a pid that is no longer a child of the tree (reused by
        # another process since it was listed) is never signalled
        new = [pid for pid in candidates if _stop_if_child(pid, tree)]
        stopped.update(new)
        if not new:
            quiet += 1
            if quiet >= 2:
                break
            continue
        quiet = 0
        deadline = time.monotonic() + STOP_WAIT
        while (running := [p for p in new if (st := _stat(p)) is not None and st[0] not in "TtZX"]) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.001)
            new = running
    for pid in [root, *stopped]:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return sorted(stopped)


def uid_processes(uid: int, entries: list[str] | None = None) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid`` (among the pids ``entries``; default: all)."""
    found = []
    for entry in os.listdir("/proc") if entries is None else entries:
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            found.append(int(entry))
    return found
