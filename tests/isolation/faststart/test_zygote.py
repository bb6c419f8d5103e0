"""Fast sandboxed starts (openenv_mcp.isolation.faststart.template): each episode's server is a fresh child forked by a
zygote per server, in namespaces of its own, as the episode's uid; zygote death and failure handled.

Driven through real episodes of a small env whose one server is the framework's sandboxed shell server
(``python -m openenv_mcp.tool_servers.shell``), on a server running as root.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import EnvSpec, ToolServerSpec
from openenv_mcp.isolation.faststart import template, zygote
from openenv_mcp.isolation.host.proctree import descendants, uid_processes
from openenv_mcp.isolation.host.uids import UID_BASE
from openenv_mcp.testing import need

SHELL = ["python", "-m", "openenv_mcp.tool_servers.shell", "--root", "{workspace}", "--lean"]


@pytest.fixture(autouse=True)
def _root_and_bwrap():
    need(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    need(os.geteuid() == 0, "fast starts apply when the environment server runs as root")


def make_env(tmp_path: Path, **server) -> openenv_mcp.Env:
    spec = ToolServerSpec(name="shell", command=SHELL, isolation="sandbox", **server)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return openenv_mcp.make(EnvSpec(name="zygote-test", tool_servers=[spec], base_dir=tmp_path), workdir=work)


def sh(env: openenv_mcp.Env, command: str) -> tuple[int, str]:
    """Run ``command`` with the episode's shell tool: ``(exit code, stdout)``."""
    obs = env.step({"type": "call_tool", "name": "shell_run", "arguments": {"command": command}})
    data = obs.result.structured_content or {}
    assert not obs.result.is_error, obs.result
    return data["exit_code"], data["stdout"]


def server_pid(uid: int) -> int:
    """The host pid of the episode's shell server (the oldest process of its uid)."""
    pids = uid_processes(uid)
    assert pids, f"no process of uid {uid}"
    return min(pids, key=lambda p: int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[19]))


def ancestors(pid: int) -> list[int]:
    out = []
    while pid > 1:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        out.append(pid)
    return out


