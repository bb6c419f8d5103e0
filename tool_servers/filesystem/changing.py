"""The filesystem tools that change the folder: ``write``, ``edit``, ``move`` and ``delete``.

New files and folders are created beneath the root by descriptor (and handed to an owner with
``fchown``); edits compute the result's size before building it; see :mod:`.core` for the guarantees.
The tools' bodies are module functions taking the root and the limits; :func:`changing_tools` binds
them under the tools' names.
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

__all__ = [
    "CHANGING_TOOLS",
    "READ_ONLY",
    "changing_tools",
    "delete_entry",
    "edit_file",
    "move_entry",
    "refusing",
    "write_file",
]


def changing_tools(tree: Root, cap: dict[str, int]) -> dict[str, Callable[..., str]]:
    """``write``, ``edit``, ``move`` and ``delete`` beneath ``tree``, bounded by the limits ``cap``."""

    @safe
    def write(
        path: str,
        content: str,
    ) -> str:
        """Create a file or replace its whole content. For small changes to an existing file prefer edit."""
        return write_file(tree, cap, path, content)

    @safe
    def edit(
        path: str,
        old_text: str,
        new_text: str,
        replace_all: bool = False,
    ) -> str:
        """Replace an exact substring of a text file. Fails, changing nothing, if old_text is not found or is ambiguous."""
        return edit_file(tree, cap, path, old_text, new_text, replace_all)

    @safe
    def move(
        source: str,
        destination: str,
        overwrite: bool = False,
    ) -> str:
        """Move or rename a file or folder inside the workspace."""
        return move_entry(tree, source, destination, overwrite)

    @safe
    def delete(
        path: str,
        recursive: bool = False,
    ) -> str:
        """Delete a file, an empty folder, or (with recursive) a folder and everything in it. There is no undo."""
        return delete_entry(tree, path, recursive)

    return {"write": write, "edit": edit, "move": move, "delete": delete}


# write


def write_file(tree: Root, cap: dict[str, int], path: str, content: str) -> str:
    """The ``write`` tool: create or overwrite a regular file (missing parent folders are created)."""
    parts = parts_of(path)
    if not parts:
        raise Refused(f"{path!r} is a folder; give a file path.")
    if len(content) > cap["max_write_chars"]:
        raise Refused(f"Content is {len(content)} characters; the limit is {cap['max_write_chars']}.")
    data = content.encode("utf-8")
    fd, existed = _open_for_write(tree, parts, path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Special(path)
        write_whole(fd, data)
    finally:
        os.close(fd)
    return f"{'Overwrote' if existed else 'Created'} {rel(parts)} ({size_text(len(data))})."


def _open_for_write(tree: Root, parts: tuple[str, ...], path: str) -> tuple[int, bool]:
    """A write descriptor of the file ``parts`` and whether it existed; a new one is created beneath
    its (created) parent, never through a dangling link."""
    with tree.fd() as top:
        try:
            return tree.open_at(top, parts, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY), True
        except IsADirectoryError:
            raise Refused(f"{path!r} is a folder; give a file path.") from None
        except FileNotFoundError:
            pass
        parent = tree.parent(top, parts, create=True)
        try:
            return tree.create(parent, parts[-1], os.O_WRONLY | os.O_NONBLOCK), False
        except FileExistsError:
            raise Refused(
                f"{path!r} is a link to a missing file or appeared meanwhile; nothing was written. "
                "Write to the file's own path."
            ) from None
        finally:
            os.close(parent)


# edit


def edit_file(tree: Root, cap: dict[str, int], path: str, old_text: str, new_text: str, replace_all: bool) -> str:
    """The ``edit`` tool: replace ``old_text`` (once, or every time with ``replace_all``); the result's
    size is checked before it is built, and nothing changes on a refusal."""
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
        text = _editable_text(fd, st, path, limit)
        count = _occurrences(text, old_text, path, replace_all)
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


def _editable_text(fd: int, st: os.stat_result, path: str, limit: int) -> str:
    """The file's UTF-8 text, refused unread when it has more bytes than ``limit`` characters can take."""
    if st.st_size > 4 * limit:  # more bytes than any text of `limit` characters (sparse files included)
        raise Refused(
            f"File {path!r} is {st.st_size} bytes; edit changes files of at most {limit} "
            "characters. Use write to replace it."
        )
    raw = read_at_most(fd, 4 * limit)
    return utf8_text(raw, len(raw), path)


