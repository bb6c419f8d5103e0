"""The hostile agent against the ``coding`` reward: every attack is run as an agent runs it, through
the environment's tools (``fs_write`` / ``shell_run`` / ``python_run``), on a server running as root.

The reward imports the agent's project to run the hidden tests, so whatever the agent writes at a
module's top level runs inside the reward. Each test asserts that the attack does not forge the
reward (it stays at the honest value), that no host secret or grading data reaches the observation,
that nothing is left on the host (no setuid file, no check folder), that the reward neither hangs
nor raises, and that the episode keeps answering (an honest fix afterwards scores 1.0).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp.testing import need

STEP_SECONDS = 90
"""A step (tool call + reward) that takes longer than this is a hung reward."""


@pytest.fixture
def coding(tmp_path, monkeypatch):
    """The coding env with its workspaces, and every temp folder the reward makes, in ``work``."""
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes code")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    env = openenv_mcp.make("coding", workdir=work)
    try:
        yield env, work
    finally:
        env.close()


def call(env, name: str, **arguments):
    """One step, in a thread: a step that does not come back in time fails the test (never hangs it)."""
    box: dict = {}

    def run() -> None:
        try:
            box["obs"] = env.step({"type": "call_tool", "name": name, "arguments": arguments})
        except BaseException as e:  # noqa: BLE001 - reported below
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(STEP_SECONDS)
    assert not thread.is_alive(), f"step {name} did not come back within {STEP_SECONDS} s: the reward hangs"
    if "error" in box:
        raise AssertionError(f"step {name} raised {type(box['error']).__name__}: {box['error']}") from box["error"]
    return box["obs"]


def start(env, task_id: str):
    env.reset(seed=0, task_id=task_id)
    return next(t for t in env.unwrapped.environment.tasks.tasks if t.id == task_id)


def workspace(env) -> Path:
    return env.unwrapped.episode.workspace.path


def seed_text(env, task, rel: str) -> str:
    """A file of the task's seed project, as the episode started with it."""
    return (env.unwrapped.environment.spec.path(task.workspace) / rel).read_text()


def plant(env, task, payload: str) -> tuple[str, str]:
    """Prepend ``payload`` to the package ``__init__.py`` the hidden tests import; (path, original)."""
    package = task.data["module"].split("/")[0]
    path = f"{package}/__init__.py"
    original = (workspace(env) / path).read_text()
    obs = call(env, "fs_write", path=path, content=payload + "\n" + original)
    assert not obs.result.is_error, obs.result
    return path, original


def honest_fix_scores_one(env, task, planted: str | None = None, original: str = "") -> None:
    """The episode still answers and the reward is still honest: remove the payload, apply the fix."""
    if planted is not None:
        call(env, "fs_write", path=planted, content=original)
    fix = env.unwrapped.environment.trajectory(task, "reference")[-1]
    obs = call(env, fix.name, **fix.arguments)
    assert not obs.result.is_error, obs.result
    assert env.state().cumulative_reward == 1.0, obs.info
    assert obs.info["hidden_passed"] == task.data["hidden_tests"]


def host_secrets() -> list[str]:
    """Lines of root-only host files that must never reach an observation."""
    lines = Path("/etc/shadow").read_text().splitlines()
    return [line for line in lines if len(line) >= 8]


def leftovers(work: Path) -> list[str]:
    """What the reward left in the work folder (workspaces and the servers' homes are expected)."""
    return sorted(p.name for p in work.iterdir() if not p.name.startswith("openenv-mcp-"))


class Watcher:
    """Polls the work folder in a thread while a step runs: files named ``mark``, the modes of
    the reward's folders, and the real disk used (allocated blocks) under it."""

    def __init__(self, work: Path, mark: str = "") -> None:
        self.work, self.mark = work, mark
        self.found: list[tuple[str, int, int]] = []
        self.open_folders: set[str] = set()
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._scan()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._scan()
            time.sleep(0.02)

    def _scan(self) -> None:
        used = 0
        for folder, dirs, files in os.walk(self.work):
            if folder.count(os.sep) - str(self.work).count(os.sep) > 8:
                dirs[:] = []
            for name in dirs + files:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                used += st.st_blocks * 512
                if folder == str(self.work) and stat.S_ISDIR(st.st_mode) and st.st_mode & 0o005:
                    if not name.startswith("openenv-mcp-"):
                        self.open_folders.add(name)
                if self.mark and name == self.mark:
                    self.found.append((path, st.st_mode, st.st_uid))
        self.peak_bytes = max(self.peak_bytes, used)


