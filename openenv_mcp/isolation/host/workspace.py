"""Per-episode workspaces: a private folder seeded from read-only seed folders.

Each workspace is ``0700`` (its files keep the seed's modes inside it), so no other
uid on the host, another episode's included, can reach it. Its name records its
owner (``openenv-mcp-<boot>.<pid>.<start>-...``: this boot, this server's pid and
start time), so the first workspace a server creates sweeps what servers that are
really dead left behind (after a SIGKILL) and never touches a live server's.
Removal is iterative and relative to directory fds: any depth, links never followed.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import queue
import re
import shutil
import stat
import tempfile
import threading
from pathlib import Path

__all__ = [
    "BYTECODE_CACHES",
    "UserWorkspace",
    "Workspace",
    "copy_seed",
    "drain_removals",
    "owner_tag",
    "process_start_time",
    "remove_tree",
    "sweep_stale",
]

log = logging.getLogger("openenv_mcp.workspace")
PREFIX = "openenv-mcp-"
_OWNED = re.compile(r"^openenv-mcp-(?:home-)?([0-9a-f]{8})\.(\d+)\.(\d+)-")


BYTECODE_CACHES = frozenset({"__pycache__"})
"""Folders never copied out of a seed or a task folder: bytecode caches are not data. pip byte-compiles
every ``.py`` file of a wheel it installs (a built-in env's seeds and projects included), so a copy that
kept them would hand an agent ``__pycache__`` folders the checkout does not hold."""


def copy_seed(seed: Path, dest: Path) -> None:
    """Copy the tree ``seed`` into ``dest`` (merging), links kept as links, :data:`BYTECODE_CACHES`
    left out; ``dest`` stays ``0700``."""
    shutil.copytree(seed, dest, symlinks=True, dirs_exist_ok=True, ignore=_skip_caches)
    os.chmod(dest, 0o700)  # copytree copies the seed folder's mode onto dest


def _skip_caches(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in BYTECODE_CACHES and os.path.isdir(os.path.join(folder, n))}


# -- owners ----------------------------------------------------------------------------
@functools.cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:8]
    except OSError:
        return "00000000"


def process_start_time(pid: int) -> str | None:
    """``pid``'s start time (clock ticks after boot, from ``/proc``), or ``None`` if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_tag() -> str:
    """``<boot>.<pid>.<start time>`` of this process: what names a folder as this server's."""
    return f"{_boot_id()}.{os.getpid()}.{process_start_time(os.getpid()) or 0}"


def owner_alive(boot: str, pid: int, start: str) -> bool:
    """Whether the server that wrote an owner tag still runs (same boot, same pid and start time)."""
    return boot == _boot_id() and process_start_time(pid) == start


# -- removal ---------------------------------------------------------------------------
def _is_dir(fd: int, name: str) -> bool:
    return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)


def remove_tree(path: Path | str) -> None:
    """Delete the folder ``path`` and everything in it, at any depth, never following a link.

    No recursion and two directory fds at a time: every folder two levels down is moved up to
    the top folder under a fresh name (flattening the tree) until only files are left. Errors
    are logged and skipped; what cannot be removed stays."""
    path = Path(path)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        parent = os.open(path.parent, flags)
    except OSError as e:
        log.warning("cannot remove %s: %s", path, e)
        return
    try:
        try:
            top = os.open(path.name, flags, dir_fd=parent)
        except OSError as e:
            if os.path.islink(path):  # a link in its place: remove the link, never what it points to
                os.unlink(path.name, dir_fd=parent)
            elif not isinstance(e, FileNotFoundError):
                log.warning("cannot remove %s: %s", path, e)
            return
        try:
            _empty(top, path)
        finally:
            os.close(top)
        try:
            os.rmdir(path.name, dir_fd=parent)
        except OSError as e:
            log.warning("cannot remove %s: %s", path, e)
    finally:
        os.close(parent)


def _empty(top: int, path: Path) -> None:
    fresh = 0
    progress = True
    while progress:
        progress = False
        with os.scandir(top) as entries:
            names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
        for name, is_dir in names:
            try:
                if not is_dir:
                    os.unlink(name, dir_fd=top)
                    progress = True
                    continue
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
                try:
                    os.fchmod(sub, 0o700)  # a 0500 folder (as a non-root server) could not be emptied
                    with os.scandir(sub) as entries:
                        inner = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                    for child, child_is_dir in inner:
                        if child_is_dir:
                            fresh += 1
                            os.rename(child, f".openenv-flat-{fresh}-{os.getpid()}", src_dir_fd=sub, dst_dir_fd=top)
                        else:
                            os.unlink(child, dir_fd=sub)
                finally:
                    os.close(sub)
                os.rmdir(name, dir_fd=top)
                progress = True
            except FileNotFoundError:
                progress = True
            except OSError as e:
                log.warning("cannot remove %s/%s: %s", path, name, e)


