"""The trajectory file of ``openenv-mcp rollout --out``: appended to, resumed, never emptied.

Every line is one finished episode with its ``key`` (seed, pinned task, sample index).
A run reads the file first: episodes whose key is already there are skipped, so an
interrupted run is completed by running the same command again. Only a truncated last
line (an episode being written when the run died) is cut off; any other line that is
not a trajectory of this environment stops the run with an error and the file is left
exactly as it was.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ConfigError

__all__ = ["TrajectoryFile", "episode_key"]


def episode_key(seed: int | None, task_id: str | None, sample: int = 0) -> str:
    """The key of one planned episode: ``seed=S task=T sample=K`` (``task=*``: the seed picks it)."""
    return f"seed={seed} task={task_id or '*'} sample={sample}"


class TrajectoryFile:
    """A JSONL trajectory file opened for resuming: ``finished`` keys, then :meth:`append`."""

    def __init__(self, path: str | Path, env: str) -> None:
        self.path = Path(path)
        self.env = env
        self.finished: set[str] = set()
        """Keys of the episodes already in the file."""
        self.lines = 0
        """Complete trajectory lines found in the file."""
        self.dropped_bytes = 0
        """Bytes of a truncated last line cut off by :meth:`open`."""
        self._fh: Any = None

    def open(self) -> TrajectoryFile:
        """Read what the file holds, cut a truncated last line off, open it for appending."""
        if self.path.parent and not self.path.parent.is_dir():
            raise ConfigError(f"cannot write {str(self.path)!r}: folder {str(self.path.parent)!r} does not exist")
        if self.path.exists() and not self.path.is_file():
            raise ConfigError(f"cannot write {str(self.path)!r}: it is not a regular file")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            try:  # two runs appending to one file would plan the same episodes twice
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise ConfigError(
                    f"another rollout is writing {str(self.path)!r}; wait for it or give another --out"
                ) from None
            keep = self._read()
            if self.dropped_bytes:
                os.ftruncate(fd, keep)
        except BaseException:
            os.close(fd)
            raise
        self._fh = os.fdopen(fd, "a", encoding="utf-8")
        return self

    def _read(self) -> int:
        """Scan the (locked) file: finished keys; returns the length to keep."""
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        keep = offset = 0
        for n, raw in enumerate(lines, 1):
            end = offset + len(raw) + 1
            last = n == len(lines)
            if raw.strip():
                row = _parse(raw)
                if row is None or (last and not data.endswith(b"\n")):
                    if last:  # an episode being written when the run died
                        break
                    raise ConfigError(
                        f"{self.path}:{n} is not a JSON trajectory line; the file is left as "
                        "it is: give another --out, or remove that line"
                    )
                if row.get("env") != self.env:
                    raise ConfigError(
                        f"{self.path}:{n} is a trajectory of environment {row.get('env')!r}, not "
                        f"{self.env!r}; give another --out"
                    )
                if isinstance(row.get("key"), str):
                    self.finished.add(row["key"])
                self.lines += 1
            keep = min(end, len(data))
            offset = end
        self.dropped_bytes = len(data) - keep
        return keep

    def append(self, line: dict[str, Any]) -> None:
        """Write one trajectory line and flush it (one ``write`` of a whole line)."""
        self._fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._fh.flush()
        if isinstance(line.get("key"), str):
            self.finished.add(line["key"])

    def append_lines(self, lines: list[dict[str, Any]]) -> None:
        """Write several lines (one tree) in one ``write`` and flush them."""
        self._fh.write("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
        self._fh.flush()
        for line in lines:
            if isinstance(line.get("key"), str):
                self.finished.add(line["key"])

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> TrajectoryFile:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        row = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return row if isinstance(row, dict) else None
