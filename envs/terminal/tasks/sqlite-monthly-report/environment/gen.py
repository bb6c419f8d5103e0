"""The sales database (seeded): products, sales with quantities and prices, refunds."""

import random
import sqlite3
import sys

rng = random.Random(2025)
db = sqlite3.connect(sys.argv[1])
db.executescript("""
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL);
CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id),
                    quantity INTEGER NOT NULL, unit_price_cents INTEGER NOT NULL, sold_at TEXT NOT NULL);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, sale_id INTEGER NOT NULL REFERENCES sales(id),
                      amount_cents INTEGER NOT NULL, refunded_at TEXT NOT NULL);
""")
categories = ["books", "garden", "kitchen", "toys"]
for pid in range(1, 31):
    db.execute("INSERT INTO products VALUES (?, ?, ?)", (pid, f"product-{pid}", rng.choice(categories)))
for sid in range(1, 801):
    year = rng.choice([2024, 2025, 2025, 2025, 2026])
    day = f"{year}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} {rng.randrange(0, 24):02d}:{rng.randrange(60):02d}:00"
    price = rng.randrange(199, 9999)
    qty = rng.randrange(1, 6)
    db.execute("INSERT INTO sales VALUES (?, ?, ?, ?, ?)", (sid, rng.randrange(1, 31), qty, price, day))
    if rng.random() < 0.08:
        db.execute(
            "INSERT INTO refunds (sale_id, amount_cents, refunded_at) VALUES (?, ?, ?)",
            (sid, rng.randrange(100, price * qty), day),
        )
db.commit()
