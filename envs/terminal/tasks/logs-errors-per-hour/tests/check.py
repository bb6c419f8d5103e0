"""logs-errors-per-hour: /app/errors.csv counts ERROR entries (not continuation lines) per hour."""

import collections
import gzip
import hashlib
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
ref = tempfile.mkdtemp()
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", ref], check=True)
counts = collections.Counter()
for name in sorted(os.listdir(ref)):
    path = os.path.join(ref, name)
    data = gzip.open(path).read() if name.endswith(".gz") else open(path, "rb").read()
    with open(f"/var/log/myapp/{name}", "rb") as current:
        checks.guard(
            f"{name} is unchanged",
            hashlib.sha256(current.read()).digest() == hashlib.sha256(open(path, "rb").read()).digest(),
        )
    for line in data.decode().splitlines():
        m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d):\d\d:\d\dZ \[ERROR\]", line)
        if m:
            counts[m.group(1)] += 1
want = ["hour,errors"] + [f"{hour},{n}" for hour, n in sorted(counts.items())]
got = [line.strip() for line in (read("/app/errors.csv") or "").strip().splitlines()]
checks.goal("the header is hour,errors", got[:1] == ["hour,errors"])
checks.goal(
    "one line per hour with errors, in order", [g.split(",")[0] for g in got[1:]] == [w.split(",")[0] for w in want[1:]]
)
right = sum(1 for g in got[1:] if g in set(want[1:]))
checks.goal("every count is right", got == want)
checks.goal(
    "at least 90% of the lines are right", len(want) > 1 and right >= 0.9 * (len(want) - 1) and len(got) == len(want)
)
checks.finish()
