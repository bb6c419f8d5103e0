"""Hostile agent vs the filesystem tools (``fs_*`` of ``coding`` and ``files``), through ``openenv_mcp.make``.

Each test is one attack as an agent runs it: code the agent starts with
``python_run`` in the sandbox races the in-process ``fs_*`` tools (folder /
symlink swaps with ``renameat2(RENAME_EXCHANGE)``, FIFOs swapped in), or tool
arguments built to freeze the server or blow up its memory. Each asserts the
attack fails with a clear result, nothing on the host changed (files, owners),
nothing secret came back, and the episode keeps answering.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp.testing import need
from openenv_mcp.types import CallTool

REPO = Path(__file__).resolve().parents[2]
SECRET = "HOST-SECRET-7f3a"

RACE = """
import ctypes, os, threading
os.makedirs("d", exist_ok=True)
open("d/secret.txt", "w").write("decoy\\n")
os.symlink({host!r}, "l")
libc = ctypes.CDLL(None, use_errno=True)
def swap():
    n = 0
    while True:
        libc.renameat2(-100, b"{a}", -100, b"{b}", 2)  # RENAME_EXCHANGE
        n += 1
        if n % 512 == 0 and os.path.exists("stop"):
            return
threading.Thread(target=swap, daemon=True).start()
"""


def _need_sandbox_as_root() -> None:
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: coding sandboxes python_run")
    need(os.geteuid() == 0, "the attack is on a server running as root (as in CI and most containers)")


def _step(env, name: str, **arguments):
    return env.step(CallTool(name=name, arguments=arguments))


def _host_folder(tmp_path: Path) -> Path:
    """A root-owned host folder with a root-only secret and a root-owned file (what the attack targets)."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text(SECRET + "\n")
    os.chmod(host / "secret.txt", 0o600)
    (host / "owned.txt").write_text("root's\n")
    return host


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {
        p.name: (os.lstat(p).st_uid, os.lstat(p).st_gid, stat.S_IMODE(os.lstat(p).st_mode)) for p in folder.iterdir()
    }


def test_fs_tools_cannot_be_raced_out_of_the_workspace_by_a_folder_symlink_swap(tmp_path):
    """Critical 1: a python_run thread swaps folder ``d`` and a link ``l`` to a host folder in a loop;
    fs_write / fs_read / fs_edit / fs_move / fs_list / fs_search / fs_delete on ``d/...`` never reach the host,
    and no host file changes owner (the old ``reown`` walk chowned by path)."""
    _need_sandbox_as_root()
    host = _host_folder(tmp_path)
    before = _snapshot(host)
    env = openenv_mcp.make("coding", max_steps=10_000, mode="prod")  # prod: no reward (its own races are not this test)
    try:
        env.reset(seed=0)
        obs = _step(env, "python_run", code=RACE.format(host=str(host), a="d", b="l"))
        assert not obs.result.is_error, obs.result
        seen: list[str] = []
        for i in range(150):
            for name, args in (
                ("fs_write", {"path": f"d/x{i}.txt", "content": "agent\n"}),
                ("fs_read", {"path": "d/secret.txt"}),
                ("fs_edit", {"path": "d/secret.txt", "old_text": "HOST", "new_text": "PWND"}),
                ("fs_search", {"pattern": "SECRET", "path": "d"}),
                ("fs_list", {"path": "d"}),
                ("fs_move", {"source": "d/owned.txt", "destination": "stolen.txt"}),
                ("fs_delete", {"path": "d/owned.txt"}),
            ):
                obs = _step(env, name, **args)
                text = obs.result.content[0].text
                seen.append(text)
                assert SECRET not in text, (name, args, text)
        _step(env, "fs_write", path="stop", content="")
        time.sleep(0.2)
        after = _snapshot(host)
        assert after == before, f"the host folder changed: {before} -> {after}"
        assert (host / "secret.txt").read_text() == SECRET + "\n"
        # the tools did work (inside the workspace): the race did not just make every call fail
        assert any(t.startswith("Created d/x") for t in seen)
        # and the episode still answers
        assert _step(env, "fs_read", path="stop").result.is_error is False
        assert _step(env, "python_run", code="1 + 1").result.structured_content["result"] == "2"
    finally:
        env.close()


