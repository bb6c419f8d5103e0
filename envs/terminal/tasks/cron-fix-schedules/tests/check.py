"""cron-fix-schedules: www's crontab (the spool file) has the right schedules, the rest unchanged."""

import grp
import os
import pwd
import stat
import sys

sys.path.insert(0, "/tests")
from cronlib import entries  # noqa: E402
from harness import Checks, read  # noqa: E402

checks = Checks()
spool = "/var/spool/cron/crontabs/www"
st = os.lstat(spool) if os.path.lexists(spool) else None
text = read(spool) or ""
try:
    jobs = entries(text, with_user=False)
except ValueError:
    jobs = []
by_command = {command: sched for sched, _, command in jobs}
ALL_DAYS, ALL_MONTHS = set(range(1, 32)), set(range(1, 13))
report = by_command.get("/srv/www/bin/report >> /srv/www/logs/report.log 2>&1")
cleanup = by_command.get("/srv/www/bin/cleanup-uploads")
rotate = by_command.get("/srv/www/bin/rotate-log")
checks.guard(
    "the crontab still has exactly its three jobs, commands unchanged",
    len(jobs) == 3 and None not in (report, cleanup, rotate),
)
checks.guard("rotate-log still runs every night at 00:05", rotate == [{5}, {0}, ALL_DAYS, ALL_MONTHS, set(range(7))])
checks.guard("MAILTO is still empty", 'MAILTO=""' in text.replace(" ", ""))
checks.guard(
    "the crontab is installed as crontab installs it (owned by www, mode 600)",
    st is not None
    and stat.S_ISREG(st.st_mode)
    and st.st_uid == pwd.getpwnam("www").pw_uid
    and st.st_gid in (0, grp.getgrnam("crontab").gr_gid)
    and stat.S_IMODE(st.st_mode) == 0o600,
)
checks.goal(
    "report: every 15 minutes, 09:00-17:45, Monday-Friday",
    report == [{0, 15, 30, 45}, set(range(9, 18)), ALL_DAYS, ALL_MONTHS, {1, 2, 3, 4, 5}],
)
checks.goal("cleanup-uploads: Sundays at 23:00", cleanup == [{0}, {23}, ALL_DAYS, ALL_MONTHS, {0}])
checks.finish()
