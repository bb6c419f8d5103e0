"""Git helpers for the checks: every git command runs as nobody, on a fresh clone of the agent's
repository (a clone carries no config, hooks or replace refs of the agent's)."""

import os
import tempfile

from harness import NOBODY, run_as_nobody

_CONFIG = tempfile.NamedTemporaryFile("w", prefix="check-gitconfig-", delete=False)
_CONFIG.write("[safe]\n\tdirectory = *\n")  # the repositories are root's; git runs as nobody
_CONFIG.close()
os.chmod(_CONFIG.name, 0o644)
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": _CONFIG.name,
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "HOME": "/tmp",
}


def clone(source):
    """A bare clone of `source` (all branches and tags) owned by nobody; its path, or None."""
    dest = tempfile.mkdtemp(prefix="clone-")
    os.chown(dest, NOBODY, NOBODY)
    target = os.path.join(dest, "repo.git")
    code, _, _ = run_as_nobody(
        ["git", "clone", "--quiet", "--bare", "--no-local", "--no-hardlinks", source, target],
        cwd=dest,
        timeout=120,
        env=GIT_ENV,
    )
    return target if code == 0 else None


def git(repo, *args):
    """`git ARGS` in `repo` as nobody; its stdout ('' on failure)."""
    code, out, _ = run_as_nobody(["git", *args], cwd=repo, timeout=60, env=GIT_ENV)
    return out if code == 0 else ""


def build_reference(script):
    """The original repository, made again by the task's own script in a fresh folder (as nobody)."""
    dest = tempfile.mkdtemp(prefix="ref-")
    os.chown(dest, NOBODY, NOBODY)
    code, _, err = run_as_nobody(["sh", script, os.path.join(dest, "repo")], cwd=dest, timeout=120, env=GIT_ENV)
    if code != 0:
        raise RuntimeError(f"the reference repository did not build: {err[-500:]}")
    return os.path.join(dest, "repo")


def tree_listing(repo, rev):
    """`path blob-sha` lines of `rev`'s tree (sorted)."""
    out = git(repo, "ls-tree", "-r", "--full-tree", rev)
    return sorted(f"{line.split()[3]} {line.split()[2]}" for line in out.splitlines() if line.strip())
