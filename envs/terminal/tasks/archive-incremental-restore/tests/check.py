"""archive-incremental-restore: /app/restore/docs is the state after Wednesday's backup."""

import os
import sys

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
want = {
    "plan.txt": "plan v2\n",
    "notes.txt": "meeting notes\n",
    "reports/q1.txt": "q1 numbers\n",
    "reports/q2.txt": "q2 numbers\n",
}
for name in ("docs-1-mon-full.tar.gz", "docs-2-tue-incr.tar.gz", "docs-3-wed-incr.tar.gz", "docs-4-thu-incr.tar.gz"):
    checks.guard(f"{name} is still there", os.path.isfile(f"/srv/backups/{name}"))
root = "/app/restore/docs"
found = {}
if os.path.isdir(root) and not os.path.islink(root):
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = read(path)
checks.goal("plan.txt has Tuesday's content (not Thursday's)", found.get("plan.txt") == want["plan.txt"])
checks.goal("notes.txt (added Wednesday) is there", found.get("notes.txt") == want["notes.txt"])
checks.goal("reports/q1.txt (deleted Thursday) is there", found.get("reports/q1.txt") == want["reports/q1.txt"])
checks.goal("reports/q2.txt is there", found.get("reports/q2.txt") == want["reports/q2.txt"])
checks.goal("scratch.txt (deleted Wednesday) is not, nor anything else", bool(found) and set(found) == set(want))
checks.finish()
