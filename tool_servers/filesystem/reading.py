"""The filesystem tools that only look: ``list``, ``read`` and ``search`` (RE2, linear time).

Each works on a descriptor opened beneath the root (:mod:`.fdpath`), streams what it reads and
stops at its limits; see :mod:`.core` for the guarantees. The tools' bodies are module functions
taking the root and the limits; :func:`reading_tools` binds them under the tools' names.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import re2

from .fdops import Entry, Scan, Special, lines, open_regular, read_at_most, walk
from .fdpath import Root
from .refusals import Refused, parts_of, rel, safe, size_text

__all__ = ["list_folder", "read_file", "reading_tools", "search_files"]

_RO = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY


def reading_tools(tree: Root, cap: dict[str, int]) -> dict[str, Callable[..., str]]:
    """``list``, ``read`` and ``search`` beneath ``tree``, bounded by the limits ``cap``."""

    @safe
    def list_(
        path: str = ".",
        recursive: bool = False,
    ) -> str:
        """List a folder: one entry per line, folders end with '/', files show their size, symlinks their target.

        Entries are sorted by name. Long listings are cut with a marker saying how many entries were left out.
        """
        return list_folder(tree, cap, path, recursive)

    @safe
    def read(
        path: str,
        start_line: int = 1,
        max_lines: int | None = None,
    ) -> str:
        """Read a UTF-8 text file (or a range of its lines), exactly as stored.

        Output longer than the server's cap is cut with a marker giving the next start_line to read from.
        """
        return read_file(tree, cap, path, start_line, max_lines)

    @safe
    def search(
        pattern: str,
        path: str = ".",
        glob: str | None = None,
        regex: bool = False,
        case_sensitive: bool = True,
        max_results: int = 100,
    ) -> str:
        """Find lines containing a pattern across files, like grep -rn: one 'file:line: text' per match.

        Files are visited in name order; binary and very large files are skipped, links are not followed.
        The output ends with a marker when results were cut.
        """
        return search_files(tree, cap, pattern, path, glob, regex, case_sensitive, max_results)

    return {"list": list_, "read": read, "search": search}


def _open(tree: Root, parts: tuple[str, ...], missing: str) -> int:
    """A read-only descriptor of ``parts`` beneath the root; :class:`Refused` with ``missing`` when absent."""
    try:
        return tree.open(parts, _RO)
    except FileNotFoundError:
        raise Refused(missing) from None


# list


def list_folder(tree: Root, cap: dict[str, int], path: str, recursive: bool) -> str:
    """The ``list`` tool: a folder's entries (with ``recursive``, depth first), cut at ``max_list_entries``."""
    parts = parts_of(path)
    fd = _open(tree, parts, f"Folder {path!r} does not exist.")
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise Refused(f"{path!r} is a file, not a folder; use read to see its content.")
        shown, total = _listing(fd, cap, recursive)
    finally:
        os.close(fd)
    if not shown:
        return f"{rel(parts)}/ is empty."
    budget = cap["max_walk_entries"]
    if total >= budget:
        shown.append(f"[... truncated: listing stopped after {budget} entries; list a sub-folder instead ...]")
    elif total > len(shown):
        shown.append(f"[... truncated: {total - len(shown)} more entries not shown; list a sub-folder instead ...]")
    return "\n".join(shown)


def _listing(fd: int, cap: dict[str, int], recursive: bool) -> tuple[list[str], int]:
    """The first ``max_list_entries`` lines of the folder ``fd`` and how many entries the walk met."""
    shown: list[str] = []
    total = 0
    for entry in walk(
        fd, "", recursive=recursive, files_first=False, max_depth=cap["max_depth"], max_entries=cap["max_walk_entries"]
    ):
        total += 1
        if len(shown) < cap["max_list_entries"]:
            shown.append(_entry_line(entry))
    return shown, total


