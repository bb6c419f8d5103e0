"""perms-shared-dir: ownership, modes and what each user can really do."""

import grp
import os
import pwd
import stat
import subprocess
import sys

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

ROOT = "/srv/project"
KEY = "/srv/project/keys/deploy.key"
checks = Checks()


def as_user(user, argv):
    """Run argv as `user` with its groups (from /etc/group); the exit code."""
    return subprocess.run(
        ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *argv],
        capture_output=True,
        timeout=30,
        check=False,
    ).returncode


expected = {}
base = "/tests/expected/project"
for folder, _, files in os.walk(base):
    for name in files:
        rel = os.path.relpath(os.path.join(folder, name), base)
        expected[rel] = read(os.path.join(folder, name))
for rel, content in expected.items():
    checks.guard(f"{rel} keeps its content", read(os.path.join(ROOT, rel)) == content)

try:
    devs = grp.getgrnam("devs")
except KeyError:
    devs = None
checks.goal("group devs exists", devs is not None)
gid = devs.gr_gid if devs else -1
members = set(devs.gr_mem) if devs else set()
checks.goal("alice and bob are in devs", {"alice", "bob"} <= members)
checks.goal("carol is not in devs", devs is not None and "carol" not in members)

st = os.lstat(ROOT)
checks.goal(
    "/srv/project is root:devs 2770", st.st_uid == 0 and st.st_gid == gid and stat.S_IMODE(st.st_mode) == 0o2770
)
dirs_ok = files_ok = True
for folder, dirs, files in os.walk(ROOT):
    for name in dirs:
        s = os.lstat(os.path.join(folder, name))
        mode = stat.S_IMODE(s.st_mode)
        dirs_ok &= s.st_gid == gid and mode & 0o2070 == 0o2070 and mode & 0o007 == 0
    for name in files:
        path = os.path.join(folder, name)
        if path == KEY:
            continue
        s = os.lstat(path)
        mode = stat.S_IMODE(s.st_mode)
        files_ok &= stat.S_ISREG(s.st_mode) and s.st_gid == gid and mode & 0o060 == 0o060 and mode & 0o007 == 0
checks.goal("every folder below is devs, g+rwxs, nothing for others", dirs_ok)
checks.goal("every file below is devs, g+rw, nothing for others", files_ok)
k = os.lstat(KEY) if os.path.lexists(KEY) else None
checks.goal(
    "deploy.key is alice's, mode 600",
    k is not None
    and stat.S_ISREG(k.st_mode)
    and k.st_uid == pwd.getpwnam("alice").pw_uid
    and stat.S_IMODE(k.st_mode) == 0o600,
)

# What the users can really do (setgid inheritance, the key, carol kept out).
probe = "/srv/project/docs/.bob-was-here"
made = as_user("bob", ["sh", "-c", f"umask 007; echo hi > {probe}"]) == 0
inherited = made and os.lstat(probe).st_gid == gid
if os.path.lexists(probe):
    os.unlink(probe)
checks.goal("bob can create a file in docs/ and it gets the group devs", inherited)
alice_reads = as_user("alice", ["cat", KEY]) == 0
checks.goal("alice can read deploy.key and bob cannot", alice_reads and as_user("bob", ["cat", KEY]) != 0)
checks.goal("carol cannot list /srv/project", as_user("carol", ["ls", ROOT]) != 0)
checks.finish()
