"""The workspace filesystem tool server: list, read, write, edit, move, delete, search.

Every path an agent gives is relative to one root folder (the episode's
workspace, or ``--root`` when run standalone) and is resolved with every
symlink followed; a path that ends up outside the root (``..``, an absolute
path, a symlink or a symlinked folder pointing out) is refused with
:data:`OUTSIDE` naming the path. Outputs are capped and a cut is always marked
with :data:`TRUNCATED`-style text, so the agent knows it did not see everything.

Outputs never contain the root's host path, so two episodes seeded alike see
byte-identical results (the parity test relies on it).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shutil
from pathlib import Path
from typing import Annotated, Any, Awaitable, Callable

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

__all__ = ["DEFAULT_LIMITS", "OUTSIDE", "create_server", "resolve"]

OUTSIDE = "Access denied: path {path!r} is outside the workspace. Use a path relative to the workspace root, such as 'notes.txt' or 'src/app.py'."
"""The refusal for any path that resolves outside the root (``.format(path=...)``)."""

DEFAULT_LIMITS: dict[str, int] = {
    "max_read_chars": 100_000,   # read: characters returned before the cut marker
    "max_write_chars": 5_000_000,  # write/edit: largest file content accepted
    "max_list_entries": 1_000,   # list: entries shown before the cut marker
    "max_search_results": 200,   # search: matching lines shown at most
    "max_search_file_bytes": 2_000_000,  # search: larger files are skipped (and counted)
    "max_line_chars": 300,       # search: a matching line is clipped to this
}


def resolve(root: Path, path: str) -> Path:
    """``path`` (relative to ``root``) as a real path inside ``root``, or :class:`ToolError`.

    Symlinks are followed (also dangling ones and symlinked parent folders);
    the result must be ``root`` itself or below it.
    """
    if not isinstance(path, str) or path.strip() == "":
        raise ToolError("Path is empty: give a path relative to the workspace root, such as '.' or 'notes.txt'.")
    if "\x00" in path:
        raise ToolError(f"Path {path!r} contains a NUL byte.")
    if os.path.isabs(path) or path.startswith("~"):
        raise ToolError(OUTSIDE.format(path=path))
    real = Path(os.path.realpath(root / path))
    if real != root and root not in real.parents:
        raise ToolError(OUTSIDE.format(path=path))
    return real


def _rel(root: Path, real: Path) -> str:
    """How the agent should name ``real``: relative to the root, ``/``-separated."""
    rel = real.relative_to(root).as_posix()
    return rel or "."


def _text(raw: bytes, path: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"File {path!r} is not UTF-8 text ({len(raw)} bytes, binary); it cannot be read as text.") from None


def _regular(real: Path, path: str) -> None:
    """Refuse FIFOs, sockets and devices: reading or writing them could block the server."""
    if real.exists() and not real.is_file() and not real.is_dir():
        raise ToolError(f"{path!r} is not a regular file (a pipe, socket or device); it cannot be opened.")


def _safe(fn: Callable[..., Awaitable[str]]) -> Callable[..., Awaitable[str]]:
    """Turn an operating-system error into a tool error naming the agent's path, never a host path."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            return await fn(*args, **kwargs)
        except OSError as e:
            what = kwargs.get("path", kwargs.get("source", ""))
            reason = e.strerror or type(e).__name__
            raise ToolError(f"{fn.__name__.rstrip('_')} failed for {what!r}: {reason}.") from None

    return wrapper


def _size(n: int) -> str:
    return f"{n} byte" if n == 1 else f"{n} bytes"


