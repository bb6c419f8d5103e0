"""sqlite-monthly-report: the agent's query, run read-only (as nobody) on a fresh database and on a
second one with other rows, returns exactly the expected rows."""

import os
import random
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
from harness import Checks, read, run_as_nobody  # noqa: E402

checks = Checks()
query = read("/app/report.sql", 64 * 1024)
work = tempfile.mkdtemp()
os.chmod(work, 0o755)


def make(name, extra):
    path = os.path.join(work, name)
    subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", path], check=True)
    if extra:
        db = sqlite3.connect(path)
        rng = random.Random(9)
        for sid in range(2001, 2101):
            db.execute(
                "INSERT INTO sales VALUES (?, ?, ?, ?, ?)",
                (
                    sid,
                    rng.randrange(1, 31),
                    rng.randrange(1, 9),
                    rng.randrange(100, 500),
                    f"2025-{rng.randrange(1, 13):02d}-15 08:00:00",
                ),
            )
            if sid % 7 == 0:
                for k in range(2):
                    db.execute(
                        "INSERT INTO refunds (sale_id, amount_cents, refunded_at) VALUES (?, ?, ?)",
                        (sid, 50 + k, "2025-12-31 00:00:00"),
                    )
        db.commit()
        db.close()
    os.chmod(path, 0o444)
    return path


def expected(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = {}
    for sid, category, qty, price, sold in db.execute(
        "SELECT s.id, p.category, s.quantity, s.unit_price_cents, s.sold_at FROM sales s JOIN products p ON p.id = s.product_id"
    ):
        if sold.startswith("2025-"):
            key = (sold[:7], category)
            rows[key] = rows.get(key, 0) + qty * price
            for (amount,) in db.execute("SELECT amount_cents FROM refunds WHERE sale_id = ?", (sid,)):
                rows[key] -= amount
    return [(m, c, n) for (m, c), n in sorted(rows.items())]


RUNNER = """
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
db.execute("PRAGMA query_only = ON")
cur = db.execute(open(sys.argv[2]).read())
print(json.dumps({"columns": [d[0] for d in cur.description or []], "rows": cur.fetchall()}))
"""
runner = os.path.join(work, "run.py")
with open(runner, "w") as out:
    out.write(RUNNER)
sql = os.path.join(work, "report.sql")
with open(sql, "w") as out:
    out.write(query or "")
for path in (runner, sql):
    os.chmod(path, 0o444)
import json  # noqa: E402

for name, extra in (("as shipped", False), ("with other rows", True)):
    db = make(f"{name.replace(' ', '-')}.db", extra)
    code, out, _ = run_as_nobody(["python3", "-I", runner, db, sql], cwd=work, timeout=30)
    try:
        result = json.loads(out) if code == 0 else None
    except ValueError:
        result = None
    rows = [tuple(r) for r in result["rows"]] if result else None
    checks.goal(f"{name}: the rows are right", rows == expected(db))
    checks.goal(
        f"{name}: the columns are month, category, net_cents",
        result is not None and result["columns"] == ["month", "category", "net_cents"],
    )
checks.finish()
