"""Reward for ``coding``: the fraction of the task's hidden tests that pass.

After every step the environment (never the agent) checks the workspace:

1. the workspace is fingerprinted (every file's path and bytes, caches such as
   ``__pycache__`` left out); a fingerprint already scored for this task reuses
   its score, so steps that change nothing (reading, running tests) cost nothing;
2. otherwise the workspace is copied to a private temp folder, the task's hidden
   test file (``data.hidden``, kept in ``hidden/`` next to this file and never in
   the workspace) is copied beside it, and ``runner.py`` runs every ``test_*``
   function of it in a fresh ``python -I`` under bubblewrap: no network, the root
   read-only, private ``/tmp``, this env's ``hidden/`` folder masked, only the
   copy writable, ``RLIMIT_AS`` 1 GiB, 5 s per test, 30 s in all;
3. score = tests passed / ``data.hidden_tests`` (a project that fails to import,
   or a test file whose tests vanished, scores the missing tests as failed).

Without ``bwrap`` (a laptop) the runner runs as a plain child process with the
same limits except the namespaces. The run happens in the same process as the
code under test, so a package written to subvert the runner could; the runner
keeps the easy ways shut (its report goes to a private descriptor under a
random token read before the project is imported; no conftest, ini or plugin is
loaded), and the sandbox keeps the attempt away from the host.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.types import Score

ENV_DIR = Path(__file__).resolve().parent
RUNNER = ENV_DIR / "runner.py"
HIDDEN_DIR = ENV_DIR / "hidden"
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"}
TIMEOUT = 30.0
MEMORY = 1024 * 1024 * 1024
_CACHE: OrderedDict[tuple[str, str], tuple[int, dict[str, Any]]] = OrderedDict()
_CACHE_SIZE = 4096


def fingerprint(workspace: Path) -> str:
    """A digest of every file's relative path and bytes (links by target), caches left out."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(workspace):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, workspace)
            digest.update(rel.encode() + b"\0")
            if os.path.islink(path):
                digest.update(b"link:" + os.readlink(path).encode())
            elif os.path.isfile(path):  # regular files only: a FIFO must never block the reward
                with open(path, "rb") as f:
                    while chunk := f.read(1 << 20):
                        digest.update(chunk)
    return digest.hexdigest()


def _ignore(folder: str, names: list[str]) -> set[str]:
    """What the copy leaves out: caches, bytecode, and anything but files, folders and links
    (copying a FIFO or a device would block or fail)."""
    out = set()
    for name in names:
        if name in SKIP_DIRS or name.endswith((".pyc", ".pyo")):
            out.add(name)
            continue
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            out.add(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            out.add(name)
    return out


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _command(project: Path, check: Path) -> tuple[list[str], str, str]:
    """(argv, project path as the runner sees it, test file as the runner sees it)."""
    # The base interpreter, not a venv's symlink: the runner needs only the standard library,
    # and a venv inside a checkout under /tmp would vanish behind the sandbox's private /tmp.
    python = [os.path.realpath(sys.executable), "-I", "-B"]
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return [*python, str(check / "runner.py"), str(project), str(check / "test_hidden.py")], str(project), ""
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if HIDDEN_DIR.is_dir():
        argv += ["--tmpfs", str(HIDDEN_DIR)]
    argv += ["--ro-bind", str(check), "/tmp/check",
             "--bind", str(project), "/tmp/project", "--chdir", "/tmp/project", "--",
             *python, "/tmp/check/runner.py", "/tmp/project", "/tmp/check/test_hidden.py"]
    return argv, "/tmp/project", "/tmp/check/test_hidden.py"


def run_hidden(workspace: Path, hidden: Path) -> dict[str, Any]:
    """Run the hidden test file against a copy of ``workspace``; the runner's report."""
    with tempfile.TemporaryDirectory(prefix="openenv-coding-check-") as tmp:
        project, check = Path(tmp) / "project", Path(tmp) / "check"
        shutil.copytree(workspace, project, symlinks=True, ignore=_ignore)
        check.mkdir()
        shutil.copyfile(hidden, check / "test_hidden.py")
        shutil.copyfile(RUNNER, check / "runner.py")
        os.chmod(tmp, 0o755)
        argv, _, _ = _command(project, check)
        token = secrets.token_hex(16)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
        try:
            proc = subprocess.run(argv, input=token + "\n", capture_output=True, text=True, env=env,
                                  timeout=TIMEOUT, preexec_fn=_limits, cwd=str(project))
        except subprocess.TimeoutExpired:
            return {"passed": [], "failed": [], "error": f"the hidden tests took longer than {TIMEOUT:g} s"}
        for line in proc.stdout.splitlines():
            if line.startswith(token):
                return json.loads(line[len(token):])
        return {"passed": [], "failed": [], "error": f"the test runner exited with code {proc.returncode} "
                                                     f"without a report: {proc.stderr[-300:]}"}


def evaluate(data: dict[str, Any], workspace: Path, task_id: str = "") -> tuple[int, dict[str, Any]]:
    """(tests passed, info) for a task's ``data`` against ``workspace`` (cached by fingerprint)."""
    key = (task_id or data["hidden"], fingerprint(workspace))
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    report = run_hidden(workspace, ENV_DIR / data["hidden"])
    passed = len(report["passed"])
    info: dict[str, Any] = {"hidden_passed": passed, "hidden_tests": data["hidden_tests"]}
    if report.get("error"):
        info["hidden_error"] = report["error"]
    _CACHE[key] = (passed, info)
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return passed, info


async def score(ctx) -> Score:
    data = ctx.task.data
    passed, info = await anyio.to_thread.run_sync(evaluate, data, ctx.workspace, ctx.task.id)
    total = data["hidden_tests"]
    return Score(score=min(passed, total) / total, info=dict(info))
