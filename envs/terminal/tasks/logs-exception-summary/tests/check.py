"""logs-exception-summary: the final exception of each failure, counted by type."""

import collections
import io
import re
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
checks.guard("the log is unchanged", read("/var/log/worker/worker.log", 64 << 20) == log)
counts = collections.Counter()
pending = None
for line in log.splitlines():
    if re.match(r"^\d{4}-\d\d-\d\d ", line):
        if pending:
            counts[pending] += 1
        pending = None
    m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning)?): ", line)
    if m and not line.startswith(" "):
        pending = m.group(1)
if pending:
    counts[pending] += 1
want = [f"{n} {t}" for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
got = [line.strip() for line in (read("/app/exceptions.txt") or "").strip().splitlines() if line.strip()]
checks.goal("one line per exception type", len(got) == len(want) and {g.split()[-1] for g in got if g} == set(counts))
checks.goal("the counts and the order are right", got == want)
checks.goal("chained tracebacks count their final exception only", got == want and "ValueError" in counts)
checks.finish()
