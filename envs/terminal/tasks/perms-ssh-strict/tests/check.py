"""perms-ssh-strict: what StrictModes checks (owners and modes of the home, .ssh and its files)."""

import os
import pwd
import stat
import sys

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
deploy = pwd.getpwnam("deploy")
for name in sorted(os.listdir("/tests/expected")):
    checks.guard(f"{name} keeps its content", read(f"/home/deploy/.ssh/{name}") == read(f"/tests/expected/{name}"))


def st(path):
    return os.lstat(path) if os.path.lexists(path) else None


home = st("/home/deploy")
checks.goal(
    "/home/deploy is deploy's, not group/other-writable",
    home is not None and stat.S_ISDIR(home.st_mode) and home.st_uid == deploy.pw_uid and not home.st_mode & 0o022,
)
ssh = st("/home/deploy/.ssh")
checks.goal(
    ".ssh is deploy:deploy 700",
    ssh is not None
    and stat.S_ISDIR(ssh.st_mode)
    and (ssh.st_uid, ssh.st_gid) == (deploy.pw_uid, deploy.pw_gid)
    and stat.S_IMODE(ssh.st_mode) == 0o700,
)
for name, mode in (
    ("authorized_keys", 0o600),
    ("id_ed25519", 0o600),
    ("id_ed25519.pub", 0o644),
    ("known_hosts", 0o644),
):
    s = st(f"/home/deploy/.ssh/{name}")
    checks.goal(
        f"{name} is deploy:deploy {mode:o}",
        s is not None
        and stat.S_ISREG(s.st_mode)
        and (s.st_uid, s.st_gid) == (deploy.pw_uid, deploy.pw_gid)
        and stat.S_IMODE(s.st_mode) == mode,
    )
checks.finish()