def sweep_stale(base: Path) -> list[Path]:
    """Queue for removal the workspaces (and homes) in ``base`` whose owning server is dead."""
    found = []
    try:
        names = os.listdir(base)
    except OSError:
        return found
    for name in names:
        match = _OWNED.match(name)
        if match is None or owner_alive(match[1], int(match[2]), match[3]):
            continue
        path = base / name
        if path.is_dir() and not path.is_symlink():
            found.append(path)
            _REAPER.put(path)
    return found


class Workspace:
    """One episode's workspace folder, removed on :meth:`remove`.

    The folder is created when :attr:`path` is first read: an episode whose tool
    servers and reward never touch a workspace creates no folder at all (that
    is most of an in-process episode's start cost otherwise).
    """

    _swept: set[tuple[int, str]] = set()
    _swept_lock = threading.Lock()

    def __init__(self, root: Path | None = None, prefix: str = PREFIX) -> None:
        self._root = root
        self._prefix = prefix
        self._path: Path | None = None

    @property
    def created(self) -> bool:
        """Whether the folder exists yet."""
        return self._path is not None

    @property
    def path(self) -> Path:
        """The folder (``0700``, created on first use)."""
        if self._path is None:
            base = self._root or Path(os.environ.get("OPENENV_MCP_WORKDIR", tempfile.gettempdir()))
            base.mkdir(parents=True, exist_ok=True)
            with Workspace._swept_lock:
                first = (os.getpid(), str(base)) not in Workspace._swept
                Workspace._swept.add((os.getpid(), str(base)))
            if first:
                sweep_stale(base)
            self._path = Path(tempfile.mkdtemp(prefix=f"{self._prefix}{owner_tag()}-", dir=base)).resolve()
        return self._path

    def seed(self, *seeds: Path) -> None:
        """Copy each seed folder in order (later ones overwrite earlier files)."""
        for seed in seeds:
            copy_seed(seed, self.path)

    def clear(self) -> None:
        """Empty the folder, keeping it."""
        for child in self.path.iterdir():
            if child.is_dir() and not child.is_symlink():
                remove_tree(child)
            else:
                child.unlink(missing_ok=True)

    def remove(self) -> None:
        """Remove the folder. It is renamed away at once (its path is free and
        nobody can reach its content any more) and deleted by a background thread,
        so a large workspace does not slow ``reset()`` down."""
        if self._path is None:
            return
        trash = self._path.with_name(self._path.name + ".removed")
        try:
            os.rename(self._path, trash)
        except OSError:
            remove_tree(self._path)
            return
        _REAPER.put(trash)


class UserWorkspace(Workspace):
    """The user's own folder in production (``--workspace DIR``): used in place, never
    seeded, emptied nor removed (closing an episode leaves every file as the agent left it).

    Args:
        path: an existing folder; resolved once here, so a link swapped in later
            cannot move the root.
        read_only: the tools may read but not change it (``--read-only``).
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        super().__init__()
        self._path = Path(path).resolve(strict=True)
        self.read_only = read_only

    def seed(self, *seeds: Path) -> None:
        raise RuntimeError("a user's workspace is never seeded")

    def clear(self) -> None:
        raise RuntimeError("a user's workspace is never emptied")

    def remove(self) -> None:
        """Nothing to do: the folder is the user's."""


class _Reaper:
    """One daemon thread deleting removed workspaces; drained at interpreter exit.
    It cannot die: every removal is iterative and its errors are logged."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Path] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, path: Path) -> None:
        self._queue.put(path)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                if self._thread is None:
                    atexit.register(self.drain)
                self._thread = threading.Thread(target=self._run, name="openenv-mcp-reaper", daemon=True)
                self._thread.start()

    @staticmethod
    def _remove(path: Path) -> None:
        try:
            remove_tree(path)
        except Exception as e:  # noqa: BLE001 - the reaper must outlive any one folder
            log.error("could not remove workspace %s: %r", path, e)

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            try:
                self._remove(path)
            finally:
                self._queue.task_done()

    def drain(self) -> None:
        """Delete everything still queued, and wait for the one being deleted (blocking)."""
        while True:
            try:
                path = self._queue.get_nowait()
            except queue.Empty:
                break
            try:
                self._remove(path)
            finally:
                self._queue.task_done()
        self._queue.join()


_REAPER = _Reaper()


def drain_removals() -> None:
    """Delete every removed workspace now (blocking): what a graceful shutdown calls."""
    _REAPER.drain()
