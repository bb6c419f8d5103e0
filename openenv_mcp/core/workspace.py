"""Per-episode workspaces: a private folder seeded from read-only seed folders."""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = ["UserWorkspace", "Workspace", "copy_seed"]


def copy_seed(seed: Path, dest: Path) -> None:
    """Copy the tree ``seed`` into ``dest`` (merging), links kept as links."""
    shutil.copytree(seed, dest, symlinks=True, dirs_exist_ok=True)


class Workspace:
    """One episode's workspace folder, removed on :meth:`remove`.

    The folder is created when :attr:`path` is first read: an episode whose tool
    servers and reward never touch a workspace creates no folder at all (that
    is most of an in-process episode's start cost otherwise).
    """

    def __init__(self, root: Path | None = None, prefix: str = "openenv-mcp-") -> None:
        self._root = root
        self._prefix = prefix
        self._path: Path | None = None

    @property
    def created(self) -> bool:
        """Whether the folder exists yet."""
        return self._path is not None

    @property
    def path(self) -> Path:
        """The folder (created on first use)."""
        if self._path is None:
            base = self._root or Path(os.environ.get("OPENENV_MCP_WORKDIR", tempfile.gettempdir()))
            base.mkdir(parents=True, exist_ok=True)
            self._path = Path(tempfile.mkdtemp(prefix=self._prefix, dir=base)).resolve()
        return self._path

    def seed(self, *seeds: Path) -> None:
        """Copy each seed folder in order (later ones overwrite earlier files)."""
        for seed in seeds:
            copy_seed(seed, self.path)

    def clear(self) -> None:
        """Empty the folder, keeping it."""
        for child in self.path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
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
            shutil.rmtree(self._path, ignore_errors=True)
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
    """One daemon thread deleting removed workspaces; drained at interpreter exit."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Path] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, path: Path) -> None:
        self._queue.put(path)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="openenv-mcp-reaper", daemon=True)
                self._thread.start()
                atexit.register(self.drain)

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            shutil.rmtree(path, ignore_errors=True)
            self._queue.task_done()

    def drain(self) -> None:
        """Delete everything still queued, and wait for the one being deleted (blocking)."""
        while True:
            try:
                path = self._queue.get_nowait()
            except queue.Empty:
                break
            shutil.rmtree(path, ignore_errors=True)
            self._queue.task_done()
        self._queue.join()


_REAPER = _Reaper()