def test_a_module_payload_cannot_read_host_files_into_the_observation(coding):
    env, work = coding
    task = start(env, "fizzbuzz-order")
    payload = """
import sys
_loot = []
for _p in ("/etc/shadow", "/proc/1/environ"):
    try:
        _loot.append(open(_p, errors="replace").read())
    except OSError as _e:
        _loot.append(type(_e).__name__)
_text = "LOOT:" + "|".join(_loot) + "\\x1b[2J\\x00"
_f = sys._getframe()
while _f is not None:
    for _v in list(_f.f_locals.values()):
        if isinstance(_v, dict) and "error" in _v:
            _v["error"] = _text
    _f = _f.f_back
raise RuntimeError(_text + "x" * 100000)
"""
    planted, original = plant(env, task, payload)
    obs = call(env, "fs_read", path=planted)
    dump = obs.model_dump_json()
    for secret in host_secrets():
        assert secret not in dump
    assert obs.reward == 0.0 and env.state().cumulative_reward == 0.0
    error = obs.info["hidden_error"]
    assert error.startswith("importing the tests failed: RuntimeError: LOOT:PermissionError")
    assert len(error) <= 300 and error.isprintable(), error  # bounded, no control characters
    honest_fix_scores_one(env, task, planted, original)


def test_a_stack_walking_payload_cannot_forge_a_full_score(coding):
    env, work = coding
    task = start(env, "fizzbuzz-order")
    # What the payload did (fill the runner's report with 99 passes), plus every other
    # channel the project's code can reach: the report encoder and every descriptor it may write.
    payload = """
import json, os, sys
_fake = {"passed": ["test_forged_%d" % _i for _i in range(99)], "failed": [], "error": None,
         "tests": [{"values": [True] * 9}] * 99}
_f = sys._getframe()
while _f is not None:
    for _v in list(_f.f_locals.values()):
        if isinstance(_v, dict) and "passed" in _v:
            _v["passed"] = list(_fake["passed"])
            _v["failed"] = []
    _f = _f.f_back
_dumps = json.dumps
json.dumps = lambda *a, **k: _dumps(_fake)
for _fd in range(1, 20):
    try:
        os.write(_fd, (_dumps(_fake) + "\\n").encode())
    except OSError:
        pass
"""
    planted, original = plant(env, task, payload)
    obs = call(env, "shell_run", command="true")
    assert obs.reward == 0.0 and env.state().cumulative_reward == 0.0
    assert obs.info["hidden_passed"] == 0 and obs.info["hidden_tests"] == 4
    assert not env.state().done
    honest_fix_scores_one(env, task, planted, original)


def test_an_always_equal_return_value_cannot_pass_the_hidden_tests(coding):
    env, work = coding
    task = start(env, "fizzbuzz-order")
    obs = call(
        env,
        "fs_write",
        path=task.data["module"],
        content="""
class _Anything(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__

def fizzbuzz(n):
    return _Anything("")
""",
    )
    assert not obs.result.is_error
    assert obs.reward == 0.0 and env.state().cumulative_reward == 0.0
    assert obs.info["hidden_passed"] == 0
    honest_fix_scores_one(env, task, task.data["module"], seed_text(env, task, task.data["module"]))


