"""csv-join-totals: paid orders per country (with UNKNOWN), counts and totals, largest first."""

import csv
import os
import subprocess
import sys
import tempfile
from decimal import Decimal

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
ref = tempfile.mkdtemp()
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", ref], check=True)
for name in ("customers.csv", "orders.csv"):
    checks.guard(f"{name} is unchanged", read(f"/app/data/{name}") == read(os.path.join(ref, name)))
country = {
    row["customer_id"]: row["country"] for row in csv.DictReader(open(os.path.join(ref, "customers.csv"), newline=""))
}
totals, counts = {}, {}
for row in csv.DictReader(open(os.path.join(ref, "orders.csv"), newline="")):
    if row["status"] == "paid":
        c = country.get(row["customer_id"], "UNKNOWN")
        totals[c] = totals.get(c, Decimal(0)) + Decimal(row["amount"])
        counts[c] = counts.get(c, 0) + 1
want = [["country", "orders", "total"]] + [
    [c, str(counts[c]), f"{totals[c]:.2f}"] for c in sorted(totals, key=lambda c: -totals[c])
]
text = read("/app/totals.csv") or ""
got = [row for row in csv.reader(text.splitlines()) if row]
checks.goal("the header is country,orders,total", got[:1] == want[:1])
checks.goal(
    "the countries are the right ones, largest total first", [r[0] for r in got[1:]] == [w[0] for w in want[1:]]
)
checks.goal("the UNKNOWN customers are counted", any(r[:1] == ["UNKNOWN"] for r in got) and "UNKNOWN" in totals)
checks.goal("every count and total is right", got == want)
checks.finish()
