"""Per-episode workspaces: a private folder seeded from read-only seed folders."""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = ["Workspace", "copy_seed"]


def copy_seed(seed: Path, dest: Path) -> None:
    """Copy the tree ``seed`` into ``dest`` (merging), links kept as links."""
    shutil.copytree(seed, dest, symlinks=True, dirs_exist_ok=True)


class Workspace:
    """One episode's workspace folder, removed on :meth:`remove`."""

    def __init__(self, root: Path | None = None, prefix: str = "openenv-mcp-") -> None:
        base = root or Path(os.environ.get("OPENENV_MCP_WORKDIR", tempfile.gettempdir()))
        base.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=base)).resolve()

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
        trash = self.path.with_name(self.path.name + ".removed")
        try:
            os.rename(self.path, trash)
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        _REAPER.put(trash)


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
