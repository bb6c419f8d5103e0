"""Finding and killing a server's processes: its process tree, every process of a uid.

What the process boundaries use to leave nothing behind: a server's descendants (by parent links in
``/proc``), the live processes of an episode's uid, and ``kill(-1)`` as that uid, which reaches
double-forked, ``setsid`` descendants too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from .launch import SYSTEM_PATH

__all__ = ["descendants", "kill_uid", "uid_processes"]


def kill_uid(uid: int) -> None:
    """SIGKILL every process running as ``uid`` (atomically, by ``kill(-1)`` as that uid)."""
    kill = shutil.which("kill", path=SYSTEM_PATH) or "/bin/kill"
    with contextlib.suppress(OSError):
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


def uid_processes(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
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
