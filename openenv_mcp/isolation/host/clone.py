"""Copying a live workspace for a fork: a copy-on-write clone where the filesystem allows.

:func:`clone_tree` copies one episode's workspace into another's empty folder so that
the two never share mutable state:

* regular files are cloned with ``FICLONE`` (a reflink: Btrfs, XFS, bcachefs...) and
  copied with ``copy_file_range`` (a plain copy, in the kernel) where that fails; either
  way the copy is a new inode, so a writer holding a file of the original open (a
  background process, an open descriptor) never reaches the copy;
* hard links *inside* the tree stay hard links inside the copy (the copy behaves as the
  original does) and never link across the two trees;
* symbolic links are copied as links, never followed (a link pointing out of the
  workspace stays a link pointing out, as it was; nothing outside is read);
* FIFOs are made again; sockets and device nodes are refused (:class:`CloneError`):
  neither can be copied faithfully, and a fork is never a silent half copy;
* modes and modification times are kept (owners are the boundary's business: a process
  boundary hands the copy to its own uid when the fork's servers start).

Every path is opened relative to a directory descriptor with ``O_NOFOLLOW``: a folder
swapped for a link while the copy runs is refused, never followed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

__all__ = ["CloneError", "clone_tree"]

FICLONE = 0x40049409
"""``ioctl(dest, FICLONE, src)``: share the source's extents, copy on write (linux/fs.h)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 30


class CloneError(OSError):
    """A workspace holds something that cannot be copied (a socket, a device), or copying failed."""


def clone_tree(src: Path, dest: Path) -> None:
    """Copy the content of folder ``src`` into the existing, empty folder ``dest``."""
    src_fd = os.open(src, _DIR_FLAGS)
    try:
        dest_fd = os.open(dest, _DIR_FLAGS)
        try:
            _copy_dir(src_fd, dest_fd, _Tree(dest_fd), "")
        finally:
            os.close(dest_fd)
    finally:
        os.close(src_fd)


class _Tree:
    """The copy's root folder, and where the first copy of each multiply linked file went."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self.links: dict[tuple[int, int], str] = {}


def _copy_dir(src_fd: int, dest_fd: int, tree: _Tree, where: str) -> None:
    with os.scandir(src_fd) as entries:
        names = [e.name for e in entries]
    for name in names:
        st = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            os.mkdir(name, 0o700, dir_fd=dest_fd)
            sub_src = os.open(name, _DIR_FLAGS, dir_fd=src_fd)
            try:
                sub_dest = os.open(name, _DIR_FLAGS, dir_fd=dest_fd)
                try:
                    _copy_dir(sub_src, sub_dest, tree, f"{where}{name}/")
                    os.chmod(sub_dest, stat.S_IMODE(mode))
                finally:
                    os.close(sub_dest)
            finally:
                os.close(sub_src)
        elif stat.S_ISLNK(mode):
            os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dest_fd)
        elif stat.S_ISREG(mode):
            _copy_file(src_fd, dest_fd, name, st, tree, where)
        elif stat.S_ISFIFO(mode):
            os.mkfifo(name, stat.S_IMODE(mode), dir_fd=dest_fd)
        else:
            kind = "socket" if stat.S_ISSOCK(mode) else "device node"
            raise CloneError(errno.EPERM, f"cannot copy the {kind} {where}{name} (only files, folders, links, FIFOs)")
        if not stat.S_ISLNK(mode):
            os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=dest_fd, follow_symlinks=False)


def _copy_file(src_fd: int, dest_fd: int, name: str, st: os.stat_result, tree: _Tree, where: str) -> None:
    key = (st.st_dev, st.st_ino)
    if st.st_nlink > 1 and key in tree.links:  # a second name of a file already copied: link the copy
        os.link(tree.links[key], name, src_dir_fd=tree.root_fd, dst_dir_fd=dest_fd, follow_symlinks=False)
        return
    fin = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=src_fd)
    try:
        fout = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dest_fd)
        try:
            _clone_data(fin, fout)
            os.fchmod(fout, stat.S_IMODE(st.st_mode))
        finally:
            os.close(fout)
    finally:
        os.close(fin)
    if st.st_nlink > 1:  # the copy's folders are ours (made just now, not visible to any server)
        tree.links[key] = f"{where}{name}"


def _clone_data(fin: int, fout: int) -> None:
    try:
        fcntl.ioctl(fout, FICLONE, fin)
        return
    except OSError:
        pass  # not a reflink filesystem (or two filesystems): copy
    while True:
        try:
            n = os.copy_file_range(fin, fout, _CHUNK)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            _plain_copy(fin, fout)
            return
        if n == 0:  # the end (a file that shrank while copied: what was read is the copy)
            return


def _plain_copy(fin: int, fout: int) -> None:
    os.lseek(fin, 0, os.SEEK_SET)
    os.lseek(fout, 0, os.SEEK_SET)
    os.ftruncate(fout, 0)
    while chunk := os.read(fin, 1 << 20):
        os.write(fout, chunk)
