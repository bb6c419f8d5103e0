"""json-events-rollup: per-user statistics over distinct, well-formed events; malformed count."""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
ref = os.path.join(tempfile.mkdtemp(), "events.jsonl")
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", ref], check=True)
checks.guard("events.jsonl is unchanged", read("/app/events.jsonl", 16 << 20) == read(ref, 16 << 20))
seen, stats, malformed = set(), {}, 0
for line in open(ref):
    if not line.strip():
        continue
    try:
        event = json.loads(line)
    except ValueError:
        malformed += 1
        continue
    if event["id"] in seen:
        continue
    seen.add(event["id"])
    s = stats.setdefault(event["user"], {"events": 0, "purchases": 0, "revenue_cents": 0, "ms": 0})
    s["events"] += 1
    s["ms"] += event["ms"]
    if event["type"] == "purchase":
        s["purchases"] += 1
        s["revenue_cents"] += event["cents"]
want = {
    u: {
        "events": s["events"],
        "purchases": s["purchases"],
        "revenue_cents": s["revenue_cents"],
        "avg_ms": round(s["ms"] / s["events"], 1),
    }
    for u, s in stats.items()
}
try:
    got = json.loads(read("/app/summary.json") or "null")
except ValueError:
    got = None
got = got if isinstance(got, dict) else {}
checks.goal("summary.json has one entry per user", set(got) == set(want))
for key in ("events", "purchases", "revenue_cents", "avg_ms"):
    checks.goal(
        f"every user's {key} is right",
        set(got) == set(want) and all(isinstance(got[u], dict) and got[u].get(key) == want[u][key] for u in want),
    )
checks.goal("malformed.txt counts the malformed lines", (read("/app/malformed.txt") or "").strip() == str(malformed))
checks.finish()
