"""Per-server cgroups (cgroup v2): membership no double fork, ``setsid`` or ``chdir /`` escapes.

When this process may create cgroups in a cgroup v2 hierarchy (the unified mount of a pure v2
host at ``/sys/fs/cgroup``, or the ``unified`` one of a hybrid host), each ``process`` and
``sandbox`` server gets a cgroup of its own, named after the owning environment server
(``openenv-mcp-<owner tag>-<random>``), inside this process's own cgroup. The launcher joins it before it drops privileges, so every process the server ever starts is a
member; closing the server kills the whole group (``cgroup.kill``, or SIGKILL to each member on
kernels before 5.14) and removes it. That holds for servers with no uid of their own too
(``run_as_root = true``, or an environment server that is not root). Without a usable hierarchy
(cgroup v1 only, no permission) the episode uid (see :mod:`openenv_mcp.isolation.boundaries.process`) and the sandbox's PID
namespace are the membership, and :func:`create` returns ``None``.

Groups left by an environment server that died (its owner tag names a dead process) are killed
and removed when the next group is created; a live server's groups are never touched.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from pathlib import Path

from openenv_mcp.isolation.host.workspace import owner_alive, owner_tag

__all__ = ["Group", "create", "hierarchy"]

PREFIX = "openenv-mcp-"
ALIVE_FOR = 2.0
"""Seconds another server found alive is not checked again (creates come by the hundred under load)."""
_seen_alive: dict[str, float] = {}
_hierarchy: Path | None | bool = False


def hierarchy() -> Path | None:
    """The cgroup v2 folder this process may create groups in (its own cgroup), or ``None``."""
    global _hierarchy
    if _hierarchy is False:
        _hierarchy = _find()
    return _hierarchy  # type: ignore[return-value]


def _find() -> Path | None:
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
        own = next(
            (line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")), None
        )
    except OSError:
        return None
    if own is None:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            base = Path(fields[1]) / own.strip().lstrip("/")
            if (base / "cgroup.procs").exists() and os.access(base, os.W_OK):
                return base
    return None


class Group:
    """One server's cgroup."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def procs(self) -> str:
        """The file a process writes ``0`` to in order to join."""
        return str(self.path / "cgroup.procs")

    def members(self) -> list[int]:
        """Pids in the group (none once it is removed)."""
        try:
            return [int(p) for p in Path(self.procs).read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL every member (atomically with ``cgroup.kill`` where the kernel has it)."""
        try:
            (self.path / "cgroup.kill").write_text("1")
            return
        except OSError:
            pass
        for _ in range(50):  # no cgroup.kill: a member forking meanwhile is caught by the next pass
            members = self.members()
            if not members:
                return
            for pid in members:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def freeze(self, frozen: bool, wait: float = 1.0) -> bool:
        """Freeze (``True``) or thaw every member through ``cgroup.freeze``; ``False`` when the kernel has
        no freezer (before 5.2) or the group did not settle within ``wait`` s."""
        try:
            (self.path / "cgroup.freeze").write_text("1" if frozen else "0")
        except OSError:
            return False
        settled = f"frozen {int(frozen)}"
        deadline = time.monotonic() + wait
        while True:
            try:
                if settled in (self.path / "cgroup.events").read_text().splitlines():
                    return True
            except OSError:
                return False
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)

    def remove(self, wait: float = 5.0) -> bool:
        """Kill the members and remove the group; ``False`` if a member outlived ``wait`` s."""
        self.kill()
        deadline = time.monotonic() + wait
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
                self.kill()


def create() -> Group | None:
    """A new group for one server, or ``None`` when no cgroup v2 hierarchy is usable here."""
    base = hierarchy()
    if base is None:
        return None
    _sweep(base)
    path = base / f"{PREFIX}{owner_tag()}-{secrets.token_hex(6)}"
    try:
        path.mkdir(mode=0o755)
    except OSError:
        return None
    return Group(path)


def _sweep(base: Path) -> None:
    """Remove the groups of environment servers that died without removing them."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    own = owner_tag()  # this server's groups (most of them, under load) are alive: no /proc read for each
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        tag = entry.name[len(PREFIX) :].rsplit("-", 1)[0]
        if tag == own or time.monotonic() - _seen_alive.get(tag, -ALIVE_FOR) < ALIVE_FOR:
            continue
        try:
            boot, pid, start = tag.split(".")
            dead = not owner_alive(boot, int(pid), start)
        except ValueError:
            continue
        if dead:
            Group(entry).remove(wait=1.0)
        else:
            _seen_alive[tag] = time.monotonic()
