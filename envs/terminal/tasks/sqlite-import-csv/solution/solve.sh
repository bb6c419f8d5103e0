#!/bin/sh
set -e
rm -f /app/inventory.db
python3 - <<'PY'
import csv
import sqlite3
from decimal import Decimal

db = sqlite3.connect("/app/inventory.db")
db.execute("""CREATE TABLE items (sku TEXT PRIMARY KEY, name TEXT NOT NULL, qty INTEGER, price_cents INTEGER,
                    discontinued INTEGER NOT NULL, notes TEXT)""")
for r in csv.DictReader(open("/app/inventory.csv", newline="")):
    db.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)", (
        r["sku"], r["name"], int(r["qty"]) if r["qty"] else None,
        int(Decimal(r["price"]) * 100) if r["price"] else None,
        1 if r["discontinued"] == "yes" else 0, r["notes"] or None))
db.commit()
PY
sqlite3 /app/inventory.db 'SELECT count(*) FROM items;'
