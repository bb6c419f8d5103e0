"""clone_tree: a fork's copy of a workspace shares no inode with the original, follows no link,
keeps hard links inside the copy, modes and times, and refuses what it cannot copy."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from openenv_mcp.isolation.host.clone import CloneError, clone_tree


def make_tree(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep.txt").write_text("deep")
    (root / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o750)
    os.chmod(root / "a", 0o710)
    (root / "big.bin").write_bytes(os.urandom(3 << 20))
    os.utime(root / "big.bin", ns=(1_000_000_000, 1_500_000_000_000_000_000))


def test_the_copy_has_the_same_content_modes_and_times(tmp_path: Path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    dest.mkdir()
    make_tree(src)
    clone_tree(src, dest)
    for rel in ("a/b/deep.txt", "run.sh", "big.bin"):
        assert (dest / rel).read_bytes() == (src / rel).read_bytes()
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o750
    assert stat.S_IMODE((dest / "a").stat().st_mode) == 0o710
    assert (dest / "big.bin").stat().st_mtime_ns == 1_500_000_000_000_000_000
    assert (dest / "big.bin").stat().st_ino != (src / "big.bin").stat().st_ino


def test_hard_links_stay_inside_each_tree(tmp_path: Path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    dest.mkdir()
    (src / "sub").mkdir()
    (src / "one.txt").write_text("shared")
    os.link(src / "one.txt", src / "sub" / "two.txt")
    clone_tree(src, dest)
    copy_one, copy_two = (dest / "one.txt").stat(), (dest / "sub" / "two.txt").stat()
    assert copy_one.st_ino == copy_two.st_ino  # the copy behaves as the original: one file, two names
    assert copy_one.st_ino != (src / "one.txt").stat().st_ino
    (dest / "sub" / "two.txt").write_text("changed in the copy")
    assert (dest / "one.txt").read_text() == "changed in the copy"
    assert (src / "one.txt").read_text() == "shared"
    assert (src / "one.txt").stat().st_nlink == 2  # no link across the two trees


def test_links_are_copied_as_links_never_followed(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret")
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    dest.mkdir()
    (src / "to-secret").symlink_to(outside / "secret.txt")
    (src / "to-folder").symlink_to(outside)
    clone_tree(src, dest)
    assert (dest / "to-secret").is_symlink() and os.readlink(dest / "to-secret") == str(outside / "secret.txt")
    assert (dest / "to-folder").is_symlink()
    assert sorted(os.listdir(dest)) == ["to-folder", "to-secret"]  # nothing of outside/ was copied in


def test_a_fifo_is_made_again_and_never_opened(tmp_path: Path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    dest.mkdir()
    os.mkfifo(src / "pipe", 0o640)
    clone_tree(src, dest)  # opening the FIFO would block here forever
    assert stat.S_ISFIFO((dest / "pipe").lstat().st_mode)


def test_a_socket_is_refused_with_its_path(tmp_path: Path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    (src / "run").mkdir(parents=True)
    dest.mkdir()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(src / "run" / "agent.sock"))
        with pytest.raises(CloneError, match=r"cannot copy the socket .*run/agent\.sock"):
            clone_tree(src, dest)
    finally:
        sock.close()


def test_a_source_that_is_a_link_is_refused(tmp_path: Path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(OSError):
        clone_tree(tmp_path / "link", dest)
