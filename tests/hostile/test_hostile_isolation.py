"""Hostile agents and tool servers against the isolation boundaries (issue 10 items 4, 10, 11,
12, 15, 18), each attack run the way an agent (or a hostile tool server) would run it, as root.

The attacker is a tiny stdio MCP server with one tool, ``sh``: arbitrary shell commands as the
server's uid, which is what an agent gets from any code-running tool.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.isolation.host.exposure import private_ancestor
from openenv_mcp.testing import free_port, need

from support.containment import assert_no_leak, marked_processes

ROOT = Path(__file__).resolve().parents[2]
IS_ROOT = os.geteuid() == 0

SH_SERVER = r"""
import json, subprocess, sys
for line in sys.stdin:
    msg = json.loads(line)
    rid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    if rid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "sh", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "sh", "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]}
    elif method == "tools/call":
        p = subprocess.run(["/bin/sh", "-c", params["arguments"]["cmd"]], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=120)
        result = {"content": [{"type": "text", "text": json.dumps([p.returncode, p.stdout, p.stderr])}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()
"""


@pytest.fixture(scope="module")
def sh_script():
    folder = Path(tempfile.mkdtemp(prefix="openenv-mcp-hostile-iso-"))
    folder.chmod(0o755)
    script = folder / "sh_server.py"
    script.write_text(SH_SERVER)
    script.chmod(0o644)
    yield script
    shutil.rmtree(folder, ignore_errors=True)


def sh_env(
    script: Path,
    isolation: str = "process",
    python: str = "/usr/bin/python3",
    marker: str = "",
    workspace: str | None = None,
    base_dir: Path | None = None,
) -> openenv_mcp.Env:
    argv = [python, str(script)] + ([marker] if marker else [])
    server = ToolServerSpec(name="sh", namespace="", command=argv, isolation=isolation, workspace=workspace)
    return openenv_mcp.make(
        EnvSpec(name="hostile-iso", max_steps=None, tool_servers=[server], base_dir=base_dir or Path.cwd())
    )


def sh(env: openenv_mcp.Env, cmd: str) -> tuple[int, str, str]:
    result = env.step(CallTool(name="sh", arguments={"cmd": cmd})).result
    assert not result.is_error, result.content
    code, out, err = json.loads(result.content[0].text)
    return code, out, err


def need_root() -> None:
    need(IS_ROOT, "the boundaries drop to episode uids only when the environment server runs as root")


# -- item 4: a runtime under /root must not make the tool server root ---------------------------
def test_a_server_whose_runtime_is_under_root_cannot_signal_the_environment_server(sh_script):
    need_root()
    need(private_ancestor(os.path.realpath(sys.executable)) is not None, "needs an interpreter under /root")
    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    with sh_env(sh_script, python=sys.executable, marker=marker) as env:
        env.reset(seed=0)
        code, out, _ = sh(env, "id -u")
        assert int(out) != 0
        code, _, err = sh(env, f"kill -0 {os.getpid()}")  # signal 0: the permission check alone
        assert code != 0 and "Operation not permitted" in err
        code, _, _ = sh(env, "cat /root/.bashrc /etc/shadow")
        assert code != 0
        # a double-forked, setsid'd, chdir-/ child must not outlive the episode
        sh(env, f"cd / && setsid sh -c 'sleep 3600; echo {marker}' </dev/null >/dev/null 2>&1 &")
        deadline = time.monotonic() + 10
        while (
            not (
                orphans := [
                    p for p in marked_processes(marker) if b"sleep 3600" in Path(f"/proc/{p}/cmdline").read_bytes()
                ]
            )
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert orphans  # the detached grandchild runs (with, for a moment, the shell that started it)
        assert env.step(CallTool(name="sh", arguments={"cmd": "true"})).result.is_error is False
    assert_no_leak(marker)


# -- item 10: another episode's workspace ---------------------------------------------------------
def test_an_episode_cannot_read_another_episodes_seeded_workspace(sh_script, tmp_path):
    need_root()
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "notes.txt").write_text("episode A's notes")
    seed.chmod(0o755)
    with (
        sh_env(sh_script, workspace="seed", base_dir=tmp_path) as a,
        sh_env(sh_script, workspace="seed", base_dir=tmp_path) as b,
    ):
        a.reset(seed=0)
        b.reset(seed=0)
        _, where_a, _ = sh(a, "pwd")
        sh(a, "echo 'the answer is 42' > secret.txt")
        code, out, err = sh(b, f"cat {where_a.strip()}/secret.txt {where_a.strip()}/notes.txt; ls {where_a.strip()}")
        assert code != 0 and out == "" and "Permission denied" in err
        assert sh(b, "cat notes.txt")[1] == "episode A's notes"  # its own copy is fine


# -- item 11: two environment servers on one host -------------------------------------------------
_OTHER_SERVER = """
import os, sys
target = int(sys.argv[2])
os.environ["OPENENV_MCP_UID_BASE"] = str(target - (os.getpid() % 1000) * 10000)  # the old scheme collides
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/tests")
sys.path.insert(0, sys.argv[1] + "/tests/hostile")
from test_hostile_isolation import sh, sh_env
from pathlib import Path
with sh_env(Path(sys.argv[3])) as env:
    env.reset(seed=0)
    print(sh(env, "id -u")[1].strip(), flush=True)
"""


def test_closing_another_servers_episode_does_not_kill_this_servers_tool_server(sh_script):
    need_root()
    with sh_env(sh_script) as env:
        env.reset(seed=0)
        mine = int(sh(env, "id -u")[1])
        other = subprocess.run(
            [sys.executable, "-c", _OTHER_SERVER, str(ROOT), str(mine), str(sh_script)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert other.returncode == 0, other.stderr[-2000:]
        assert int(other.stdout.split()[-1]) != mine
        assert sh(env, "echo still here") == (0, "still here\n", "")


# -- item 12: a deep tree left in the workspace ---------------------------------------------------
def test_a_very_deep_tree_in_the_workspace_does_not_stop_later_workspaces_being_removed(sh_script, tmp_path):
    os.environ["OPENENV_MCP_WORKDIR"] = str(tmp_path)
    try:
        with sh_env(sh_script) as env:
            env.reset(seed=0)
            code, _, err = sh(
                env, '/usr/bin/python3 -c \'import os\nfor i in range(1500): os.mkdir("d"); os.chdir("d")\''
            )
            assert code == 0, err
            env.reset(seed=1)  # the deep workspace goes to the reaper
            sh(env, "echo later > later.txt")
        deadline = time.monotonic() + 60
        while os.listdir(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert os.listdir(tmp_path) == []
    finally:
        del os.environ["OPENENV_MCP_WORKDIR"]


# -- item 15: other copies of the hidden tests and host secrets -----------------------------------
def test_hidden_tests_and_secrets_under_opt_and_var_are_unreadable_from_shell_run():
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed")
    token = uuid.uuid4().hex
    planted = [Path("/opt") / f"openenv-mcp-test-{token}", Path("/var") / f"openenv-mcp-test-{token}"]
    try:
        for folder in planted:
            shutil.copytree(ROOT / "envs" / "coding" / "hidden", folder / "envs" / "coding" / "hidden")
            (folder / "secret.txt").write_text(f"secret {token}")
            for p in [folder, *folder.rglob("*")]:
                p.chmod(0o755 if p.is_dir() else 0o644)
        env = openenv_mcp.make("coding")
        with env:
            env.reset(seed=0)
            for folder in planted:
                result = env.step(
                    CallTool(
                        name="shell_run",
                        arguments={"command": f"cat {folder}/secret.txt; grep -rl 'def test_' {folder} | head -n 3"},
                    )
                ).result
                assert f"secret {token}" not in str(result.structured_content)
                assert result.structured_content["stdout"] == ""
            result = env.step(
                CallTool(
                    name="shell_run",
                    arguments={
                        "command": f"ls {ROOT}/envs/coding/hidden; cat /etc/shadow; ls -A /opt /srv /home /var/lib"
                    },
                )
            ).result
            assert result.structured_content["stdout"] == ""
    finally:
        for folder in planted:
            shutil.rmtree(folder, ignore_errors=True)


# -- item 18: SIGKILLed and SIGTERMed servers ----------------------------------------------------
_KILLED_SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1] + "/tests/hostile")
sys.path.insert(0, sys.argv[1] + "/tests")
from test_hostile_isolation import sh, sh_env
from pathlib import Path
env = sh_env(Path(sys.argv[2]))
env.reset(seed=0)
print(sh(env, "pwd")[1].strip(), flush=True)
time.sleep(3600)
"""


def test_workspaces_of_a_sigkilled_server_are_swept_by_the_next_server_and_a_live_ones_kept(sh_script, tmp_path):
    env_vars = {**os.environ, "OPENENV_MCP_WORKDIR": str(tmp_path)}
    servers = [
        subprocess.Popen(
            [sys.executable, "-c", _KILLED_SERVER, str(ROOT), str(sh_script)],
            env=env_vars,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(2)
    ]
    try:
        dead, live = (Path(s.stdout.readline().strip()) for s in servers)
        assert dead.is_dir() and live.is_dir()
        servers[0].send_signal(signal.SIGKILL)
        servers[0].wait()
        os.environ["OPENENV_MCP_WORKDIR"] = str(tmp_path)
        try:
            with sh_env(sh_script) as env:
                env.reset(seed=0)
                deadline = time.monotonic() + 30
                while any(p.name.startswith(dead.name) for p in tmp_path.iterdir()) and time.monotonic() < deadline:
                    time.sleep(0.1)
                left = [p.name for p in tmp_path.iterdir()]
                assert not any(name.startswith(dead.name) for name in left), left
                assert live.is_dir()
        finally:
            del os.environ["OPENENV_MCP_WORKDIR"]
    finally:
        for s in servers:
            if s.poll() is None:
                s.kill()
                s.wait()


def test_sigterm_leaves_no_workspace_of_the_server_behind(tmp_path):
    import urllib.request

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "openenv_mcp.cli", "serve", "files", "--port", str(port)],
        env={**os.environ, "OPENENV_MCP_WORKDIR": str(tmp_path)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        created = 0
        while created < 3 and time.monotonic() < deadline:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/episodes",
                    data=b"{}",
                    method="POST",
                    headers={"content-type": "application/json"},
                )
                urllib.request.urlopen(request, timeout=10).read()
                created += 1
            except OSError:
                time.sleep(0.2)
        assert created == 3 and len(os.listdir(tmp_path)) == 3
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        assert os.listdir(tmp_path) == []
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
