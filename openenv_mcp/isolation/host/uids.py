"""Unprivileged uids for episodes, unique on the host: leased, guarded, released.

When the environment server runs as root, each episode's servers run as a uid of their own
(:data:`UID_BASE` + n, no supplementary groups): the kernel then holds ``RLIMIT_NPROC`` for them, and
episodes cannot signal or read each other. :data:`UIDS` hands them out; each uid in use is leased
host-wide (a ``flock``-ed file) and guarded by a root process that kills every process of the uid
when the episode ends or the environment server dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from openenv_mcp.errors import BoundaryError
from openenv_mcp.isolation.host.launch import SYSTEM_PATH
from openenv_mcp.isolation.host.proctree import kill_uid

__all__ = ["LEASE_DIRS", "UID_BASE", "UIDS", "chown_tree", "lease_dir", "lease_uid"]

UID_BASE = int(os.environ.get("OPENENV_MCP_UID_BASE", "1640000000"))
"""First uid given to episodes when running as root (``$OPENENV_MCP_UID_BASE``)."""

_GUARD = """import os, sys
sys.stdin.buffer.read()
os.setgroups([]); os.setgid({uid}); os.setuid({uid})
try:
    os.kill(-1, 9)
except OSError:
    pass
"""


_SHELL_GUARD = 'while read -r _; do :; done; exec "$0" --reuid="$1" --regid="$1" --clear-groups -- "$2" -KILL -1'
"""The same guard without an interpreter (a shell waits, then ``setpriv`` becomes the uid and runs ``kill -1``):
about a millisecond of CPU per episode instead of a Python start."""


def _guard_command(uid: int) -> list[str]:
    setpriv = shutil.which("setpriv", path=SYSTEM_PATH)
    kill = shutil.which("kill", path=SYSTEM_PATH)
    if setpriv and kill and os.path.exists("/bin/sh"):
        return ["/bin/sh", "-c", _SHELL_GUARD, setpriv, str(uid), kill]
    return [sys.executable, "-S", "-I", "-c", _GUARD.format(uid=uid)]


LEASE_DIRS = ("/run/openenv-mcp/uids", os.path.join(tempfile.gettempdir(), "openenv-mcp-uids"))
"""Where uid leases live: one lock file per uid in use on this host, ``flock``-ed for the episode's life."""
UID_SPAN = max(1, int(os.environ.get("OPENENV_MCP_UID_SPAN", "10000000")))
"""How many uids from :data:`UID_BASE` on episodes may use (``$OPENENV_MCP_UID_SPAN``; e.g. a delegated range)."""


def lease_dir() -> Path:
    """The host-wide folder of uid leases (``/run/openenv-mcp/uids``, else under the temp folder)."""
    for folder in LEASE_DIRS:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if os.access(folder, os.W_OK):
                return Path(folder)
        except OSError:
            continue
    raise BoundaryError(f"no writable folder for uid leases (tried {', '.join(LEASE_DIRS)})")


def lease_uid(start: int | None = None) -> tuple[int, int]:
    """Take a uid no other episode on this host holds: ``(uid, fd)``, the ``fd`` holding its lease.

    The lease is an exclusive ``flock`` on ``<lease_dir>/<uid>``: it lasts while the fd is open (in
    this process or in the uid's guard), so a crashed server's leases free themselves."""
    folder = lease_dir()
    offset = secrets.randbelow(UID_SPAN) if start is None else start
    tries = min(4096, UID_SPAN)
    for i in range(tries):
        uid = UID_BASE + (offset + i) % UID_SPAN
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_ino != os.stat(folder / str(uid), follow_symlinks=False).st_ino:
                raise OSError("the lease file was swept while we locked it")
        except OSError:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {_start_time(os.getpid())}\n".encode())
        return uid, fd
    raise BoundaryError(
        f"no free episode uid on this host ({tries} leases in {folder} are held; "
        f"uids {UID_BASE}+{UID_SPAN}, $OPENENV_MCP_UID_BASE and $OPENENV_MCP_UID_SPAN)"
    )


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


class _Uids:
    """Unprivileged uids, one per episode (shared by that episode's servers), unique on the host.

    Each uid is leased host-wide (:func:`lease_uid`), so two environment servers never
    hand out the same one. Each uid in use has a *guard*: a tiny root process that
    waits on a pipe from us and, when it closes (the episode ended, or the environment
    server died, even by SIGKILL), kills every process of the uid. That is what catches
    double-forked, ``setsid`` descendants that ``PR_SET_PDEATHSIG`` (which only reaches
    the direct child) would miss. The guard holds the uid's lease too, so the uid is
    not handed out again before its processes are gone.
    """

    def __init__(self) -> None:
        self._by_episode: dict[str, tuple[int, int]] = {}
        self._guards: dict[int, subprocess.Popen[bytes]] = {}
        self._leases: dict[int, int] = {}
        self._lock = threading.Lock()

    def acquire(self, episode: str) -> int | None:
        if os.geteuid() != 0:
            return None
        with self._lock:
            uid, refs = self._by_episode.get(episode, (0, 0))
            if not refs:
                uid, fd = lease_uid()
                self._leases[uid] = fd
                self._guards[uid] = subprocess.Popen(
                    _guard_command(uid),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    env={},
                    pass_fds=(fd,),
                )
            self._by_episode[episode] = (uid, refs + 1)
            return uid

    def exclusive(self, episode: str) -> bool:
        """Whether one server alone runs as the episode's uid (then a restart may kill the uid)."""
        return self._by_episode.get(episode, (0, 0))[1] == 1

    def release(self, episode: str) -> None:
        """Drop one reference; the last one kills every process of the uid (via its guard)."""
        with self._lock:
            uid, refs = self._by_episode.get(episode, (0, 0))
            if refs > 1:
                self._by_episode[episode] = (uid, refs - 1)
                return
            self._by_episode.pop(episode, None)
            guard = self._guards.pop(uid, None)
            fd = self._leases.pop(uid, None)
        if guard is not None:
            with contextlib.suppress(OSError):
                guard.stdin.close()  # type: ignore[union-attr]
            try:
                guard.wait(timeout=5)
            except subprocess.TimeoutExpired:
                guard.kill()
                guard.wait()
                kill_uid(uid)
        if fd is not None:
            os.close(fd)  # the guard's copy closed when it exited: the uid is free again


UIDS = _Uids()


def chown_tree(path: Path, uid: int, gid: int | None = None) -> None:
    """Give ``path`` and everything under it to ``uid`` (and ``gid``, by default the uid's own group;
    links are not followed)."""
    gid = uid if gid is None else gid
    os.chown(path, uid, gid, follow_symlinks=False)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
