#!/bin/sh
set -e
python3 - <<'PY'
import json

seen, stats, bad = set(), {}, 0
for line in open("/app/events.jsonl"):
    if not line.strip():
        continue
    try:
        e = json.loads(line)
    except ValueError:
        bad += 1
        continue
    if e["id"] in seen:
        continue
    seen.add(e["id"])
    s = stats.setdefault(e["user"], {"events": 0, "purchases": 0, "revenue_cents": 0, "ms": 0})
    s["events"] += 1
    s["ms"] += e["ms"]
    if e["type"] == "purchase":
        s["purchases"] += 1
        s["revenue_cents"] += e["cents"]
for s in stats.values():
    s["avg_ms"] = round(s.pop("ms") / s["events"], 1)
json.dump(stats, open("/app/summary.json", "w"), indent=2, sort_keys=True)
open("/app/malformed.txt", "w").write(f"{bad}\n")
PY
head -c 300 /app/summary.json