def fd_inodes(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(("socket:", "pipe:")):
            out.add(target)
    return out


def wait_gone(check, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    left = check()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = check()
    return left


def test_each_episode_is_a_fresh_child_of_the_zygote_with_its_own_uid_namespaces_and_tmp(tmp_path):
    with make_env(tmp_path) as one, make_env(tmp_path) as two:
        one.reset(seed=0)
        two.reset(seed=0)
        uid1, uid2 = int(sh(one, "id -u")[1]), int(sh(two, "id -u")[1])
        assert uid1 != uid2 and min(uid1, uid2) >= UID_BASE
        zygotes = zygote.zygote_pids()
        assert zygotes, "no zygote runs: the episode did not start through fast starts"
        for uid in (uid1, uid2):
            assert set(ancestors(server_pid(uid))) & set(zygotes), "the server is not a child of a zygote"
        assert sh(one, "echo one > /tmp/mark && echo one > /dev/shm/mark && echo ok")[1] == "ok\n"
        from support.containment import runtime_mount_points  # here: a subprocess imports this module alone

        # fresh: nothing of the sibling's, nor of the host (this test's env folder is under /tmp: not bound)
        words = sh(two, "ls -A /tmp /dev/shm; ls -A /tmp/* 2>/dev/null | grep -c mark")[1].split()
        assert words[:2] == ["/dev/shm:", "/tmp:"] and words[-1] == "0", words
        assert set(words[2:-1]) <= runtime_mount_points(), words
        code, out = sh(two, "ps -e -o pid=,uid=,comm=")
        rows = [line.split() for line in out.splitlines()]
        assert {int(r[0]) for r in rows} <= set(range(1, 40)), out  # its own PID namespace: no zygote, no sibling
        assert all(r[1] in ("0", str(uid2)) for r in rows), out
        status = dict(
            line.split(":\t", 1) for line in sh(two, "cat /proc/self/status")[1].splitlines() if ":\t" in line
        )
        for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(status[field], 16) == 0, (field, status[field])
        assert status["NoNewPrivs"].strip() == "1"
        assert sh(two, "hostname")[1] == "openenv-sandbox\n"
        assert sh(two, "cat /proc/net/dev | grep -c :")[1].strip() == "1"  # only its own loopback


def test_a_server_holds_no_descriptor_of_the_zygote_or_of_another_episode(tmp_path):
    with make_env(tmp_path) as one, make_env(tmp_path) as two:
        one.reset(seed=0)
        two.reset(seed=0)
        s1, s2 = (server_pid(int(sh(env, "id -u")[1])) for env in (one, two))
        shared_with_zygotes = set().union(*(fd_inodes(z) for z in zygote.zygote_pids()))
        assert fd_inodes(s1) & shared_with_zygotes == set()
        assert fd_inodes(s2) & shared_with_zygotes == set()
        assert fd_inodes(s1) & fd_inodes(s2) == set()


def test_a_child_cannot_signal_or_see_the_zygote(tmp_path):
    with make_env(tmp_path) as env:
        env.reset(seed=0)
        sh(env, "true")
        (pid,) = zygote.zygote_pids()[:1]
        code, out = sh(env, f"kill -9 {pid} 2>&1; echo rc=$?; ls /proc | grep -cx {pid}")
        assert "rc=1" in out and out.strip().endswith("0"), out
        os.kill(pid, 0)  # still alive
        env.reset(seed=1)
        assert sh(env, "echo fine")[1] == "fine\n"
        assert pid in zygote.zygote_pids()


def test_zygote_death_is_detected_and_a_new_zygote_serves_the_next_start(tmp_path, caplog):
    with make_env(tmp_path) as env:
        env.reset(seed=0)
        uid = int(sh(env, "id -u")[1])
        before = set(zygote.zygote_pids())
        victim = next(z for z in before if z in ancestors(server_pid(uid)))
        with caplog.at_level(logging.WARNING, logger="openenv_mcp.isolation.faststart.template"):
            os.kill(victim, signal.SIGKILL)
            assert wait_gone(lambda: uid_processes(uid)) == [], "the zygote's children outlived it"
            env.step({"type": "call_tool", "name": "shell_run", "arguments": {"command": "true"}})  # sees it die
            assert sh(env, "echo restarted")[1] == "restarted\n"  # the server was started again, by a new zygote
            env.reset(seed=1)
            assert sh(env, "echo back")[1] == "back\n"
        assert victim not in zygote.zygote_pids() and zygote.zygote_pids()
        assert any(f"(pid {victim}) died" in r.getMessage() for r in caplog.records), caplog.text


def test_a_zygote_that_cannot_start_falls_back_to_an_ordinary_sandbox_with_a_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(template, "ZYGOTE_SCRIPT", str(tmp_path / "missing.py"))
    with caplog.at_level(logging.WARNING, logger="openenv_mcp.isolation.faststart.template"), make_env(tmp_path) as env:
        env.reset(seed=0)
        assert sh(env, "echo plain")[1] == "plain\n"
        uid = int(sh(env, "id -u")[1])
        assert not set(ancestors(server_pid(uid))) & set(zygote.zygote_pids())
    assert "the fast-start zygote of openenv_mcp.tool_servers.shell could not start" in caplog.text
    assert "start the ordinary way" in caplog.text


def test_fast_start_false_starts_the_server_the_ordinary_way(tmp_path):
    with make_env(tmp_path, fast_start=False) as env:
        env.reset(seed=0)
        uid = int(sh(env, "id -u")[1])
        assert not set(ancestors(server_pid(uid))) & set(zygote.zygote_pids())


def test_no_process_is_left_after_close_counted_by_uid(tmp_path):
    env = make_env(tmp_path)
    env.reset(seed=0)
    uid = int(sh(env, "id -u")[1])
    sh(env, "sleep 1000 & setsid sleep 1000 & (nohup sleep 1000 &) ; echo started")
    zygotes = zygote.zygote_pids()
    assert uid_processes(uid)  # the server (and whatever of the sleeps the shell tool left running)
    env.close()
    assert wait_gone(lambda: uid_processes(uid)) == []
    assert wait_gone(lambda: [p for z in zygotes for p in descendants(z)]) == [], "a root helper of the episode is left"


@pytest.mark.anyio
async def test_a_zygote_started_by_an_episode_is_not_a_process_that_episode_leaks(tmp_path):
    """The conformance shutdown rule counts every new descendant still alive after close() as leaked: a
    zygote (shared by all later episodes, owned by none) must not be one."""
    from openenv_mcp.conformance import check_env_async

    folder = tmp_path / "env"
    folder.mkdir()
    (folder / "env.toml").write_text(
        '[env]\nname = "zygote-shutdown"\ndescription = "shell"\n\n[[tool_servers]]\nname = "shell"\n'
        f"command = {SHELL!r}\n".replace("'", '"')
        + 'isolation = "sandbox"\n'
    )
    # the shell's sandbox binds no env folder: an earlier test's zygote of the same command would serve it
    zygote.close_zygotes()
    before = set(zygote.zygote_pids())
    report = await check_env_async(folder, only="shutdown", official=False)
    assert set(zygote.zygote_pids()) - before, "the check did not start a zygote of its own"
    assert [(r.rule, r.status) for r in report.results] == [("shutdown.clean", "passed")], report.results


def test_placeholders_and_binds_reach_a_forked_server_as_they_reach_a_plain_one(tmp_path):
    """``{workspace}`` / ``{env_dir}`` in ``env``, an ``ro_bind`` folder and ``hide``: the same inside a server the
    zygote forked (the zygote's template is the server's own bwrap command; the env is made per episode)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("bound\n")
    (tmp_path / "secret.txt").write_text("hidden\n")
    seen = {}
    for fast in (True, False):
        server = {"env": {"WS": "{workspace}", "ED": "{env_dir}"}, "ro_bind": [str(shared)], "fast_start": fast}
        with make_env(tmp_path, hide=["secret.txt"], **server) as env:
            env.reset(seed=0)
            uid = int(sh(env, "id -u")[1])
            forked = bool(set(ancestors(server_pid(uid))) & set(zygote.zygote_pids()))
            assert forked == fast
            out = sh(
                env, f"echo $WS $ED; cat {shared}/data.txt {tmp_path}/secret.txt 2>&1; touch {shared}/x 2>&1; true"
            )
            seen[fast] = out[1].replace(str(uid), "UID")
    assert seen[True] == seen[False], seen
    assert seen[True].startswith(f"/workspace {tmp_path}\n"), seen
    assert "hidden" not in seen[True] and not (shared / "x").exists()


def test_a_process_that_used_fast_starts_exits_without_leaking_its_zygote_sockets(tmp_path):
    """The registry owns each zygote's control socket: it is closed at exit, not left to the garbage collector
    (which warns ``ResourceWarning: unclosed <socket ...>`` under ``-X dev``)."""
    script = (
        "import sys, pathlib\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from test_zygote import make_env, sh\n"
        "from openenv_mcp.isolation.faststart import zygote\n"
        "with make_env(pathlib.Path(sys.argv[1])) as env:\n"
        "    env.reset(seed=0)\n"
        "    assert sh(env, 'true')[0] == 0\n"
        "    assert zygote.zygote_pids(), 'no zygote runs'\n"
        "print('done')\n"
    )
    run = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script, str(tmp_path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENENV_MCP_FAST_START": "1"},
    )
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr
    assert "ResourceWarning" not in run.stderr, run.stderr
