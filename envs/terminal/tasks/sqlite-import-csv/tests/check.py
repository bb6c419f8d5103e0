"""sqlite-import-csv: items holds every row, typed, NULLs for empty cells (a read-only copy)."""

import csv
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from decimal import Decimal

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
work = tempfile.mkdtemp()
ref = os.path.join(work, "inventory.csv")
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", ref], check=True)
checks.guard("inventory.csv is unchanged", read("/app/inventory.csv") == read(ref))
want = []
for r in csv.DictReader(open(ref, newline="")):
    want.append(
        (
            r["sku"],
            r["name"],
            int(r["qty"]) if r["qty"] else None,
            int(Decimal(r["price"]) * 100) if r["price"] else None,
            1 if r["discontinued"] == "yes" else 0,
            r["notes"] or None,
        )
    )
rows, columns = [], []
if os.path.isfile("/app/inventory.db") and not os.path.islink("/app/inventory.db"):
    shutil.copyfile("/app/inventory.db", os.path.join(work, "agent.db"))
    try:
        db = sqlite3.connect(f"file:{os.path.join(work, 'agent.db')}?mode=ro", uri=True)
        columns = [(c[1], c[2].upper(), c[3], c[5]) for c in db.execute("PRAGMA table_info(items)")]
        rows = sorted(db.execute("SELECT sku, name, qty, price_cents, discontinued, notes FROM items"))
    except sqlite3.Error:
        rows, columns = [], []
checks.goal(
    "items has the given schema",
    columns
    == [
        ("sku", "TEXT", 0, 1),
        ("name", "TEXT", 1, 0),
        ("qty", "INTEGER", 0, 0),
        ("price_cents", "INTEGER", 0, 0),
        ("discontinued", "INTEGER", 1, 0),
        ("notes", "TEXT", 0, 0),
    ],
)
checks.goal("one row per item", len(rows) == len(want) and sorted(r[0] for r in rows) == sorted(w[0] for w in want))
by_sku = {r[0]: r for r in rows}
checks.goal(
    "names and notes kept exactly (line breaks included)",
    rows and all(by_sku.get(w[0], (None,) * 6)[1] == w[1] and by_sku[w[0]][5] == w[5] for w in want),
)
checks.goal(
    "qty and price_cents are integers, NULL when empty",
    rows
    and all(
        by_sku.get(w[0], (None,) * 6)[2:4] == w[2:4] and all(v is None or type(v) is int for v in by_sku[w[0]][2:4])
        for w in want
    ),
)
checks.goal("discontinued is 1 for yes, else 0", rows and all(by_sku.get(w[0], (None,) * 6)[4] == w[4] for w in want))
checks.finish()