def _entry_line(entry: Entry) -> str:
    """One listing line: a link shows its target (never followed), a folder ends with '/', a file its size."""
    mode = entry.st.st_mode
    if stat.S_ISLNK(mode):
        return f"{entry.rel} -> {os.readlink(entry.name, dir_fd=entry.dirfd)}"
    if stat.S_ISDIR(mode):
        return entry.rel + "/"
    return f"{entry.rel} ({size_text(entry.st.st_size)})"


# read


@dataclass
class _Lines:
    """What :func:`_read_lines` kept of a file: the text asked for (at most one character past the cap),
    its full length, how many lines were seen, and whether the scan budget ran out first."""

    kept: list[str]
    total: int
    count: int
    stopped: bool


def read_file(tree: Root, cap: dict[str, int], path: str, start_line: int, max_lines: int | None) -> str:
    """The ``read`` tool: lines ``start_line``.. of a UTF-8 file, cut at ``max_read_chars`` with a marker."""
    parts = parts_of(path)
    fd = _open(tree, parts, f"File {path!r} does not exist.")
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise Refused(f"{path!r} is a folder, not a file; use list to see its entries.")
        if not stat.S_ISREG(st.st_mode):
            raise Special(path)
        got = _read_lines(fd, st, path, cap, start_line, max_lines)
    finally:
        os.close(fd)
    if (start_line > 1 or max_lines is not None) and start_line > max(got.count, 1):
        raise Refused(_past_the_end(got, st, path, cap, start_line))
    return _cut(got, cap["max_read_chars"], start_line)


def _read_lines(
    fd: int, st: os.stat_result, path: str, cap: dict[str, int], start_line: int, max_lines: int | None
) -> _Lines:
    """Stream the lines asked for, keeping at most one character past the cap and at most the scan budget."""
    limit = cap["max_read_chars"]
    kept: list[str] = []
    held = total = count = 0
    scan = Scan(cap["max_read_scan_bytes"])
    end = None if max_lines is None else start_line + max_lines
    complete = False  # every line asked for was seen whole
    try:
        for head, length in lines(fd, limit + 1, scan):
            count += 1
            if count < start_line:
                continue
            if end is not None and count >= end:
                complete = True
                break
            if held <= limit:
                kept.append(head[: limit + 1 - held])
                held += len(kept[-1])
            total += length
    except UnicodeDecodeError:
        raise Refused(
            f"File {path!r} is not UTF-8 text ({st.st_size} bytes, binary); it cannot be read as text."
        ) from None
    return _Lines(kept, total, count, scan.exhausted and not complete)


def _past_the_end(got: _Lines, st: os.stat_result, path: str, cap: dict[str, int], start_line: int) -> str:
    """The refusal for a ``start_line`` past the file's end (or past all that the scan budget reached)."""
    if got.stopped:
        return (
            f"start_line {start_line} is past the first {got.count} lines of {path!r}, all that "
            f"read scans ({cap['max_read_scan_bytes']} bytes); the file is {st.st_size} bytes."
        )
    return f"File {path!r} has {got.count} lines; start_line {start_line} is past its end."


def _cut(got: _Lines, limit: int, start_line: int) -> str:
    """The text read, cut at ``limit`` characters with a marker naming the next ``start_line``."""
    out = "".join(got.kept)
    if len(out) > limit or got.stopped:
        cut = out[:limit]
        nxt = start_line + cut.count("\n")
        of = f"at least {got.total}" if got.stopped else f"{got.total}"
        return (
            cut
            + ("" if cut.endswith("\n") else "\n")
            + f"[... truncated: showing {len(cut)} of {of} characters; continue with start_line={nxt} ...]"
        )
    return out


# search


