"""Checks for this task's verifier (standard library only; run as `python3 -I -S /tests/check.py`).

Whatever the agent left behind is untrusted: files are read bounded and without following
links where it matters, and any code of the agent's that a check must run (a build, a script, a
program) runs as the unprivileged user `nobody`, in a fresh copy, with a timeout, so it can
neither touch the reward file (root's /logs/verifier) nor the checks.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile

NOBODY = 65534
REWARD = "/logs/verifier/reward.json"


def read(path, limit=4 * 1024 * 1024):
    """The text of the regular file `path` (at most `limit` bytes), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not os.path.isfile(f"/proc/self/fd/{fd}"):
            return None
        return os.read(fd, limit).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def run_as_nobody(argv, cwd="/tmp", timeout=60, env=None, stdin=None):
    """Run `argv` as nobody; (exit code or None on timeout, stdout, stderr)."""
    base = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
    full = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *argv]
    proc = subprocess.Popen(
        full,
        cwd=cwd,
        env={**base, **(env or {})},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin.encode() if isinstance(stdin, str) else stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, "", "timed out"
    finally:
        subprocess.run(["pkill", "-KILL", "-u", str(NOBODY)], check=False)
    return proc.returncode, out.decode(errors="replace")[:1_000_000], err.decode(errors="replace")[:100_000]


def _specials(folder, names):
    """FIFOs, sockets and devices are never copied (opening one could block the checks)."""
    import stat

    out = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            out.append(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            out.append(name)
    return out


def copy_for_nobody(src):
    """A fresh copy of folder `src` owned by nobody (links kept as links); its path."""
    dest = tempfile.mkdtemp(prefix="check-")
    shutil.rmtree(dest)
    shutil.copytree(src, dest, symlinks=True, ignore=_specials)
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), NOBODY, NOBODY)
    os.chown(dest, NOBODY, NOBODY)
    return dest


class Checks:
    """Goals (each earns a share of the reward) and guards (any failing one zeroes it)."""

    def __init__(self):
        self.goals = []
        self.guards = []

    def goal(self, name, ok):
        self.goals.append((name, bool(ok)))
        return bool(ok)

    def guard(self, name, ok):
        self.guards.append((name, bool(ok)))
        return bool(ok)

    def finish(self):
        passed = sum(ok for _, ok in self.goals)
        reward = passed / len(self.goals) if self.goals else 0.0
        if not all(ok for _, ok in self.guards):
            reward = 0.0
        for name, ok in self.goals + self.guards:
            print(("PASS " if ok else "FAIL ") + name)
        with open(REWARD, "w") as out:
            json.dump({"reward": reward, "goals_passed": passed, "goals": len(self.goals)}, out)