def test_the_graders_isclose_can_be_neither_patched_nor_shadowed(coding):
    env, work = coding
    task = start(env, "discount-percent")  # every hidden test is `assert math.isclose(...)`
    planted, original = plant(env, task, "import math\nmath.isclose = lambda *a, **k: True\n")
    obs = call(env, "shell_run", command="true")
    assert obs.reward == 0.0 and env.state().cumulative_reward == 0.0
    assert obs.info["hidden_passed"] == 0
    call(env, "fs_write", path=planted, content=original)
    obs = call(env, "fs_write", path="math.py", content="def isclose(*args, **kwargs):\n    return True\n")
    assert obs.reward == 0.0 and obs.info["hidden_passed"] == 0
    call(env, "fs_delete", path="math.py")
    honest_fix_scores_one(env, task)


def test_a_payload_cannot_leave_a_setuid_binary_or_a_folder_on_the_host(coding):
    env, work = coding
    task = start(env, "roman-subtractive")
    mark = f"setuid-{uuid.uuid4().hex}"
    payload = f"""
import os, shutil, time
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _d in {{os.getcwd(), _here, os.environ.get("HOME", "/tmp"), "/tmp", "/var/tmp"}}:
    try:
        _p = os.path.join(_d, {mark!r})
        shutil.copyfile("/usr/bin/id", _p)
        os.chmod(_p, 0o4755)
    except OSError:
        pass
time.sleep(2)
"""
    with Watcher(work, mark) as watcher:
        planted, original = plant(env, task, payload)
        call(env, "shell_run", command="true")
    assert watcher.found == [], "the reward's payload wrote a file onto the host"
    assert watcher.open_folders == set(), "the reward's check folder was reachable by other users"
    assert leftovers(work) == []
    assert env.state().cumulative_reward == 0.0
    honest_fix_scores_one(env, task, planted, original)
    assert leftovers(work) == []


def test_a_fifo_raced_into_the_workspace_never_hangs_the_reward(coding):
    env, work = coding
    task = start(env, "leap-century")
    churn = """
import os, threading
os.makedirs("race", exist_ok=True)
def _churn():
    while True:
        for n in range(40):
            try:
                os.mkfifo(f"race/.p{n}")
                os.replace(f"race/.p{n}", f"race/f{n}")
                with open(f"race/.r{n}", "w") as fh:
                    fh.write("x")
                os.replace(f"race/.r{n}", f"race/f{n}")
            except OSError:
                pass
threading.Thread(target=_churn, daemon=True).start()
"""
    try:
        obs = call(env, "python_run", code=churn)
        assert not obs.result.is_error, obs.result
        for n in range(8):
            obs = call(env, "fs_write", path="note.txt", content=f"step {n}\n")
            assert not obs.result.is_error and obs.reward == 0.0
        call(env, "python_restart")  # the churn ends with the interpreter
        honest_fix_scores_one(env, task)
    finally:  # with a reward blocked on a FIFO, give it a writer so the test run can end
        for fifo in (workspace(env) / "race").glob("*"):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass


def test_a_sparse_file_is_never_copied_at_its_apparent_size(coding):
    env, work = coding
    task = start(env, "slugify-lowercase")
    with Watcher(work) as watcher:
        # 200 MiB: past the reward's 64 MiB quota, under the sandbox's file-size limit (file_mb, 256)
        obs = call(env, "shell_run", command="truncate -s 200M big.bin && ls -s big.bin")
        assert obs.result.structured_content["stdout"].split() == ["0", "big.bin"]
    assert watcher.peak_bytes < 64 * 1024 * 1024, f"the reward wrote {watcher.peak_bytes} bytes of disk"
    assert obs.reward == 0.0
    assert obs.info["hidden_error"] == (
        "the workspace holds more than 64 MiB (files counted at their apparent size): the hidden tests were not run"
    )
    call(env, "shell_run", command="rm big.bin")
    honest_fix_scores_one(env, task)