@dataclass
class _Found:
    """The matching lines of a search so far: at most ``limit`` kept (each clipped to ``clip``
    characters), the rest counted; files over ``biggest`` bytes are skipped and counted."""

    rx: Any
    limit: int
    clip: int
    biggest: int
    hits: list[str] = field(default_factory=list)
    more: int = 0
    skipped: int = 0

    def scan(self, fd: int, size: int, name: str) -> None:
        """Look through the file ``fd`` (shown as ``name``); a binary file (a NUL early on) is passed over."""
        if size > self.biggest:
            self.skipped += 1
            return
        raw = read_at_most(fd, self.biggest)
        if len(raw) > self.biggest:
            self.skipped += 1
            return
        if b"\x00" in raw[:8192]:
            return
        for n, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
            if self.rx.search(line):
                self.add(name, n, line)

    def add(self, name: str, n: int, line: str) -> None:
        if len(self.hits) >= self.limit:
            self.more += 1
            return
        if len(line) > self.clip:
            line = line[: self.clip] + " [... line truncated ...]"
        self.hits.append(f"{name}:{n}: {line}")


def search_files(
    tree: Root,
    cap: dict[str, int],
    pattern: str,
    path: str,
    glob: str | None,
    regex: bool,
    case_sensitive: bool,
    max_results: int,
) -> str:
    """The ``search`` tool: ``file:line: text`` for each matching line of a file or a folder's files."""
    if pattern == "":
        raise Refused("pattern is empty; give the text to look for.")
    rx = _compile(pattern, regex, case_sensitive)
    parts = parts_of(path)
    fd = _open(tree, parts, f"{path!r} does not exist.")
    found = _Found(rx, min(max_results, cap["max_search_results"]), cap["max_line_chars"], cap["max_search_file_bytes"])
    stopped = False
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            found.scan(fd, st.st_size, rel(parts))
        elif stat.S_ISDIR(st.st_mode):
            stopped = _search_folder(fd, parts, glob, cap, found)
    finally:
        os.close(fd)
    return _search_text(found, pattern, path, stopped, cap)


def _search_folder(fd: int, parts: tuple[str, ...], glob: str | None, cap: dict[str, int], found: _Found) -> bool:
    """Scan the regular files under the folder ``fd`` (matching ``glob``); whether the entry budget ran out."""
    budget = cap["max_walk_entries"]
    seen = 0
    prefix = "/".join(parts) + "/" if parts else ""
    for entry in walk(fd, prefix, recursive=True, files_first=True, max_depth=cap["max_depth"], max_entries=budget):
        seen += 1
        if not stat.S_ISREG(entry.st.st_mode):
            continue  # folders, links (never followed), pipes, sockets, devices
        if glob is not None and not fnmatch.fnmatchcase(entry.name, glob):
            continue
        try:
            ffd, fst = open_regular(entry.dirfd, entry.name)
        except (OSError, Special):
            continue  # replaced or removed since it was listed
        try:
            found.scan(ffd, fst.st_size, entry.rel)
        finally:
            os.close(ffd)
    return seen >= budget


def _search_text(found: _Found, pattern: str, path: str, stopped: bool, cap: dict[str, int]) -> str:
    """The search's answer: the hits, then a marker for each limit that cut it."""
    if not found.hits:
        out = f"No matches for {pattern!r} in {path!r}."
    else:
        out = "\n".join(found.hits)
        if found.more:
            out += f"\n[... truncated: {found.more} more matching lines not shown; narrow the search with path or glob ...]"
    if found.skipped:
        out += f"\n[{found.skipped} file(s) larger than {found.biggest} bytes skipped]"
    if stopped:
        out += f"\n[search stopped after {cap['max_walk_entries']} entries; narrow it with path or glob]"
    return out


def _compile(pattern: str, regex: bool, case_sensitive: bool) -> Any:
    """An RE2 matcher (linear time) for ``pattern``; Python's own parser gives the error for a bad pattern."""
    if regex:
        try:
            re.compile(pattern)
        except re.error as e:
            raise Refused(f"Invalid regular expression {pattern!r}: {e}.") from None
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = case_sensitive
    options.literal = not regex
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        detail = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise Refused(
            f"Regular expression {pattern!r} is not supported: {detail}. Search matches in linear time "
            "(RE2 syntax), without backreferences or look-around."
        ) from None