def create_server(ctx: Any, **limits: int) -> FastMCP:
    """A FastMCP filesystem server rooted at ``ctx.workspace``.

    Args:
        ctx: an :class:`openenv_mcp.isolation.ServerContext` (its ``workspace``
            is the root) or a plain path (``str`` / ``Path``).
        **limits: overrides of :data:`DEFAULT_LIMITS` (e.g. ``max_read_chars=1000``).
    """
    unknown = set(limits) - set(DEFAULT_LIMITS)
    if unknown:
        raise TypeError(f"unknown limit(s) {sorted(unknown)}; known: {sorted(DEFAULT_LIMITS)}")
    cap = {**DEFAULT_LIMITS, **limits}
    where = getattr(ctx, "workspace", ctx)
    root = Path(os.path.realpath(Path(where).expanduser()))
    if not root.is_dir():
        raise NotADirectoryError(f"filesystem root {str(root)!r} is not a directory; create it or pass another --root")

    server = FastMCP(
        "filesystem",
        instructions=(
            "Files of one workspace folder. Every path is relative to the workspace root "
            "('.' is the root); paths leading outside it are refused. Use `list` to look around, "
            "`read` to see a file, `edit` for small exact replacements, `write` to create or "
            "overwrite, `search` to find text across files."
        ),
    )

    @server.tool(name="list", output_schema=None)
    @_safe
    async def list_(
        path: Annotated[str, Field(description="Folder to list, relative to the workspace root ('.' for the root).")] = ".",
        recursive: Annotated[bool, Field(description="Also list every sub-folder's contents (depth first).")] = False,
    ) -> str:
        """List a folder: one entry per line, folders end with '/', files show their size, symlinks their target.

        Entries are sorted by name. Long listings are cut with a marker saying how many entries were left out.
        """
        real = resolve(root, path)
        if not real.exists():
            raise ToolError(f"Folder {path!r} does not exist.")
        if not real.is_dir():
            raise ToolError(f"{path!r} is a file, not a folder; use read to see its content.")
        lines: list[str] = []
        total = 0

        def walk(folder: Path, prefix: str) -> None:
            nonlocal total
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                total += 1
                name = prefix + entry.name
                if entry.is_symlink():
                    text = f"{name} -> {os.readlink(entry.path)}"
                elif entry.is_dir():
                    text = name + "/"
                else:
                    text = f"{name} ({_size(entry.stat().st_size)})"
                if len(lines) < cap["max_list_entries"]:
                    lines.append(text)
                if recursive and entry.is_dir(follow_symlinks=False):
                    walk(Path(entry.path), name + "/")

        walk(real, "")
        if not lines:
            return f"{_rel(root, real)}/ is empty."
        if total > len(lines):
            lines.append(f"[... truncated: {total - len(lines)} more entries not shown; list a sub-folder instead ...]")
        return "\n".join(lines)

    @server.tool(name="read", output_schema=None)
    @_safe
    async def read(
        path: Annotated[str, Field(description="File to read, relative to the workspace root.")],
        start_line: Annotated[int, Field(ge=1, description="First line to return (1-based).")] = 1,
        max_lines: Annotated[int | None, Field(ge=1, description="Return at most this many lines (default: to the end).")] = None,
    ) -> str:
        """Read a UTF-8 text file (or a range of its lines), exactly as stored.

        Output longer than the server's cap is cut with a marker giving the next start_line to read from.
        """
        real = resolve(root, path)
        if not real.exists():
            raise ToolError(f"File {path!r} does not exist.")
        if real.is_dir():
            raise ToolError(f"{path!r} is a folder, not a file; use list to see its entries.")
        _regular(real, path)
        text = _text(real.read_bytes(), path)
        lines = text.splitlines(keepends=True)
        if start_line > 1 or max_lines is not None:
            if start_line > max(len(lines), 1):
                raise ToolError(f"File {path!r} has {len(lines)} lines; start_line {start_line} is past its end.")
            end = len(lines) if max_lines is None else start_line - 1 + max_lines
            selected = lines[start_line - 1:end]
        else:
            selected = lines
        out = "".join(selected)
        limit = cap["max_read_chars"]
        if len(out) > limit:
            kept = out[:limit]
            shown = kept.count("\n")
            nxt = start_line + shown
            return (kept + ("" if kept.endswith("\n") else "\n")
                    + f"[... truncated: showing {limit} of {len(out)} characters; "
                      f"continue with start_line={nxt} ...]")
        return out

    @server.tool(name="write", output_schema=None)
    @_safe
    async def write(
        path: Annotated[str, Field(description="File to create or overwrite, relative to the workspace root. Missing parent folders are created.")],
        content: Annotated[str, Field(description="The complete new content of the file (UTF-8 text).")],
    ) -> str:
        """Create a file or replace its whole content. For small changes to an existing file prefer edit."""
        real = resolve(root, path)
        if real.is_dir():
            raise ToolError(f"{path!r} is a folder; give a file path.")
        _regular(real, path)
        if len(content) > cap["max_write_chars"]:
            raise ToolError(f"Content is {len(content)} characters; the limit is {cap['max_write_chars']}.")
        existed = real.exists()
        real.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8")
        real.write_bytes(data)
        return f"{'Overwrote' if existed else 'Created'} {_rel(root, real)} ({_size(len(data))})."

    @server.tool(name="edit", output_schema=None)
    @_safe
    async def edit(
        path: Annotated[str, Field(description="File to change, relative to the workspace root.")],
        old_text: Annotated[str, Field(description="Exact text to replace (whitespace and newlines included). Must occur exactly once unless replace_all is true; include surrounding lines to make it unique.")],
        new_text: Annotated[str, Field(description="Text to put in its place (may be empty to delete).")],
        replace_all: Annotated[bool, Field(description="Replace every occurrence instead of requiring exactly one.")] = False,
    ) -> str:
        """Replace an exact substring of a text file. Fails, changing nothing, if old_text is not found or is ambiguous."""
        real = resolve(root, path)
        if not real.exists():
            raise ToolError(f"File {path!r} does not exist; use write to create it.")
        if real.is_dir():
            raise ToolError(f"{path!r} is a folder, not a file.")
        _regular(real, path)
        if old_text == "":
            raise ToolError("old_text is empty; give the exact text to replace (use write to replace a whole file).")
        text = _text(real.read_bytes(), path)
        count = text.count(old_text)
        if count == 0:
            raise ToolError(f"old_text not found in {path!r}; nothing changed. Read the file and copy the text exactly.")
        if count > 1 and not replace_all:
            raise ToolError(f"old_text occurs {count} times in {path!r}; nothing changed. "
                            "Include more surrounding text to make it unique, or set replace_all to true.")
        new = text.replace(old_text, new_text)
        if len(new) > cap["max_write_chars"]:
            raise ToolError(f"The result would be {len(new)} characters; the limit is {cap['max_write_chars']}.")
        real.write_bytes(new.encode("utf-8"))
        return f"Replaced {count} occurrence{'s' if count > 1 else ''} in {_rel(root, real)}."

    @server.tool(name="move", output_schema=None)
    @_safe
    async def move(
        source: Annotated[str, Field(description="File or folder to move or rename, relative to the workspace root.")],
        destination: Annotated[str, Field(description="Its new path (including the new name), relative to the workspace root. Missing parent folders are created.")],
        overwrite: Annotated[bool, Field(description="Replace an existing destination file.")] = False,
    ) -> str:
        """Move or rename a file or folder inside the workspace."""
        src = resolve(root, source)
        # The link itself moves, not its target: resolve the parent, keep the name.
        if os.path.islink(root / source):
            src = resolve(root, os.path.dirname(source) or ".") / Path(source).name
        dst = resolve(root, destination)
        if not os.path.lexists(src):
            raise ToolError(f"Source {source!r} does not exist.")
        if src == root:
            raise ToolError("The workspace root itself cannot be moved.")
        if dst == src:
            raise ToolError(f"Source and destination are the same path ({source!r}).")
        if src in dst.parents:
            raise ToolError(f"Cannot move folder {source!r} into itself ({destination!r}).")
        if os.path.lexists(dst):
            if dst.is_dir():
                raise ToolError(f"Destination {destination!r} is an existing folder; give the full new path, "
                                f"e.g. {(destination.rstrip('/') + '/' + Path(source).name)!r}.")
            if not overwrite:
                raise ToolError(f"Destination {destination!r} already exists; set overwrite to true to replace it.")
            if src.is_dir():
                raise ToolError(f"Cannot replace file {destination!r} with folder {source!r}.")
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)
        return f"Moved {_rel(root, src)} -> {_rel(root, dst)}."

    @server.tool(name="delete", output_schema=None)
    @_safe
    async def delete(
        path: Annotated[str, Field(description="File or folder to delete, relative to the workspace root.")],
        recursive: Annotated[bool, Field(description="Required to delete a folder that is not empty (deletes everything in it).")] = False,
    ) -> str:
        """Delete a file, an empty folder, or (with recursive) a folder and everything in it. There is no undo."""
        real = resolve(root, path)
        link = os.path.islink(root / path)
        if link:  # delete the link, never what it points to
            real = resolve(root, os.path.dirname(path) or ".") / Path(path).name
        if real == root:
            raise ToolError("The workspace root itself cannot be deleted; delete the entries inside it.")
        if not os.path.lexists(real):
            raise ToolError(f"{path!r} does not exist.")
        if real.is_dir() and not link:
            entries = sum(1 for _ in real.rglob("*"))
            if entries and not recursive:
                raise ToolError(f"Folder {path!r} is not empty ({entries} entries); set recursive to true to delete it with its contents.")
            shutil.rmtree(real)
            return f"Deleted folder {_rel(root, real)}" + (f" and {entries} entries in it." if entries else ".")
        real.unlink()
        return f"Deleted {_rel(root, real)}."

    @server.tool(name="search", output_schema=None)
    @_safe
    async def search(
        pattern: Annotated[str, Field(description="Text to look for in file contents (a regular expression when regex is true).")],
        path: Annotated[str, Field(description="File or folder to search, relative to the workspace root ('.' for everything).")] = ".",
        glob: Annotated[str | None, Field(description="Only search files whose name matches this glob, e.g. '*.py'.")] = None,
        regex: Annotated[bool, Field(description="Treat pattern as a Python regular expression.")] = False,
        case_sensitive: Annotated[bool, Field(description="Match letter case exactly.")] = True,
        max_results: Annotated[int, Field(ge=1, le=1000, description="Most matching lines to return.")] = 100,
    ) -> str:
        """Find lines containing a pattern across files, like grep -rn: one 'file:line: text' per match.

        Files are visited in name order; binary and very large files are skipped. The output ends with a
        marker when results were cut.
        """
        if pattern == "":
            raise ToolError("pattern is empty; give the text to look for.")
        flags = 0 if case_sensitive else re.IGNORECASE
        try:
            rx = re.compile(pattern if regex else re.escape(pattern), flags)
        except re.error as e:
            raise ToolError(f"Invalid regular expression {pattern!r}: {e}.") from None
        real = resolve(root, path)
        if not real.exists():
            raise ToolError(f"{path!r} does not exist.")
        limit = min(max_results, cap["max_search_results"])
        clip = cap["max_line_chars"]
        files: list[Path]
        if real.is_file():
            files = [real]
        else:
            files = []
            for folder, dirs, names in os.walk(real):
                dirs.sort()
                for name in sorted(names):
                    if glob is None or fnmatch.fnmatchcase(name, glob):
                        files.append(Path(folder) / name)
        hits: list[str] = []
        more = 0
        skipped = 0
        for file in files:
            target = Path(os.path.realpath(file))
            if target != root and root not in target.parents or not target.is_file():
                continue  # a symlink leading out (or nowhere) is never followed
            if target.stat().st_size > cap["max_search_file_bytes"]:
                skipped += 1
                continue
            raw = target.read_bytes()
            if b"\x00" in raw[:8192]:
                continue
            text = raw.decode("utf-8", errors="replace")
            rel = _rel(root, file)
            for n, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    if len(hits) < limit:
                        if len(line) > clip:
                            line = line[:clip] + " [... line truncated ...]"
                        hits.append(f"{rel}:{n}: {line}")
                    else:
                        more += 1
        if not hits:
            out = f"No matches for {pattern!r} in {path!r}."
        else:
            out = "\n".join(hits)
            if more:
                out += f"\n[... truncated: {more} more matching lines not shown; narrow the search with path or glob ...]"
        if skipped:
            out += f"\n[{skipped} file(s) larger than {cap['max_search_file_bytes']} bytes skipped]"
        return out

    return server
