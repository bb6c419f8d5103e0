"""The hostile agent writing code: the sandbox containment matrix, for ``RunCode`` actions.

Each test is one attack as an agent would send it (a ``RunCode`` on the
``files`` environment through ``openenv_mcp.make``), asserting that it fails
with a clear result, that the host is untouched, that the episode keeps
answering and that the reward is not forged.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import RunCode
from openenv_mcp.client.registry import find_env
from openenv_mcp.definitions.spec import Limits
from openenv_mcp.isolation.host.allowlist import checkout_roots, inside
from openenv_mcp.isolation.host.proctree import uid_processes
from openenv_mcp.isolation.host.runtime import package_dirs
from openenv_mcp.testing import need

from support.containment import Listener, world_dir

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("OPENENV_MCP_REQUIRE_ALL"),
    reason="CodeAct runs code in the sandbox boundary: apt-get install bubblewrap",
)

FILES_DIR = find_env("files").base_dir


def files_env(**limits) -> openenv_mcp.Env:
    spec = find_env("files")
    if limits:
        spec = spec.model_copy(update={"code_limits": Limits(**{"call_timeout": 60.0, **limits})})
    return openenv_mcp.make(spec)


def run(env: openenv_mcp.Env, code: str) -> tuple[dict, float]:
    obs = env.step(RunCode(code=code))
    return obs.result.structured_content, obs.reward


def still_answers(env: openenv_mcp.Env) -> None:
    out, _ = run(env, "from tools import fs_list\nbool(fs_list(path='.'))")
    assert out["exception"] is None and out["value"] == "True" and out["calls"][0]["result"]["isError"] is False, out


def pids_of(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state != "Z":
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_code_cannot_read_a_host_secret_file():
    with world_dir() as folder, files_env() as env:
        secret = folder / "secret.txt"
        secret.write_text("host-secret-1234")
        secret.chmod(0o644)
        env.reset(seed=0)
        out, reward = run(env, f"open({str(secret)!r}).read()")
        assert out["exception"].startswith("FileNotFoundError"), out
        assert "host-secret" not in json.dumps(out) and reward == 0.0
        still_answers(env)


def test_code_cannot_read_the_grader_only_task_data_on_disk():
    with files_env() as env:
        env.reset(seed=0)
        paths = [str(FILES_DIR / "tasks.jsonl"), str(FILES_DIR / "solutions.py"), str(FILES_DIR / "reward.py")]
        folder = str(FILES_DIR)
        out, _ = run(
            env,
            f"import os\n[os.path.exists(p) for p in {paths!r}] + "
            f"[not (os.path.isdir({folder!r}) and os.listdir({folder!r}))]",
        )
        assert out["exception"] is None and out["value"] == "[False, False, False, True]", out
        assert '"goals"' not in json.dumps(out)


def test_code_cannot_read_other_envs_hidden_tests_the_checkouts_git_or_what_lies_beside_it():
    """Issue 23 item 1: ``RunCode`` in ``files`` read ``envs/coding/hidden`` and ``envs/sql/tasks.jsonl`` (the
    bundled envs' folder was bound for the package), the checkout's ``.git`` and the checkout's parent."""
    envs = Path(str(find_env("coding").base_dir)).parent
    targets = [envs / "coding" / "hidden", envs / "sql" / "tasks.jsonl", envs / "coding" / "solutions.py"]
    targets += [Path(root) / ".git" for root in checkout_roots()]
    with files_env() as env:
        env.reset(seed=0)
        out, _ = run(env, f"import os\n[os.path.exists(p) for p in {[str(t) for t in targets]!r}]")
        assert out["exception"] is None and out["value"] == repr([False] * len(targets)), (targets, out)
        for root in checkout_roots():  # only the mount points of the package and its virtualenv show
            runtime = {Path(p).relative_to(root).parts[0] for p in [*package_dirs(), sys.prefix] if inside(p, root)}
            look = f"import os\n[sorted(os.listdir({root!r})), os.listdir({os.path.dirname(root)!r})]"
            out, _ = run(env, look)
            assert out["value"] == repr([sorted(runtime), [os.path.basename(root)]]), out
        still_answers(env)


def test_code_cannot_write_outside_its_sandbox():
    with world_dir() as folder, files_env() as env:
        env.reset(seed=0)
        target = Path.cwd() / f"codeact-escape-{uuid.uuid4().hex}"
        code = (
            f"import os\nerrors = []\nfor p in [{str(target)!r}, {str(folder / 'x')!r}, '/etc/codeact-x']:\n"
            "    try:\n        open(p, 'w').write('pwned')\n    except OSError as e:\n"
            "        errors.append(isinstance(e, OSError))\nerrors"
        )
        out, _ = run(env, code)
        assert out["exception"] is None and out["value"] == "[True, True, True]", out
        assert not target.exists() and os.listdir(folder) == [] and not Path("/etc/codeact-x").exists()
        still_answers(env)


def test_code_cannot_reach_a_host_loopback_listener():
    listener = Listener()
    try:
        with files_env() as env:
            env.reset(seed=0)
            out, _ = run(env, f"import socket\nsocket.create_connection(('127.0.0.1', {listener.port}), timeout=3)")
            assert (
                out["exception"] is not None
                and "ConnectionRefused" in out["exception"]
                or "Network is unreachable" in out["exception"]
            ), out
            assert not listener.connected.wait(0.5)
            still_answers(env)
    finally:
        listener.close()


def test_a_fork_bomb_is_capped_and_nothing_outlives_the_run():
    marker = f"codeact-bomb-{uuid.uuid4().hex}"
    with files_env(processes=32) as env:
        env.reset(seed=0)
        code = (
            "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
            f"            os.execvp('sh', ['sh', '-c', 'sleep 300; :', {marker!r}])\n        n += 1\n"
            "except OSError as e:\n    err = type(e).__name__\n(n < 64, err)"
        )
        out, reward = run(env, code)
        assert out["exception"] is None and out["value"] == "(True, 'BlockingIOError')", out
        assert pids_of(marker) == [] and reward == 0.0
        still_answers(env)


def test_a_memory_bomb_fails_inside_the_code_and_the_interpreter_lives_on():
    with files_env(memory_mb=256) as env:
        env.reset(seed=0)
        run(env, "kept = 41")
        out, _ = run(env, "hog = []\nwhile True:\n    hog.append(bytearray(16 * 1024 * 1024))")
        assert out["exception"] == "MemoryError", out
        out, _ = run(env, "del hog\nkept + 1")
        assert out["value"] == "42", out


def test_an_infinite_loop_times_out_and_a_fresh_interpreter_answers_next():
    with files_env(call_timeout=2.0) as env:
        env.reset(seed=0)
        run(env, "kept = 1")
        started = time.monotonic()
        out, reward = run(env, "while True:\n    pass")
        assert time.monotonic() - started < 10
        assert out["exception"] == (
            "TimeoutError: the code ran longer than 2 s and was stopped; "
            "the interpreter was restarted (variables are gone)"
        ), out
        assert reward == 0.0
        out, _ = run(env, "'kept' in globals()")
        assert out["value"] == "False" and out["stdout"].startswith("(a new interpreter"), out
        still_answers(env)


def test_detached_processes_started_by_code_do_not_outlive_the_run_or_the_episode():
    marker = f"codeact-orphan-{uuid.uuid4().hex}"
    with files_env() as env:
        env.reset(seed=0)
        code = (
            "import subprocess\nsubprocess.Popen(['setsid', 'sh', '-c', "
            f"'(sh -c \"sleep 300; :\" {marker} &) ; sleep 300; :', {marker!r}], start_new_session=True)\n"
            "import time; time.sleep(0.3)\n'started'"
        )
        out, _ = run(env, code)
        assert out["value"] == "'started'", out
        assert pids_of(marker) == []
        run(env, "import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 300; :', " + repr(marker) + "])")
    time.sleep(0.2)
    assert pids_of(marker) == []


def test_code_cannot_touch_another_episodes_workspace_or_tools():
    with files_env() as a, files_env() as b:
        a.reset(seed=0)
        b.reset(seed=0)
        victim = b.unwrapped.episode.workspace.path
        before = sorted(p.name for p in victim.iterdir())
        code = (
            f"import os\nfrom tools import fs_write\nseen = os.path.exists({str(victim)!r})\n"
            f"fs_write(path={str(victim / 'pwned.txt')!r}, content='x')"
        )
        out, reward = run(a, code)
        assert out["exception"] is not None and out["exception"].startswith("ToolError"), out
        assert sorted(p.name for p in victim.iterdir()) == before and reward == 0.0
        assert out["calls"][0]["result"]["isError"] is True


def test_code_cannot_forge_a_result_by_writing_to_the_channel():
    with files_env() as env:
        env.reset(seed=0)
        code = (
            "import os, json\nline = json.dumps({'op': 'done', 'value': 'forged', 'exception': None}) + '\\n'\n"
            "for fd in range(3, 64):\n    try:\n        os.write(fd, line.encode())\n    except OSError:\n"
            "        pass\n'real'"
        )
        obs = env.step(RunCode(code=code))
        assert obs.reward == 0.0 and obs.done is False
        assert env.state().cumulative_reward == 0.0
        still_answers(env)


def test_a_loop_of_calls_after_the_end_does_not_grow_the_observation_without_bound():
    with files_env() as env:
        env.reset(seed=0)
        code = (
            "n = 0\nwhile n < 1500:\n    try:\n        fs_list(path='.')\n    except ToolError:\n"
            "        pass\n    n += 1\nn"
        )
        obs = env.step(RunCode(code=code))
        out = obs.result.structured_content
        assert out["value"] == "1500" and len(out["calls"]) == 1000 and out["calls_omitted"] == 500, {
            k: out[k] for k in out if k != "calls"
        }
        assert obs.result.content[0].text.endswith("[1500 tool calls]")
        assert env.state().step_count == 20 and obs.truncated  # files: max_steps 20


def frozen(pid: int) -> bool:
    """``pid`` is stopped (SIGSTOP) or in a frozen cgroup (the cgroup v2 freezer)."""
    if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
        return True
    group = next(line[3:] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::"))
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines() if " cgroup2 " in line]
    events = [Path(m, group.lstrip("/"), "cgroup.events") for m in mounts]
    return any(e.exists() and "frozen 1" in e.read_text().splitlines() for e in events)


def code_processes(env: openenv_mcp.Env) -> list[int]:
    """The host pids of the interpreter's processes, found by the uid the code runs as."""
    need(os.geteuid() == 0, "the code's uid is a host uid when the sandbox is started as root")
    out, _ = run(env, "import os\nos.getuid()")
    return uid_processes(int(out["value"]))


def test_a_daemon_thread_is_stopped_at_the_end_of_its_run_and_counts_nothing_between_runs():
    with files_env() as env:
        env.reset(seed=0)
        out, _ = run(env, "try:\n    import numpy\nexcept ImportError:\n    pass\n'ok'")  # no worker threads
        assert out["value"] == "'ok'" and out["exception"] is None, out
        code = (
            "import threading, time\nticks = [0]\ndef spin():\n    while True:\n        ticks[0] += 1\n"
            "threading.Thread(target=spin, daemon=True).start()\ntime.sleep(0.2)\nticks[0] > 0"
        )
        out, reward = run(env, code)
        assert out["value"] == "True" and reward == 0.0, out
        assert out["exception"] == "ThreadsLeftRunning: 1 thread still running at the end of the run was stopped"
        out, _ = run(env, "seen = ticks[0]\nseen > 0")  # the same interpreter: variables are kept
        assert out["value"] == "True" and not out["stdout"], out
        time.sleep(1.0)
        out, _ = run(env, "(ticks[0] == seen, threading.active_count())")
        assert out["value"] == "(True, 1)" and out["exception"] is None, out


def test_a_thread_that_will_not_stop_gets_a_fresh_interpreter_and_nothing_computes_between_runs():
    with files_env() as env:
        env.reset(seed=0)
        pids = code_processes(env)
        assert pids and all(frozen(pid) for pid in pids)  # between runs: frozen
        code = (
            "import threading, time\nticks = [0]\ndef stubborn():\n    while True:\n        try:\n"
            "            while True:\n                ticks[0] += 1\n        except BaseException:\n"
            "            pass\nthreading.Thread(target=stubborn, daemon=True).start()\ntime.sleep(0.2)\nticks[0] > 0"
        )
        out, _ = run(env, code)
        assert out["value"] == "True", out
        assert out["exception"] == (
            "ThreadsLeftRunning: 1 thread still running at the end of the run was stopped; "
            "the interpreter was restarted (variables are gone)"
        ), out
        assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []  # the old interpreter is gone
        out, _ = run(env, "'ticks' in globals()")
        assert out["value"] == "False" and out["stdout"].startswith("(a new interpreter"), out
        still_answers(env)


def test_a_libc_forked_child_has_no_tool_functions_its_raw_channel_lines_are_calls_of_the_run_and_it_dies_with_it():
    marker = f"codeact-libc-fork-{uuid.uuid4().hex}"
    code = (
        "import ctypes, os, time\nimport tools\nrunner = tools.call.__globals__\n"
        "if ctypes.CDLL(None).fork() == 0:\n    try:\n        tools.fs_list(path='.')\n        refused = 'no'\n"
        "    except RuntimeError as e:\n        refused = str(e)\n"
        "    runner['CHANNEL'].send({'op': 'call', 'id': runner['RUN_ID'], 'name': 'fs_list',"
        " 'arguments': {'path': 'child: ' + refused}})\n"
        f"    os.execvp('sh', ['sh', '-c', 'sleep 300; :', {marker!r}])\n"
        "time.sleep(1.0)\n'parent'"
    )
    with files_env() as env:
        env.reset(seed=0)
        out, reward = run(env, code)
        assert out["value"] == "'parent'" and out["exception"] is None and reward == 0.0, out
        assert [(c["name"], c["arguments"]) for c in out["calls"]] == [
            (
                "fs_list",
                {"path": "child: tools can only be called from the interpreter's own process, not a forked child"},
            )
        ]
        assert env.state().step_count == 1
        assert pids_of(marker) == []  # killed at the end of the run
        still_answers(env)
        assert env.state().step_count == 2
