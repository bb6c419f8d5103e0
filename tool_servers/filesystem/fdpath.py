"""Race-free path resolution under one root folder, by directory file descriptors.

A path an agent gives is opened relative to a descriptor of the root, never as
a host path: on Linux 5.6+ with ``openat2(RESOLVE_BENEATH)`` (the kernel walks
the path and refuses any step out of the root: ``..`` past it, an absolute
symlink, a relative one climbing out, even while another process renames
folders and links under it), elsewhere with a walk that opens one component at
a time with ``O_NOFOLLOW`` from the previous component's descriptor and
resolves a symlink's text itself, keeping the stack of folders it went
through (so ``..`` can never go above the root). Either way nothing is ever
checked first and opened later by name: what is used is the descriptor the
check produced, so swapping a folder for a symlink between two calls (the
``renameat2(RENAME_EXCHANGE)`` race) gains nothing.

Symlinks that stay inside the root are followed (``inner -> notes.txt`` reads
``notes.txt``); the last component of a path that is created, renamed or
removed is never followed (the link itself is the thing moved or deleted).

No MCP imports: :mod:`.server` turns :class:`Outside` and ``OSError`` into tool errors.
"""

from __future__ import annotations

import ctypes
import errno
import os
import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["HAVE_OPENAT2", "Outside", "Root", "split"]

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437  # the same number on every architecture (new syscall table)
_MAX_LINKS = 40  # what the kernel allows in one path walk


