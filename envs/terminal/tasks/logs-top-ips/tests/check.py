"""logs-top-ips: /app/report.txt holds the top 5 addresses by 404 count."""

import collections
import hashlib
import io
import runpy
import sys
from contextlib import redirect_stdout

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
buf = io.StringIO()
with redirect_stdout(buf):
    runpy.run_path("/tests/gen.py")
log = buf.getvalue()
counts = collections.Counter()
for line in log.splitlines():
    fields = line.split('"')
    status = fields[2].split()[0]
    if status == "404":
        counts[line.split()[0]] += 1
expected = [f"{n} {ip}" for ip, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]

current = read("/app/logs/access.log", 64 * 1024 * 1024)
checks.guard(
    "the log is unchanged",
    current is not None and hashlib.sha256(current.encode()).digest() == hashlib.sha256(log.encode()).digest(),
)
report = read("/app/report.txt")
lines = [line.strip() for line in (report or "").strip().splitlines()]
checks.goal("report.txt has exactly 5 lines", len(lines) == 5)
for i, want in enumerate(expected):
    checks.goal(f"line {i + 1} is {want!r}", i < len(lines) and lines[i] == want)
checks.finish()
