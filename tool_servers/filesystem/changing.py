"""The filesystem tools that change the folder: ``write``, ``edit``, ``move`` and ``delete``.

New files and folders are created beneath the root by descriptor (and handed to an owner with
``fchown``); edits compute the result's size before building it; see :mod:`.core` for the guarantees.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from .fdops import Special, count_tree, read_at_most, remove_tree, write_whole
from .fdpath import Outside, Root
from .refusals import OUTSIDE, Refused, parts_of, rel, safe, size_text, utf8_text

__all__ = ["CHANGING_TOOLS", "READ_ONLY", "changing_tools", "refusing"]


def changing_tools(tree: Root, cap: dict[str, int]) -> dict[str, Callable[..., str]]:
    """``write``, ``edit``, ``move`` and ``delete`` beneath ``tree``, bounded by the limits ``cap``."""

    @safe
    def write(
        path: str,
        content: str,
    ) -> str:
        """Create a file or replace its whole content. For small changes to an existing file prefer edit."""
        parts = parts_of(path)
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
        return f"{'Overwrote' if existed else 'Created'} {rel(parts)} ({size_text(len(data))})."

    @safe
    def edit(
        path: str,
        old_text: str,
        new_text: str,
        replace_all: bool = False,
    ) -> str:
        """Replace an exact substring of a text file. Fails, changing nothing, if old_text is not found or is ambiguous."""
        parts = parts_of(path)
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
            text = utf8_text(raw, len(raw), path)
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
        return f"Replaced {count} occurrence{'s' if count > 1 else ''} in {rel(parts)}."

    def _check(parts: tuple[str, ...], path: str) -> None:
        """Refuse a path whose resolution (inner links followed) leads out of the root."""
        try:
            os.close(tree.open(parts, os.O_PATH))
        except Outside:
            raise Refused(OUTSIDE.format(path=path)) from None
        except OSError:
            pass  # missing or odd: the operation itself reports it

    @safe
    def move(
        source: str,
        destination: str,
        overwrite: bool = False,
    ) -> str:
        """Move or rename a file or folder inside the workspace."""
        src, dst = parts_of(source), parts_of(destination)
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
        return f"Moved {rel(src)} -> {rel(dst)}."

    @safe
    def delete(
        path: str,
        recursive: bool = False,
    ) -> str:
        """Delete a file, an empty folder, or (with recursive) a folder and everything in it. There is no undo."""
        parts = parts_of(path)
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
                return f"Deleted {rel(parts)}."
            entries = count_tree(pfd, parts[-1])
            if entries and not recursive:
                raise Refused(
                    f"Folder {path!r} is not empty ({entries} entries); set recursive to true to delete it with its contents."
                )
            remove_tree(pfd, parts[-1])
        finally:
            os.close(pfd)
        return f"Deleted folder {rel(parts)}" + (f" and {entries} entries in it." if entries else ".")

    return {"write": write, "edit": edit, "move": move, "delete": delete}


CHANGING_TOOLS = ("write", "edit", "move", "delete")
"""Tools that change the folder (refused on a read-only workspace)."""

READ_ONLY = "The workspace is read-only: {tool} cannot change it; nothing was changed."


def refusing(fn: Callable[..., str], name: str) -> Callable[..., str]:
    @functools.wraps(fn)
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise Refused(READ_ONLY.format(tool=name))

    return refuse
