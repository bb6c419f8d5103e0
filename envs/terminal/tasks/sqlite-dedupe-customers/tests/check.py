"""sqlite-dedupe-customers: duplicates merged into the lowest id, orders re-pointed, unique index."""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
from harness import Checks  # noqa: E402

checks = Checks()
work = tempfile.mkdtemp()
ref_path = os.path.join(work, "ref.db")
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", ref_path], check=True)
ref = sqlite3.connect(ref_path)
keep = {}
for cid, email, name in ref.execute("SELECT id, email, name FROM customers ORDER BY id"):
    keep.setdefault(email.strip().lower(), (cid, name))
canonical = {cid: keep[email.strip().lower()][0] for cid, email in ref.execute("SELECT id, email FROM customers")}
want_customers = sorted((cid, email, name) for email, (cid, name) in keep.items())
want_orders = sorted((oid, canonical[c], t, p) for oid, c, t, p in ref.execute("SELECT * FROM orders"))

copy = os.path.join(work, "agent.db")
ok = os.path.isfile("/app/shop.db") and not os.path.islink("/app/shop.db")
if ok:
    shutil.copyfile("/app/shop.db", copy)
    for suffix in ("-wal", "-shm"):
        if os.path.isfile("/app/shop.db" + suffix) and not os.path.islink("/app/shop.db" + suffix):
            shutil.copyfile("/app/shop.db" + suffix, copy + suffix)
try:
    db = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    customers = sorted(db.execute("SELECT id, email, name FROM customers"))
    orders = sorted(db.execute("SELECT id, customer_id, total_cents, placed_at FROM orders"))
    indexes = {row[1]: row for row in db.execute("PRAGMA index_list('customers')")}
    index_cols = [r[2] for r in db.execute("PRAGMA index_info('customers_email_unique')")]
except sqlite3.Error:
    customers, orders, indexes, index_cols = [], [], {}, []
checks.guard(
    "no order is lost or altered (ids, totals, dates)",
    sorted((o[0], o[2], o[3]) for o in orders) == sorted((o[0], o[2], o[3]) for o in want_orders),
)
checks.goal(
    "exactly one row per customer, the lowest id, with the name kept",
    sorted((c[0], c[2]) for c in customers) == sorted((c[0], c[2]) for c in want_customers),
)
checks.goal("the kept e-mails are trimmed and lowercased", customers == want_customers)
checks.goal("every order points at the kept customer", orders == want_orders)
unique = "customers_email_unique" in indexes and indexes["customers_email_unique"][2] == 1
checks.goal("a unique index customers_email_unique on customers(email)", unique and index_cols == ["email"])
checks.finish()
