"""Tar archives to and from a container (the engine's archive API: nothing needed inside the image).

Reading is bounded: a stream from the engine is read through :class:`Capped`, which stops after a
number of bytes, and members are taken one at a time (``tarfile`` stream mode), so a huge file or
a folder of millions of entries costs at most the cap. Writing builds the archive in memory from
host bytes or a host folder (symlinks kept as links, never followed).
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from openenv_mcp.isolation.host.workspace import BYTECODE_CACHES

__all__ = [
    "Capped",
    "Entry",
    "FileRead",
    "folder_tar",
    "list_entries",
    "read_member",
    "single_file_tar",
    "walk",
]

MAX_FOLDER_BYTES = 256 * 1024 * 1024
"""Largest host folder copied in (tests, solutions, artifacts)."""


class Capped(io.RawIOBase):
    """A file-like view of an iterator of chunks that stops after ``limit`` bytes
    (:attr:`exceeded` says whether it stopped early)."""

    def __init__(self, chunks: Iterable[bytes], limit: int) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._buffer = b""
        self.limit = limit
        self.read_bytes = 0
        self.exceeded = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buffer:
            if self.read_bytes >= self.limit:
                self.exceeded = True
                return 0
            try:
                self._buffer = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buffer), self.limit - self.read_bytes)
        if n <= 0:
            self.exceeded = True
            return 0
        b[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        self.read_bytes += n
        return n


@dataclass
class FileRead:
    """What reading one path gave: a regular file's bytes (``data``), or what else it is."""

    kind: str
    """``file``, ``dir``, ``symlink``, or ``other`` (a device, FIFO, socket)."""
    data: bytes = b""
    size: int = 0
    truncated: bool = False
    link_target: str = ""
    mode: int = 0


def read_member(chunks: Iterable[bytes], limit: int) -> FileRead:
    """The first member of a tar stream (what ``get_archive(path)`` returns for ``path``): its
    bytes up to ``limit`` when it is a regular file."""
    stream = Capped(chunks, limit + 64 * 1024)
    with tarfile.open(fileobj=io.BufferedReader(stream, 65536), mode="r|") as tar:
        member = tar.next()
        if member is None:
            return FileRead(kind="other")
        if member.issym() or member.islnk():
            return FileRead(kind="symlink", link_target=member.linkname, mode=member.mode)
        if member.isdir():
            return FileRead(kind="dir", mode=member.mode)
        if not member.isfile():
            return FileRead(kind="other", mode=member.mode)
        handle = tar.extractfile(member)
        assert handle is not None  # a regular file always has a payload
        data = handle.read(limit)
        return FileRead(kind="file", data=data, size=member.size, truncated=member.size > limit, mode=member.mode)


@dataclass
class Entry:
    """One entry of a folder listing."""

    path: str
    """Relative to the listed folder."""
    kind: str
    size: int
    mode: int
    link_target: str = ""


def list_entries(
    chunks: Iterable[bytes], *, max_entries: int, max_depth: int, byte_limit: int
) -> tuple[list[Entry], bool]:
    """The entries of a folder's tar stream, up to ``max_depth`` levels below it; whether the
    listing was cut (too many entries, or ``byte_limit`` bytes of archive read)."""
    stream = Capped(chunks, byte_limit)
    out: list[Entry] = []
    cut = False
    try:
        with tarfile.open(fileobj=io.BufferedReader(stream, 65536), mode="r|") as tar:
            root: str | None = None
            for member in tar:
                parts = PurePosixPath(member.name).parts
                if root is None:
                    root = parts[0] if parts else ""
                    continue
                rel = PurePosixPath(*parts[1:]) if len(parts) > 1 else None
                if rel is None or len(rel.parts) > max_depth:
                    continue
                if len(out) >= max_entries:
                    cut = True
                    break
                out.append(Entry(str(rel), _kind(member), member.size, member.mode, member.linkname))
    except (tarfile.ReadError, EOFError):
        cut = True
    return out, cut or stream.exceeded


def _kind(member: tarfile.TarInfo) -> str:
    if member.isdir():
        return "dir"
    if member.issym() or member.islnk():
        return "symlink"
    return "file" if member.isfile() else "other"


def single_file_tar(
    name: str, data: bytes, mode: int = 0o644, uid: int = 0, gid: int = 0, dirs: Iterable[str] = ()
) -> bytes:
    """An archive of one file ``name`` (a path relative to where it is extracted), preceded by
    the folders ``dirs`` (relative too) that must be created first."""
    buf = io.BytesIO()
    now = int(time.time())
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, 0o755, uid, gid, now
            tar.addfile(info)
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.uid, info.gid, info.mtime = len(data), mode, uid, gid, now
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def folder_tar(
    folder: Path,
    arcroot: str,
    *,
    uid: int = 0,
    gid: int = 0,
    exclude: Iterable[str] = (),
    extra: dict[str, Path] | None = None,
    root_mode: int = 0o755,
) -> bytes:
    """An archive of ``folder``'s contents under ``arcroot`` (a relative folder name; ``""``: at
    the top), owned by ``uid:gid``, symlinks kept as links; top-level names in ``exclude`` left
    out; ``extra`` adds host files by their name in ``arcroot``."""
    buf = io.BytesIO()
    total = 0
    skip = set(exclude)
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if arcroot:
            info = tarfile.TarInfo(arcroot)
            info.type, info.mode, info.uid, info.gid, info.mtime = (
                tarfile.DIRTYPE,
                root_mode,
                uid,
                gid,
                int(time.time()),
            )
            tar.addfile(info)
        for path in walk(folder, skip):
            rel = path.relative_to(folder).as_posix()
            total += _add(tar, path, f"{arcroot}/{rel}" if arcroot else rel, uid, gid)
            if total > MAX_FOLDER_BYTES:
                raise ValueError(f"{folder} holds more than {MAX_FOLDER_BYTES >> 20} MiB")
        for name, path in (extra or {}).items():
            _add(tar, path, f"{arcroot}/{name}" if arcroot else name, uid, gid)
    return buf.getvalue()


def walk(folder: Path, skip: set[str]) -> Iterator[Path]:
    """Every path under ``folder`` in a stable order, links not followed; top-level names in ``skip``
    and bytecode caches (at any depth: pip's, in an installed wheel) left out."""
    if not folder.is_dir():
        return
    for root, dirs, files in os.walk(folder, followlinks=False):
        base = Path(root)
        dirs[:] = sorted(d for d in dirs if d not in BYTECODE_CACHES)
        if base == folder:
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for d in dirs:
            if (base / d).is_symlink():
                yield base / d
        dirs[:] = [d for d in dirs if not (base / d).is_symlink()]
        for d in dirs:
            yield base / d
        for f in sorted(files):
            yield base / f


def _add(tar: tarfile.TarFile, path: Path, arcname: str, uid: int, gid: int) -> int:
    st = path.lstat()
    info = tarfile.TarInfo(arcname)
    info.mode, info.uid, info.gid, info.mtime = stat.S_IMODE(st.st_mode), uid, gid, int(st.st_mtime)
    if stat.S_ISLNK(st.st_mode):
        info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
        tar.addfile(info)
        return 0
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        return 0
    if not stat.S_ISREG(st.st_mode):
        return 0  # FIFOs, sockets, devices are not copied
    info.size = st.st_size
    with path.open("rb") as handle:
        tar.addfile(info, handle)
    return st.st_size
