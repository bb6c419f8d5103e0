"""Finding and killing a server's processes: its process tree, every process of a uid.

What the process boundaries use to leave nothing behind: a server's descendants (by parent links in
``/proc``), the live processes of an episode's uid, and ``kill(-1)`` as that uid, which reaches
double-forked, ``setsid`` descendants too.
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

__all__ = ["descendants", "kill_uid", "uid_processes"]

KILL_ROUNDS = 100


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