class Outside(Exception):
    """The path leads out of the root (``..``, absolute, a symlink pointing out)."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _openat2(dirfd: int, path: str, flags: int, mode: int = 0) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    raw = path.encode("utf-8", "surrogateescape")
    err = errno.EAGAIN
    for _ in range(16):  # EAGAIN: a rename raced the walk; the kernel asks to try again
        fd = _libc.syscall(
            _SYS_OPENAT2,
            ctypes.c_int(dirfd),
            ctypes.c_char_p(raw),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err != errno.EAGAIN:
            break
    if err == errno.EXDEV:
        raise Outside(path)
    raise OSError(err, os.strerror(err))


def _probe_openat2() -> bool:
    try:
        os.close(_openat2(os.open("/", os.O_PATH | os.O_DIRECTORY), ".", os.O_PATH))
        return True
    except OSError:
        return False
    except Exception:
        return False


HAVE_OPENAT2 = _probe_openat2()
"""Whether this kernel has ``openat2`` (Linux 5.6+); without it :class:`Root` walks component by component."""


def split(path: str) -> tuple[str, ...]:
    """The components of ``path`` after lexical clean-up (``a/./b/../c`` is ``a/c``); ``()`` is the root.

    Raises :class:`Outside` for absolute paths, ``~`` and ``..`` above the root,
    ``ValueError`` for an empty path or a NUL byte.
    """
    if path.strip() == "":
        raise ValueError("Path is empty: give a path relative to the workspace root, such as '.' or 'notes.txt'.")
    if "\x00" in path:
        raise ValueError(f"Path {path!r} contains a NUL byte.")
    if path.startswith("/") or path.startswith("~"):
        raise Outside(path)
    clean = posixpath.normpath(path)
    if clean == ".." or clean.startswith("../"):
        raise Outside(path)
    return () if clean == "." else tuple(clean.split("/"))


class Root:
    """One root folder; every open goes through a descriptor of it.

    Args:
        path: the root folder (trusted: the server created it or was told to use it).
        owner: ``(uid, gid)`` given to every file and folder this object creates
            (``fchown`` on the new descriptor, never by name); ``"root"`` for the
            root folder's owner at the time (when it is not this process's user);
            ``None`` to leave them to this process's user.
        use_openat2: force the kernel resolver on or off (default: on when the kernel has it).
    """

    def __init__(self, path: str, owner: tuple[int, int] | str | None = None, use_openat2: bool | None = None) -> None:
        if owner is not None and owner != "root" and not isinstance(owner, tuple):
            raise ValueError(f"owner must be (uid, gid), 'root' or None, got {owner!r}")
        self.path = path
        self.owner = owner
        self.use_openat2 = HAVE_OPENAT2 if use_openat2 is None else use_openat2 and HAVE_OPENAT2

    @contextmanager
    def fd(self) -> Iterator[int]:
        """A descriptor of the root folder, closed at the end of the block."""
        fd = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- opening --------------------------------------------------------------------
    def open(self, parts: tuple[str, ...], flags: int, mode: int = 0o644) -> int:
        """Open ``parts`` (inner symlinks followed, the last one too) with ``flags``."""
        with self.fd() as root:
            return self.open_at(root, parts, flags, mode)

    def open_at(self, root: int, parts: tuple[str, ...], flags: int, mode: int = 0o644) -> int:
        if self.use_openat2:
            return _openat2(root, "/".join(parts) or ".", flags, mode)
        return self._walk(root, list(parts), flags, mode)

    def _walk(self, root: int, pending: list[str], flags: int, mode: int) -> int:
        stack = [os.dup(root)]
        hops = 0
        try:
            while pending:
                name = pending.pop(0)
                if name in ("", "."):
                    continue
                if name == "..":
                    if len(stack) == 1:
                        raise Outside(name)
                    os.close(stack.pop())
                    continue
                here = stack[-1]
                try:
                    st = os.stat(name, dir_fd=here, follow_symlinks=False)
                except FileNotFoundError:
                    if pending:
                        raise
                    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=here)
                if stat.S_ISLNK(st.st_mode):
                    hops += 1
                    if hops > _MAX_LINKS:
                        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                    target = os.readlink(name, dir_fd=here)
                    if target.startswith("/"):
                        raise Outside(name)
                    pending[:0] = target.split("/")
                    continue
                if not pending:
                    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=here)
                # O_NOFOLLOW|O_DIRECTORY: a link swapped in since the stat is refused, not followed
                stack.append(os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=here))
            return os.open(".", flags | os.O_CLOEXEC, dir_fd=stack[-1])
        finally:
            for fd in stack:
                os.close(fd)

    # -- parents and creation -----------------------------------------------------------
    def parent(self, root: int, parts: tuple[str, ...], create: bool = False) -> int:
        """A descriptor (``O_PATH``) of the folder holding ``parts[-1]``; missing folders made when ``create``."""
        try:
            return self.open_at(root, parts[:-1], os.O_PATH | os.O_DIRECTORY)
        except FileNotFoundError:
            if not create:
                raise
        fd = os.dup(root)  # some folder is missing: go one component at a time, making what is missing
        try:
            for i, name in enumerate(parts[:-1]):
                try:
                    nxt = self.open_at(fd, (name,), os.O_PATH | os.O_DIRECTORY)
                except FileNotFoundError:
                    nxt = self.mkdir(fd, name)
                except Outside:
                    raise Outside("/".join(parts[: i + 1])) from None
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def mkdir(self, dirfd: int, name: str) -> int:
        """Create folder ``name`` in ``dirfd`` (given to :attr:`owner`); its descriptor (``O_PATH``)."""
        try:
            os.mkdir(name, 0o755, dir_fd=dirfd)
        except FileExistsError:
            pass  # made meanwhile: use it if it is a folder (never a link: O_NOFOLLOW)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
        try:
            self.give(fd)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def create(self, dirfd: int, name: str, flags: int) -> int:
        """Create a new regular file ``name`` in ``dirfd`` (never through a link; ``FileExistsError`` if present)."""
        fd = os.open(name, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dirfd)
        try:
            self.give(fd)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def give(self, fd: int) -> None:
        """Hand a descriptor this object created to :attr:`owner` (no-op without one)."""
        owner = self.owner
        if owner == "root":
            st = os.stat(self.path)
            owner = None if (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()) else (st.st_uid, st.st_gid)
        if isinstance(owner, tuple):  # (uid, gid); __init__ admits only that, "root" (resolved above) or None
            os.fchown(fd, *owner)
