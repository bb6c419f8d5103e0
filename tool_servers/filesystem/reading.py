"""The filesystem tools that only look: ``list``, ``read`` and ``search`` (RE2, linear time).

Each works on a descriptor opened beneath the root (:mod:`.fdpath`), streams what it reads and
stops at its limits; see :mod:`.core` for the guarantees.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Callable
from typing import Any

import re2

from .fdops import Scan, Special, lines, open_regular, read_at_most, walk
from .fdpath import Root
from .refusals import Refused, parts_of, rel, safe, size_text

__all__ = ["reading_tools"]

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
        parts = parts_of(path)
        try:
            fd = tree.open(parts, _RO)
        except FileNotFoundError:
            raise Refused(f"Folder {path!r} does not exist.") from None
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise Refused(f"{path!r} is a file, not a folder; use read to see its content.")
            shown: list[str] = []
            total = 0
            budget = cap["max_walk_entries"]
            for entry in walk(
                fd, "", recursive=recursive, files_first=False, max_depth=cap["max_depth"], max_entries=budget
            ):
                total += 1
                if len(shown) >= cap["max_list_entries"]:
                    continue
                mode = entry.st.st_mode
                if stat.S_ISLNK(mode):
                    shown.append(f"{entry.rel} -> {os.readlink(entry.name, dir_fd=entry.dirfd)}")
                elif stat.S_ISDIR(mode):
                    shown.append(entry.rel + "/")
                else:
                    shown.append(f"{entry.rel} ({size_text(entry.st.st_size)})")
        finally:
            os.close(fd)
        if not shown:
            return f"{rel(parts)}/ is empty."
        if total >= budget:
            shown.append(f"[... truncated: listing stopped after {budget} entries; list a sub-folder instead ...]")
        elif total > len(shown):
            shown.append(f"[... truncated: {total - len(shown)} more entries not shown; list a sub-folder instead ...]")
        return "\n".join(shown)

    @safe
    def read(
        path: str,
        start_line: int = 1,
        max_lines: int | None = None,
    ) -> str:
        """Read a UTF-8 text file (or a range of its lines), exactly as stored.

        Output longer than the server's cap is cut with a marker giving the next start_line to read from.
        """
        parts = parts_of(path)
        try:
            fd = tree.open(parts, _RO)
        except FileNotFoundError:
            raise Refused(f"File {path!r} does not exist.") from None
        limit = cap["max_read_chars"]
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise Refused(f"{path!r} is a folder, not a file; use list to see its entries.")
            if not stat.S_ISREG(st.st_mode):
                raise Special(path)
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
        finally:
            os.close(fd)
        stopped = scan.exhausted and not complete
        if (start_line > 1 or max_lines is not None) and start_line > max(count, 1):
            if stopped:
                raise Refused(
                    f"start_line {start_line} is past the first {count} lines of {path!r}, all that "
                    f"read scans ({cap['max_read_scan_bytes']} bytes); the file is {st.st_size} bytes."
                )
            raise Refused(f"File {path!r} has {count} lines; start_line {start_line} is past its end.")
        out = "".join(kept)
        if len(out) > limit or stopped:
            cut = out[:limit]
            nxt = start_line + cut.count("\n")
            of = f"at least {total}" if stopped else f"{total}"
            return (
                cut
                + ("" if cut.endswith("\n") else "\n")
                + f"[... truncated: showing {len(cut)} of {of} characters; continue with start_line={nxt} ...]"
            )
        return out

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
        if pattern == "":
            raise Refused("pattern is empty; give the text to look for.")
        rx = _compile(pattern, regex, case_sensitive)
        parts = parts_of(path)
        try:
            fd = tree.open(parts, _RO)
        except FileNotFoundError:
            raise Refused(f"{path!r} does not exist.") from None
        limit = min(max_results, cap["max_search_results"])
        clip, biggest = cap["max_line_chars"], cap["max_search_file_bytes"]
        hits: list[str] = []
        more = skipped = 0
        stopped = False

        def scan(fd: int, size: int, rel: str) -> None:
            nonlocal more, skipped
            if size > biggest:
                skipped += 1
                return
            raw = read_at_most(fd, biggest)
            if len(raw) > biggest:
                skipped += 1
                return
            if b"\x00" in raw[:8192]:
                return
            for n, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), 1):
                if rx.search(line):
                    if len(hits) < limit:
                        if len(line) > clip:
                            line = line[:clip] + " [... line truncated ...]"
                        hits.append(f"{rel}:{n}: {line}")
                    else:
                        more += 1

        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                scan(fd, st.st_size, rel(parts))
            elif stat.S_ISDIR(st.st_mode):
                budget = cap["max_walk_entries"]
                seen = 0
                prefix = "/".join(parts) + "/" if parts else ""
                for entry in walk(
                    fd, prefix, recursive=True, files_first=True, max_depth=cap["max_depth"], max_entries=budget
                ):
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
                        scan(ffd, fst.st_size, entry.rel)
                    finally:
                        os.close(ffd)
                stopped = seen >= budget
        finally:
            os.close(fd)
        if not hits:
            out = f"No matches for {pattern!r} in {path!r}."
        else:
            out = "\n".join(hits)
            if more:
                out += (
                    f"\n[... truncated: {more} more matching lines not shown; narrow the search with path or glob ...]"
                )
        if skipped:
            out += f"\n[{skipped} file(s) larger than {biggest} bytes skipped]"
        if stopped:
            out += f"\n[search stopped after {cap['max_walk_entries']} entries; narrow it with path or glob]"
        return out

    return {"list": list_, "read": read, "search": search}


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
