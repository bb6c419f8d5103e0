"""cron-nightly-backup: /etc/cron.d/db-backup is valid cron, runs as backup at 02:30, logs, no mail.
The job's command is then run the way cron would (sh -c, as the backup user, from its home)."""

import os
import pwd
import re
import stat
import sys

sys.path.insert(0, "/tests")
import subprocess  # noqa: E402

from cronlib import entries  # noqa: E402
from harness import Checks, read  # noqa: E402

checks = Checks()
path = "/etc/cron.d/db-backup"
text = read(path)
st = os.lstat(path) if os.path.lexists(path) else None
checks.goal("/etc/cron.d/db-backup is a regular file", st is not None and stat.S_ISREG(st.st_mode))
checks.goal(
    "it is owned by root and not writable by group or others",
    st is not None and st.st_uid == 0 and not st.st_mode & 0o022,
)
try:
    jobs = entries(text or "", with_user=True)
except ValueError:
    jobs = []
checks.goal("it holds exactly one valid job", len(jobs) == 1)
job = jobs[0] if len(jobs) == 1 else None
checks.goal(
    "the job runs every day at 02:30",
    job is not None and job[0] == [{30}, {2}, set(range(1, 32)), set(range(1, 13)), set(range(0, 7))],
)
checks.goal("the job runs as backup", job is not None and job[1] == "backup")
command = job[2] if job else ""
checks.goal("it runs /opt/backup/backup.sh", "/opt/backup/backup.sh" in command)
checks.goal("MAILTO is empty", re.search(r'^\s*MAILTO\s*=\s*("")?\s*$', text or "", re.M) is not None)
checks.guard(
    "backup.sh is unchanged",
    (read("/opt/backup/backup.sh") or "").startswith("#!/bin/sh\n# Dump the (pretend) database"),
)
ran = False
if job is not None and job[1] == "backup":
    user = pwd.getpwnam("backup")
    before = read("/var/log/backup/db.log") or ""
    result = subprocess.run(
        [
            "setpriv",
            f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}",
            "--init-groups",
            "--",
            "/bin/sh",
            "-c",
            command,
        ],
        cwd=user.pw_dir if os.path.isdir(user.pw_dir) else "/",
        env={"PATH": "/usr/bin:/bin", "HOME": user.pw_dir, "SHELL": "/bin/sh"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    after = read("/var/log/backup/db.log") or ""
    ran = (
        result.stdout == b""
        and after.startswith(before)
        and re.search(r"backup \d{8}-\d{6} ok\n$", after[len(before) :]) is not None
    )
checks.goal("run as cron would, the job appends its output to /var/log/backup/db.log", ran)
checks.finish()