def test_fs_read_is_not_blocked_by_a_fifo_swapped_in_by_a_race(tmp_path):
    """High 7: a python_run thread swaps a regular file and a FIFO; fs_read must refuse the FIFO
    (non-blocking open, fstat) instead of blocking the server until someone opens the pipe."""
    _need_sandbox_as_root()
    env = openenv_mcp.make("coding", max_steps=10_000, mode="prod")  # prod: no reward (its own races are not this test)
    workspace = None
    try:
        env.reset(seed=0)
        workspace = env.unwrapped.episode.workspace.path
        code = RACE.replace('os.symlink({host!r}, "l")', 'os.mkfifo("p"); open("f", "w").write("text\\n")')
        obs = _step(env, "python_run", code=code.format(a="f", b="p"))
        assert not obs.result.is_error, obs.result
        results: list[str] = []

        def attack() -> None:
            for _ in range(300):
                results.append(_step(env, "fs_read", path="f").result.content[0].text)

        worker = threading.Thread(target=attack, daemon=True)
        worker.start()
        worker.join(60)
        if worker.is_alive():  # blocked on a FIFO: open its writer side so the server thread can go on
            for name in ("f", "p"):
                try:
                    os.close(os.open(workspace / name, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            pytest.fail("fs_read blocked on a FIFO swapped in under it")
        assert set(results) <= {"text\n", "'f' is not a regular file (a pipe, socket or device); it cannot be opened."}
        assert "text\n" in results
        _step(env, "fs_write", path="stop", content="")
    finally:
        env.close()


def test_fs_search_catastrophic_regex_does_not_freeze_the_episode():
    """High 7: ``(a|a)*b`` over 28 ``a`` took 79 s on the event loop (Python's backtracking ``re``);
    search matches in linear time now, and an answer comes at once."""
    env = openenv_mcp.make("files", call_timeout=5)
    try:
        env.reset(seed=0)
        assert not _step(env, "fs_write", path="a.txt", content="a" * 28 + "\n").result.is_error
        started = time.monotonic()
        obs = _step(env, "fs_search", pattern="(a|a)*b", regex=True, path="a.txt")
        assert time.monotonic() - started < 2
        assert obs.result.content[0].text == "No matches for '(a|a)*b' in 'a.txt'."
        obs = _step(env, "fs_search", pattern="(a)\\1", regex=True)
        assert obs.result.is_error and obs.result.content[0].text == (
            "Regular expression '(a)\\\\1' is not supported: invalid escape sequence: \\1. Search matches in "
            "linear time (RE2 syntax), without backreferences or look-around."
        )
    finally:
        env.close()


PEAK = """
import json, resource, sys
import openenv_mcp
from openenv_mcp.types import CallTool
env = openenv_mcp.make({env!r}, max_steps=100)
env.reset(seed=0)
step = lambda name, **a: env.step(CallTool(name=name, arguments=a))
for name, args in {setup}:
    r = step(name, **args)
    assert not r.result.is_error, r.result
name, args = {attack}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = step(name, **args)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
env.close()
print(json.dumps({{"grew_mb": (after - before) / 1024, "error": r.result.is_error,
                   "text": r.result.content[0].text[-300:]}}))
"""


def _peak(env: str, setup: str, attack: str) -> dict:
    """Run the attack (Python source of ``[(tool, arguments)...]`` and ``(tool, arguments)``) in a fresh
    interpreter; how much its peak memory grew during the attack, and the result."""
    code = PEAK.format(env=env, setup=setup, attack=attack)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_fs_edit_replace_all_with_a_huge_new_text_is_refused_before_allocating():
    """High 8: ``replace_all`` with a 2 MB ``new_text`` over 500 occurrences built a 1 GB string
    (1.07 GB peak) before refusing it; the result's size is computed from the inputs now."""
    out = _peak(
        "files",
        '[("fs_write", {"path": "x.txt", "content": "x\\n" * 500})]',
        '("fs_edit", {"path": "x.txt", "old_text": "x", "new_text": "y" * 2_000_000, "replace_all": True})',
    )
    assert out["error"] and out["text"] == "The result would be 1000000500 characters; the limit is 5000000."
    assert out["grew_mb"] < 150, out


def test_fs_read_of_a_sparse_gigabyte_file_streams_within_a_memory_bound():
    """High 8: ``truncate -s 1G`` then ``fs_read max_lines=1`` read the whole file in the environment
    server (2.2 GB peak); reads stream now and keep only what they return (and coding's fs server runs in
    the sandbox; ``tests/tool_servers/test_filesystem_server.py`` bounds the server's own peak). The file is
    200 MiB, past the read's 64 MB scan bound and under the sandbox's file-size limit (``file_mb``, 256)."""
    _need_sandbox_as_root()
    out = _peak(
        "coding",
        '[("python_run", {"code": "open(\\"big\\", \\"wb\\").truncate(200 << 20)"})]',
        '("fs_read", {"path": "big", "max_lines": 1})',
    )
    assert out["grew_mb"] < 150, out
    assert not out["error"], out
    assert out["text"].endswith(
        "[... truncated: showing 100000 of at least 64000000 characters; continue with start_line=1 ...]"
    ), out
