"""Workspaces: private (0700), removed at any depth without following links by a reaper that
cannot die, and what a dead server left behind swept at start."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from openenv_mcp.isolation.host.workspace import Workspace, owner_tag, remove_tree


def _gone(*paths: Path, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while any(os.path.lexists(p) for p in paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(os.path.lexists(p) for p in paths)


def _deep_tree(top: Path, depth: int) -> None:
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("x")
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def test_seeded_workspace_is_0700_so_other_episodes_cannot_read_it(tmp_path):
    seed = tmp_path / "seed"
    (seed / "sub").mkdir(parents=True)
    (seed / "sub" / "a.txt").write_text("secret")
    seed.chmod(0o755)
    ws = Workspace(tmp_path / "work")
    ws.seed(seed)
    try:
        assert stat.S_IMODE(ws.path.stat().st_mode) == 0o700
        assert (ws.path / "sub" / "a.txt").read_text() == "secret"
    finally:
        ws.remove()


def test_a_seeds_bytecode_caches_pip_compiled_stay_out_of_the_workspace(tmp_path):
    """pip byte-compiles an installed wheel's seed ``.py`` files; the workspace holds the seed without them."""
    seed = tmp_path / "seed"
    (seed / "shop" / "__pycache__").mkdir(parents=True)
    (seed / "shop" / "cart.py").write_text("TOTAL = 1\n")
    (seed / "shop" / "__pycache__" / "cart.cpython-311.pyc").write_bytes(b"\0")
    (seed / "notes__pycache__.txt").write_text("a file, not a cache folder")
    ws = Workspace(tmp_path / "work")
    ws.seed(seed)
    try:
        found = sorted(p.relative_to(ws.path).as_posix() for p in ws.path.rglob("*"))
        assert found == ["notes__pycache__.txt", "shop", "shop/cart.py"]
    finally:
        ws.remove()


def test_a_1500_deep_tree_does_not_kill_the_workspace_reaper(tmp_path):
    deep = Workspace(tmp_path)
    _deep_tree(deep.path, 1500)
    trash_deep = deep.path.with_name(deep.path.name + ".removed")
    deep.remove()
    later = Workspace(tmp_path)
    (later.path / "file").write_text("x")
    trash_later = later.path.with_name(later.path.name + ".removed")
    later.remove()
    assert _gone(trash_deep, trash_later), os.listdir(tmp_path)


def test_removing_a_tree_never_follows_a_link_out_of_it(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "link").symlink_to(outside)
    (tree / "link").symlink_to(outside)
    remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep.txt").read_text() == "keep"
    link = tmp_path / "just-a-link"
    link.symlink_to(outside)
    remove_tree(link)
    assert not os.path.lexists(link) and (outside / "keep.txt").exists()


def test_a_dead_servers_workspaces_are_swept_at_start_and_a_live_servers_are_kept(tmp_path):
    tag = [
        sys.executable,
        "-c",
        "from openenv_mcp.isolation.host.workspace import owner_tag; print(owner_tag(), flush=True); "
        "import sys; sys.stdin.read()",
    ]
    dead = subprocess.Popen(tag, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    dead_tag = dead.stdout.readline().strip()
    dead.stdin.close()
    dead.wait(timeout=10)
    live = subprocess.Popen(tag, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        live_tag = live.stdout.readline().strip()
        stale = [
            tmp_path / f"openenv-mcp-{dead_tag}-abc",
            tmp_path / f"openenv-mcp-{dead_tag}-def.removed",
            tmp_path / f"openenv-mcp-home-{dead_tag}-ghi",
        ]
        kept = [
            tmp_path / f"openenv-mcp-{live_tag}-abc",
            tmp_path / f"openenv-mcp-{live_tag}-def.removed",
            tmp_path / "openenv-mcp-someone-else",
        ]
        for path in stale + kept:
            (path / "sub").mkdir(parents=True)
        ws = Workspace(tmp_path)
        assert ws.path.name.startswith(f"openenv-mcp-{owner_tag()}-")
        assert _gone(*stale)
        assert all(p.is_dir() for p in kept)
        ws.remove()
    finally:
        live.stdin.close()
        live.wait(timeout=10)
