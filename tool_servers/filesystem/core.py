"""The filesystem tool server's core (no MCP imports): list, read, write, edit, move, delete, search.

Every path an agent gives is relative to one root folder (the episode's
workspace, or ``--root`` when run standalone) and is opened relative to a
descriptor of that folder, never by host path (:mod:`.fdpath`: ``openat2``
with ``RESOLVE_BENEATH``, or a component-by-component ``O_NOFOLLOW`` walk).
A path that leads outside the root (``..``, an absolute path, a symlink or a
symlinked folder pointing out) is refused with :data:`OUTSIDE` naming the path,
and no race (a folder swapped for a symlink while a call runs) can make it
touch anything outside: what was checked is the descriptor that is used.
FIFOs, sockets and devices are refused (opened non-blocking, checked with
``fstat``). Files and folders the server creates can be handed to an owner
(``fchown`` on the new descriptor), never by name.

Every call is bounded: reads stream and stop at what they return, edits
compute the result's size before building it, walks are iterative with a
depth and an entry budget, and regular-expression search runs on RE2 (linear
time: no pattern makes it backtrack for minutes). The tools are plain
functions, so an in-process host runs them off its event loop.

Outputs never contain the root's host path, so two episodes seeded alike see
byte-identical results (the parity test relies on it).
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import os
import re
import stat
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import re2

from .fdops import Scan, Special, count_tree, lines, open_regular, read_at_most, remove_tree, walk, write_whole
from .fdpath import Outside, Root, split

__all__ = ["DEFAULT_LIMITS", "INSTRUCTIONS", "NOT_REGULAR", "OUTSIDE", "Refused", "make_tools", "root_of"]

OUTSIDE = "Access denied: path {path!r} is outside the workspace. Use a path relative to the workspace root, such as 'notes.txt' or 'src/app.py'."
"""The refusal for any path that resolves outside the root (``.format(path=...)``)."""

NOT_REGULAR = "{path!r} is not a regular file (a pipe, socket or device); it cannot be opened."
"""The refusal for FIFOs, sockets and devices (``.format(path=...)``)."""

DEFAULT_LIMITS: dict[str, int] = {
    "max_read_chars": 100_000,  # read: characters returned before the cut marker
    "max_read_scan_bytes": 64_000_000,  # read: bytes scanned at most to find and measure the lines asked for
    "max_write_chars": 5_000_000,  # write/edit: largest file content accepted
    "max_list_entries": 1_000,  # list: entries shown before the cut marker
    "max_walk_entries": 100_000,  # list/search: entries visited at most
    "max_depth": 64,  # list/search: folders deeper than this are not entered
    "max_search_results": 200,  # search: matching lines shown at most
    "max_search_file_bytes": 2_000_000,  # search: larger files are skipped (and counted)
    "max_line_chars": 300,  # search: a matching line is clipped to this
}

INSTRUCTIONS = (
    "Files of one workspace folder. Every path is relative to the workspace root "
    "('.' is the root); paths leading outside it are refused. Use `list` to look around, "
    "`read` to see a file, `edit` for small exact replacements, `write` to create or "
    "overwrite, `search` to find text across files."
)

_RO = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY


class Refused(Exception):
    """A tool call refused with a message for the agent (FastMCP's ``ToolError`` twin)."""


def _parts(path: Any) -> tuple[str, ...]:
    if not isinstance(path, str):
        raise Refused(f"Path must be a string, got {type(path).__name__}.")
    try:
        return split(path)
    except Outside:
        raise Refused(OUTSIDE.format(path=path)) from None
    except ValueError as e:
        raise Refused(str(e)) from None


def _rel(parts: tuple[str, ...]) -> str:
    """How the agent should name a path: relative to the root, ``/``-separated."""
    return "/".join(parts) or "."


def _text(raw: bytes, size: int, path: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"File {path!r} is not UTF-8 text ({size} bytes, binary); it cannot be read as text.") from None


def _safe(fn: Callable[..., str]) -> Callable[..., str]:
    """Turn an operating-system error into a tool error naming the agent's path, never a host path."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        what = kwargs.get("path", kwargs.get("source", ""))
        try:
            return fn(*args, **kwargs)
        except Outside:
            raise Refused(OUTSIDE.format(path=what)) from None
        except Special:
            raise Refused(NOT_REGULAR.format(path=what)) from None
        except OSError as e:
            if e.errno == errno.ENXIO:  # a socket, a FIFO nobody reads, a device without a driver
                raise Refused(NOT_REGULAR.format(path=what)) from None
            reason = e.strerror or type(e).__name__
            raise Refused(f"{fn.__name__.rstrip('_')} failed for {what!r}: {reason}.") from None

    return wrapper


def _size(n: int) -> str:
    return f"{n} byte" if n == 1 else f"{n} bytes"


def root_of(ctx: Any) -> Path:
    """The root folder of ``ctx`` (a ServerContext's ``workspace``, or a path), checked to be a folder."""
    where = getattr(ctx, "workspace", ctx)
    root = Path(os.path.realpath(Path(where).expanduser()))
    if not root.is_dir():
        raise NotADirectoryError(f"filesystem root {str(root)!r} is not a directory; create it or pass another --root")
    return root


def make_tools(ctx: Any, *, owner: tuple[int, int] | str | None = None, **limits: int) -> dict[str, Callable[..., str]]:
    """The seven tools for the root folder of ``ctx``, as plain functions raising :class:`Refused`.

    Args:
        ctx: an :class:`openenv_mcp.isolation.ServerContext` (its ``workspace``
            is the root) or a plain path (``str`` / ``Path``).
        owner: ``(uid, gid)`` to give every file and folder the tools create (by
            ``fchown`` on the new descriptor, never by name); ``"root"`` for the
            workspace folder's owner at that moment; ``None`` leaves them to the
            server's user.
        **limits: overrides of :data:`DEFAULT_LIMITS` (e.g. ``max_read_chars=1000``).
    """
    unknown = set(limits) - set(DEFAULT_LIMITS)
    if unknown:
        raise TypeError(f"unknown limit(s) {sorted(unknown)}; known: {sorted(DEFAULT_LIMITS)}")
    cap = {**DEFAULT_LIMITS, **limits}
    tree = Root(str(root_of(ctx)), owner=owner)

    @_safe
    def list_(
        path: str = ".",
        recursive: bool = False,
    ) -> str:
        """List a folder: one entry per line, folders end with '/', files show their size, symlinks their target.

        Entries are sorted by name. Long listings are cut with a marker saying how many entries were left out.
        """
        parts = _parts(path)
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
                    shown.append(f"{entry.rel} ({_size(entry.st.st_size)})")
        finally:
            os.close(fd)
        if not shown:
            return f"{_rel(parts)}/ is empty."
        if total >= budget:
            shown.append(f"[... truncated: listing stopped after {budget} entries; list a sub-folder instead ...]")
        elif total > len(shown):
            shown.append(f"[... truncated: {total - len(shown)} more entries not shown; list a sub-folder instead ...]")
        return "\n".join(shown)

    @_safe
    def read(
        path: str,
        start_line: int = 1,
        max_lines: int | None = None,
    ) -> str:
        """Read a UTF-8 text file (or a range of its lines), exactly as stored.

        Output longer than the server's cap is cut with a marker giving the next start_line to read from.
        """
        parts = _parts(path)
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

    @_safe
    def write(
        path: str,
        content: str,
    ) -> str:
        """Create a file or replace its whole content. For small changes to an existing file prefer edit."""
        parts = _parts(path)
        if not parts:
            raise Refused(f"{path!r} is a folder; give a file path.")
        if len(content) > cap["max_write_chars"]:
            raise Refused(f"Content is {len(content)} characters; the limit is {cap['max_write_chars']}.")
        data = content.encode("utf-8")
        with tree.fd() as top:
            try:
                fd = tree.open_at(top, parts, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
                existed = True
            except IsADirectoryError:
                raise Refused(f"{path!r} is a folder; give a file path.") from None
            except FileNotFoundError:
                parent = tree.parent(top, parts, create=True)
                try:
                    fd = tree.create(parent, parts[-1], os.O_WRONLY | os.O_NONBLOCK)
                except FileExistsError:
                    raise Refused(
                        f"{path!r} is a link to a missing file or appeared meanwhile; nothing was written. "
                        "Write to the file's own path."
                    ) from None
                finally:
                    os.close(parent)
                existed = False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise Special(path)
            write_whole(fd, data)
        finally:
            os.close(fd)
        return f"{'Overwrote' if existed else 'Created'} {_rel(parts)} ({_size(len(data))})."

    @_safe
    def edit(
        path: str,
        old_text: str,
        new_text: str,
        replace_all: bool = False,
    ) -> str:
        """Replace an exact substring of a text file. Fails, changing nothing, if old_text is not found or is ambiguous."""
        parts = _parts(path)
        try:
            fd = tree.open(parts, os.O_RDWR | os.O_NONBLOCK | os.O_NOCTTY)
        except FileNotFoundError:
            raise Refused(f"File {path!r} does not exist; use write to create it.") from None
        except IsADirectoryError:
            raise Refused(f"{path!r} is a folder, not a file.") from None
        limit = cap["max_write_chars"]
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Special(path)
            if old_text == "":
                raise Refused("old_text is empty; give the exact text to replace (use write to replace a whole file).")
            if st.st_size > 4 * limit:  # more bytes than any text of `limit` characters (sparse files included)
                raise Refused(
                    f"File {path!r} is {st.st_size} bytes; edit changes files of at most {limit} "
                    "characters. Use write to replace it."
                )
            raw = read_at_most(fd, 4 * limit)
            text = _text(raw, len(raw), path)
            del raw
            count = text.count(old_text)
            if count == 0:
                raise Refused(
                    f"old_text not found in {path!r}; nothing changed. Read the file and copy the text exactly."
                )
            if count > 1 and not replace_all:
                raise Refused(
                    f"old_text occurs {count} times in {path!r}; nothing changed. "
                    "Include more surrounding text to make it unique, or set replace_all to true."
                )
            size = len(text) + count * (len(new_text) - len(old_text))  # known before anything is built
            if size > limit:
                raise Refused(f"The result would be {size} characters; the limit is {limit}.")
            data = text.replace(old_text, new_text).encode("utf-8")
            del text
            os.lseek(fd, 0, os.SEEK_SET)
            write_whole(fd, data)
        finally:
            os.close(fd)
        return f"Replaced {count} occurrence{'s' if count > 1 else ''} in {_rel(parts)}."

    def _check(parts: tuple[str, ...], path: str) -> None:
        """Refuse a path whose resolution (inner links followed) leads out of the root."""
        try:
            os.close(tree.open(parts, os.O_PATH))
        except Outside:
            raise Refused(OUTSIDE.format(path=path)) from None
        except OSError:
            pass  # missing or odd: the operation itself reports it

    @_safe
    def move(
        source: str,
        destination: str,
        overwrite: bool = False,
    ) -> str:
        """Move or rename a file or folder inside the workspace."""
        src, dst = _parts(source), _parts(destination)
        _check(src, source)
        _check(dst, destination)
        if not src:
            raise Refused("The workspace root itself cannot be moved.")
        if not dst:
            raise Refused(
                f"Destination {destination!r} is an existing folder; give the full new path, "
                f"e.g. {(destination.rstrip('/') + '/' + src[-1])!r}."
            )
        if dst == src:
            raise Refused(f"Source and destination are the same path ({source!r}).")
        if dst[: len(src)] == src:
            raise Refused(f"Cannot move folder {source!r} into itself ({destination!r}).")
        with tree.fd() as top, ExitStack() as fds:
            try:
                sdir = tree.parent(top, src)
                fds.callback(os.close, sdir)
                sst = os.stat(src[-1], dir_fd=sdir, follow_symlinks=False)
            except FileNotFoundError:
                raise Refused(f"Source {source!r} does not exist.") from None
            ddir: int | None = None  # the destination's folder, once it exists
            dst_st: os.stat_result | None = None
            try:
                ddir = tree.parent(top, dst)
                fds.callback(os.close, ddir)
                dst_st = os.stat(dst[-1], dir_fd=ddir, follow_symlinks=False)
            except FileNotFoundError:
                pass
            if dst_st is not None:
                if stat.S_ISDIR(dst_st.st_mode):
                    raise Refused(
                        f"Destination {destination!r} is an existing folder; give the full new path, "
                        f"e.g. {(destination.rstrip('/') + '/' + src[-1])!r}."
                    )
                if not overwrite:
                    raise Refused(f"Destination {destination!r} already exists; set overwrite to true to replace it.")
                if stat.S_ISDIR(sst.st_mode):
                    raise Refused(f"Cannot replace file {destination!r} with folder {source!r}.")
            elif ddir is None:
                try:
                    ddir = tree.parent(top, dst, create=True)
                except Outside:
                    raise Refused(OUTSIDE.format(path=destination)) from None
                fds.callback(os.close, ddir)
            os.rename(src[-1], dst[-1], src_dir_fd=sdir, dst_dir_fd=ddir)
        return f"Moved {_rel(src)} -> {_rel(dst)}."

    @_safe
    def delete(
        path: str,
        recursive: bool = False,
    ) -> str:
        """Delete a file, an empty folder, or (with recursive) a folder and everything in it. There is no undo."""
        parts = _parts(path)
        _check(parts, path)
        if not parts:
            raise Refused("The workspace root itself cannot be deleted; delete the entries inside it.")
        with tree.fd() as top:
            try:
                pfd = tree.parent(top, parts)
            except FileNotFoundError:
                raise Refused(f"{path!r} does not exist.") from None
        try:
            try:
                st = os.stat(parts[-1], dir_fd=pfd, follow_symlinks=False)
            except FileNotFoundError:
                raise Refused(f"{path!r} does not exist.") from None
            if not stat.S_ISDIR(st.st_mode):  # a file, a link (never its target), a pipe...
                os.unlink(parts[-1], dir_fd=pfd)
                return f"Deleted {_rel(parts)}."
            entries = count_tree(pfd, parts[-1])
            if entries and not recursive:
                raise Refused(
                    f"Folder {path!r} is not empty ({entries} entries); set recursive to true to delete it with its contents."
                )
            remove_tree(pfd, parts[-1])
        finally:
            os.close(pfd)
        return f"Deleted folder {_rel(parts)}" + (f" and {entries} entries in it." if entries else ".")

    @_safe
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
        parts = _parts(path)
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
                scan(fd, st.st_size, _rel(parts))
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

    tools = {
        "list": list_,
        "read": read,
        "write": write,
        "edit": edit,
        "move": move,
        "delete": delete,
        "search": search,
    }
    if getattr(ctx, "read_only", False):  # production --read-only: same tools, changes refused
        for name in CHANGING_TOOLS:
            tools[name] = _refusing(tools[name], name)
    return tools


CHANGING_TOOLS = ("write", "edit", "move", "delete")
"""Tools that change the folder (refused on a read-only workspace)."""

READ_ONLY = "The workspace is read-only: {tool} cannot change it; nothing was changed."


def _refusing(fn: Callable[..., str], name: str) -> Callable[..., str]:
    @functools.wraps(fn)
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise Refused(READ_ONLY.format(tool=name))

    return refuse


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
