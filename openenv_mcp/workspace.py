"""Per-episode workspaces: a private folder seeded from read-only seed folders."""

from __future__ import annotations

import os
import shutil
import tempfile
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
        shutil.rmtree(self.path, ignore_errors=True)
