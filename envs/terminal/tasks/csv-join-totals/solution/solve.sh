#!/bin/sh
set -e
python3 - <<'PY'
import csv
from decimal import Decimal

country = {r["customer_id"]: r["country"] for r in csv.DictReader(open("/app/data/customers.csv", newline=""))}
totals, counts = {}, {}
for r in csv.DictReader(open("/app/data/orders.csv", newline="")):
    if r["status"] == "paid":
        c = country.get(r["customer_id"], "UNKNOWN")
        totals[c] = totals.get(c, Decimal(0)) + Decimal(r["amount"])
        counts[c] = counts.get(c, 0) + 1
with open("/app/totals.csv", "w", newline="") as out:
    w = csv.writer(out)
    w.writerow(["country", "orders", "total"])
    for c in sorted(totals, key=lambda c: -totals[c]):
        w.writerow([c, counts[c], f"{totals[c]:.2f}"])
PY
cat /app/totals.csv