def _occurrences(text: str, old_text: str, path: str, replace_all: bool) -> int:
    """How many times ``old_text`` occurs; refused when never, or more than once without ``replace_all``."""
    count = text.count(old_text)
    if count == 0:
        raise Refused(f"old_text not found in {path!r}; nothing changed. Read the file and copy the text exactly.")
    if count > 1 and not replace_all:
        raise Refused(
            f"old_text occurs {count} times in {path!r}; nothing changed. "
            "Include more surrounding text to make it unique, or set replace_all to true."
        )
    return count


# move


def _check_inside(tree: Root, parts: tuple[str, ...], path: str) -> None:
    """Refuse a path whose resolution (inner links followed) leads out of the root."""
    try:
        os.close(tree.open(parts, os.O_PATH))
    except Outside:
        raise Refused(OUTSIDE.format(path=path)) from None
    except OSError:
        pass  # missing or odd: the operation itself reports it


def _into_folder(destination: str, src: tuple[str, ...]) -> str:
    return (
        f"Destination {destination!r} is an existing folder; give the full new path, "
        f"e.g. {(destination.rstrip('/') + '/' + src[-1])!r}."
    )


def move_entry(tree: Root, source: str, destination: str, overwrite: bool) -> str:
    """The ``move`` tool: rename ``source`` to ``destination`` beneath the root (by descriptors of
    both folders); an existing file is replaced only with ``overwrite``, a folder never."""
    src, dst = parts_of(source), parts_of(destination)
    _check_inside(tree, src, source)
    _check_inside(tree, dst, destination)
    _check_move(src, dst, source, destination)
    with tree.fd() as top, ExitStack() as fds:
        try:
            sdir = tree.parent(top, src)
            fds.callback(os.close, sdir)
            sst = os.stat(src[-1], dir_fd=sdir, follow_symlinks=False)
        except FileNotFoundError:
            raise Refused(f"Source {source!r} does not exist.") from None
        ddir = _destination_folder(tree, top, fds, (src, dst), sst, (source, destination), overwrite)
        os.rename(src[-1], dst[-1], src_dir_fd=sdir, dst_dir_fd=ddir)
    return f"Moved {rel(src)} -> {rel(dst)}."


def _check_move(src: tuple[str, ...], dst: tuple[str, ...], source: str, destination: str) -> None:
    """Refuse moving the root, onto the root, onto itself or into itself."""
    if not src:
        raise Refused("The workspace root itself cannot be moved.")
    if not dst:
        raise Refused(_into_folder(destination, src))
    if dst == src:
        raise Refused(f"Source and destination are the same path ({source!r}).")
    if dst[: len(src)] == src:
        raise Refused(f"Cannot move folder {source!r} into itself ({destination!r}).")


def _destination_folder(
    tree: Root,
    top: int,
    fds: ExitStack,
    parts: tuple[tuple[str, ...], tuple[str, ...]],
    sst: os.stat_result,
    paths: tuple[str, str],
    overwrite: bool,
) -> int | None:
    """A descriptor of the destination's folder (created when missing, closed with ``fds``), after
    refusing an existing destination that may not be replaced."""
    (src, dst), (source, destination) = parts, paths
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
            raise Refused(_into_folder(destination, src))
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
    return ddir


# delete


def delete_entry(tree: Root, path: str, recursive: bool) -> str:
    """The ``delete`` tool: unlink a file or link (never its target), remove an empty folder, or with
    ``recursive`` a folder and everything in it."""
    parts = parts_of(path)
    _check_inside(tree, parts, path)
    if not parts:
        raise Refused("The workspace root itself cannot be deleted; delete the entries inside it.")
    with tree.fd() as top:
        try:
            pfd = tree.parent(top, parts)
        except FileNotFoundError:
            raise Refused(f"{path!r} does not exist.") from None
    try:
        return _delete_in(pfd, parts, path, recursive)
    finally:
        os.close(pfd)


def _delete_in(pfd: int, parts: tuple[str, ...], path: str, recursive: bool) -> str:
    """Delete the entry ``parts[-1]`` of the folder ``pfd``."""
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
    return f"Deleted folder {rel(parts)}" + (f" and {entries} entries in it." if entries else ".")


CHANGING_TOOLS = ("write", "edit", "move", "delete")
"""Tools that change the folder (refused on a read-only workspace)."""

READ_ONLY = "The workspace is read-only: {tool} cannot change it; nothing was changed."


def refusing(fn: Callable[..., str], name: str) -> Callable[..., str]:
    @functools.wraps(fn)
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise Refused(READ_ONLY.format(tool=name))

    return refuse
