"""Bounded work on open descriptors: stream a file's lines, walk a folder, remove a tree.

Everything here takes a descriptor (see :mod:`.fdpath`) and acts on names
relative to it, never following a symlink met on the way, and never holds more
than a bounded amount in memory: a line longer than what is kept is counted,
not stored; a walk is iterative (no recursion limit to hit) and stops at a
depth and an entry count.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "CHUNK",
    "Entry",
    "Scan",
    "Special",
    "count_tree",
    "lines",
    "open_regular",
    "read_at_most",
    "remove_tree",
    "walk",
    "write_whole",
]

CHUNK = 256 * 1024
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits on
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Special(Exception):
    """A FIFO, socket or device where a regular file was expected."""


def open_regular(dirfd: int, name: str, flags: int = os.O_RDONLY) -> tuple[int, os.stat_result]:
    """Open ``name`` in ``dirfd`` without following a link or blocking; refuse anything but a regular file."""
    fd = os.open(name, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dirfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Special(name)
    return fd, st


class Scan:
    """How many bytes :func:`lines` read (to stop a scan at a budget)."""

    def __init__(self, budget: int) -> None:
        self.read, self.budget = 0, budget

    @property
    def exhausted(self) -> bool:
        return self.read >= self.budget


def lines(fd: int, keep: int, scan: Scan) -> Iterator[tuple[str, int]]:
    """The lines of an open file as ``(first keep characters, full length)``, split like ``str.splitlines``.

    Strict UTF-8 (``UnicodeDecodeError`` on bad bytes); stops early when the
    caller stops iterating or when ``scan`` runs out (then the line being read
    is yielded as far as it was read: its length is a lower bound).
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    head, length, hold = "", 0, ""
    while True:
        if scan.exhausted:
            if length:
                yield head, length
            return
        raw = os.read(fd, min(CHUNK, scan.budget - scan.read))
        scan.read += len(raw)
        eof = not raw
        text = hold + decoder.decode(raw, final=eof)
        hold = ""
        if not eof and text.endswith("\r"):  # may be the first half of \r\n
            text, hold = text[:-1], "\r"
        for piece in text.splitlines(keepends=True):
            if len(head) < keep:
                head += piece[: keep - len(head)]
            length += len(piece)
            if piece[-1] in _BREAKS:
                yield head, length
                head, length = "", 0
        if eof:
            if length:
                yield head, length
            return


@dataclass
class Entry:
    """One entry met by :func:`walk`: its path relative to the walk's start and its ``lstat``."""

    rel: str
    name: str
    st: os.stat_result
    dirfd: int  # the folder holding it (valid while the walk is at this entry)


def walk(
    fd: int, prefix: str, *, recursive: bool, files_first: bool, max_depth: int, max_entries: int
) -> Iterator[Entry]:
    """Entries below the open folder ``fd`` in name order, links never followed, without recursion.

    ``files_first`` lists a folder's non-folders before descending (``os.walk``
    order); otherwise each folder is followed at once by its contents (``ls -R``
    order). Stops after ``max_entries`` entries; folders deeper than
    ``max_depth`` are listed but not entered. Raises nothing for an entry that
    vanished meanwhile (it is skipped).
    """
    seen = 0
    stack: list[tuple[int, str, Iterator[str], int]] = []

    def push(dirfd: int, rel: str, depth: int) -> None:
        with os.scandir(dirfd) as it:
            names = sorted(e.name for e in it)
        if files_first:
            kinds = {}
            for n in names:
                try:
                    kinds[n] = stat.S_ISDIR(os.stat(n, dir_fd=dirfd, follow_symlinks=False).st_mode)
                except FileNotFoundError:
                    kinds[n] = False
            names = [n for n in names if not kinds[n]] + [n for n in names if kinds[n]]
        stack.append((dirfd, rel, iter(names), depth))

    first = os.dup(fd)
    try:
        push(first, prefix, 0)
    except BaseException:
        os.close(first)
        raise
    try:
        while stack:
            dirfd, rel, names, depth = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                os.close(dirfd)
                continue
            try:
                st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            seen += 1
            if seen > max_entries:
                return
            yield Entry(rel + name, name, st, dirfd)
            if recursive and stat.S_ISDIR(st.st_mode) and depth < max_depth:
                try:
                    child = os.open(name, _DIR, dir_fd=dirfd)
                except (FileNotFoundError, NotADirectoryError, OSError):
                    continue  # replaced by a link or removed since the stat: not entered
                try:
                    push(child, rel + name + "/", depth + 1)
                except BaseException:
                    os.close(child)
                    raise
    finally:
        for dirfd, *_ in stack:
            os.close(dirfd)


def count_tree(dirfd: int, name: str) -> int:
    """How many entries are below folder ``name`` of ``dirfd`` (links not followed)."""
    fd = os.open(name, _DIR, dir_fd=dirfd)
    try:
        return sum(1 for _ in walk(fd, "", recursive=True, files_first=False, max_depth=1 << 30, max_entries=1 << 62))
    finally:
        os.close(fd)


def remove_tree(dirfd: int, name: str) -> None:
    """Remove folder ``name`` of ``dirfd`` and everything below it: by descriptor, iteratively, no link followed."""
    stack = [(os.open(name, _DIR, dir_fd=dirfd), dirfd, name)]
    try:
        while stack:
            fd, parent, here = stack[-1]
            child = None
            with os.scandir(fd) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        child = e.name
                        break
                    os.unlink(e.name, dir_fd=fd)
            if child is not None:
                stack.append((os.open(child, _DIR, dir_fd=fd), fd, child))
                continue
            stack.pop()
            os.close(fd)
            os.rmdir(here, dir_fd=parent)
    finally:
        for fd, *_ in stack:
            os.close(fd)


def read_at_most(fd: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of an open file (so a caller sees it was longer)."""
    chunks, got = [], 0
    while got <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def write_whole(fd: int, data: bytes) -> None:
    """Make ``data`` the whole content of the open file (written from its current offset: seek first)."""
    os.ftruncate(fd, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
