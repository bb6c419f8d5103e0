"""The shop database (seeded): customers with duplicate e-mails (case and spaces differ), orders."""

import random
import sqlite3
import sys

rng = random.Random(11)
db = sqlite3.connect(sys.argv[1])
db.executescript("""
CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     total_cents INTEGER NOT NULL, placed_at TEXT NOT NULL);
""")
people = [
    ("ann", "Ann Lee"),
    ("bo", "Bo Kim"),
    ("cy", "Cy Park"),
    ("di", "Di Ray"),
    ("ed", "Ed Moe"),
    ("flo", "Flo Yu"),
    ("gus", "Gus Tam"),
    ("hal", "Hal Orr"),
    ("ivy", "Ivy Lum"),
    ("jo", "Jo Ames"),
]
cid = 0
for login, name in people:
    variants = [f"{login}@example.com"]
    if rng.random() < 0.6:
        variants.append(
            rng.choice([f"{login.upper()}@EXAMPLE.COM", f" {login}@example.com", f"{login.capitalize()}@Example.com "])
        )
    if rng.random() < 0.3:
        variants.append(f"{login}@Example.Com")
    rng.shuffle(variants)
    for email in variants:
        cid += 1
        db.execute("INSERT INTO customers VALUES (?, ?, ?)", (cid, email, name))
oid = 0
for _ in range(120):
    oid += 1
    db.execute(
        "INSERT INTO orders VALUES (?, ?, ?, ?)",
        (
            oid,
            rng.randrange(1, cid + 1),
            rng.randrange(500, 50000),
            f"2026-0{rng.randrange(1, 7)}-{rng.randrange(10, 28)}",
        ),
    )
db.commit()