def test_a_project_filling_dev_shm_inside_the_reward_runner_gets_enospc_not_the_hosts_memory(coding):
    """The reward imports the project in its own sandbox: its memory-backed folders are capped too (the
    python server's ``tmpfs_mb``), so a top-level write loop stops at the cap instead of taking 2 GiB."""
    env, _ = coding
    task = start(env, "slugify-lowercase")
    payload = (
        "_w = 0\nwhile _w < 2048:\n    with open('/dev/shm/fill%d' % _w, 'wb') as _f:\n"
        "        _f.write(bytes(8 << 20))\n    _w += 8\n"
    )
    planted, original = plant(env, task, payload)
    obs = call(env, "shell_run", command="true")
    assert obs.reward == 0.0
    assert obs.info["hidden_error"] == "importing the tests failed: OSError: [Errno 28] No space left on device"
    honest_fix_scores_one(env, task, planted, original)


def test_a_churning_build_folder_never_makes_the_reward_raise(coding):
    env, work = coding
    task = start(env, "unique-keep-order")
    churn = """
import os, shutil, threading
def _churn():
    n = 0
    while True:
        n += 1
        try:
            os.makedirs(f"build/{n % 7}/a/b", exist_ok=True)
            for i in range(20):
                with open(f"build/{n % 7}/a/b/f{i}.o", "w") as fh:
                    fh.write("x" * i)
            shutil.rmtree(f"build/{(n + 3) % 7}", ignore_errors=True)
        except OSError:
            pass
threading.Thread(target=_churn, daemon=True).start()
"""
    obs = call(env, "python_run", code=churn)
    assert not obs.result.is_error, obs.result
    for n in range(8):
        obs = call(env, "fs_write", path="note.txt", content=f"step {n}\n")
        assert not obs.result.is_error and obs.reward == 0.0
    call(env, "python_restart")
    honest_fix_scores_one(env, task)


def test_a_deeply_nested_report_never_makes_the_reward_raise(coding):
    env, work = coding
    task = start(env, "chunks-last-partial")
    payload = """
import os, sys
_bomb = "[" * 100000
_f = sys._getframe()
while _f is not None:  # the runner's private report channel, if it can be found
    _loc = _f.f_locals
    if "token" in _loc and "report_out" in _loc:
        _loc["report_out"].write(_loc["token"] + _bomb + "\\n")
        _loc["report_out"].flush()
    _f = _f.f_back
for _fd in range(1, 20):
    try:
        os.write(_fd, (_bomb + "\\n").encode())
    except OSError:
        pass
os._exit(0)
"""
    planted, original = plant(env, task, payload)
    obs = call(env, "shell_run", command="true")
    assert obs.reward == 0.0 and obs.info["hidden_passed"] == 0
    assert obs.info["hidden_error"].startswith("the test runner sent no readable report")
    honest_fix_scores_one(env, task, planted, original)


def test_the_reward_payload_never_sees_the_expected_values(coding):
    env, work = coding
    task = start(env, "roman-subtractive")
    # Everything the project's code can reach from inside the reward: the files named on its
    # command line and next to them, the whole stack's locals and the process's memory maps.
    payload = """
import gc, os, sys
_seen = []
_args = open("/proc/self/cmdline", "rb").read().decode(errors="replace").split("\\0")
for _a in _args:
    for _p in [_a] + ([os.path.join(os.path.dirname(_a), _n) for _n in os.listdir(os.path.dirname(_a))]
                      if _a.startswith("/") and os.path.isdir(os.path.dirname(_a)) else []):
        try:
            if os.path.isfile(_p) and os.path.getsize(_p) < 100000:
                _seen.append(open(_p, errors="replace").read())
        except OSError:
            pass
_f = sys._getframe()
while _f is not None:
    _seen.append(repr(_f.f_locals))
    _f = _f.f_back
_seen += [repr(_o) for _o in gc.get_objects() if isinstance(_o, (dict, list, str)) and "MCM" in repr(_o)[:100000]]
_text = " ".join(_seen)
_at = _text.find("MCM")
raise RuntimeError(_text[max(0, _at - 20):_at + 100] if _at >= 0 else "nothing found")
"""
    planted, original = plant(env, task, payload)
    obs = call(env, "shell_run", command="true")
    assert "MCMXCIV" not in obs.model_dump_json()
    assert obs.info["hidden_error"] == "importing the tests failed: RuntimeError: nothing found"
    honest_fix_scores_one(env, task, planted, original)
