"""The contacts database at schema version 1 (seeded)."""

import random
import sqlite3
import sys

rng = random.Random(4)
db = sqlite3.connect(sys.argv[1])
db.executescript("""
PRAGMA user_version = 1;
CREATE TABLE contacts (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, phone TEXT, created TEXT NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY, contact_id INTEGER NOT NULL REFERENCES contacts(id), body TEXT NOT NULL);
""")
first = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken"]
last = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "van Rossum"]
for cid in range(1, 201):
    name = f"{rng.choice(first)} {rng.choice(last)}"
    if rng.random() < 0.1:
        name = rng.choice(first)  # a single name: no last name
    phone = rng.choice([None, "", f"+1 555 {rng.randrange(1000, 9999)}"])
    db.execute("INSERT INTO contacts VALUES (?, ?, ?, ?)", (cid, name, phone, f"2025-{rng.randrange(1, 13):02d}-01"))
    for _ in range(rng.randrange(0, 3)):
        db.execute("INSERT INTO notes (contact_id, body) VALUES (?, ?)", (cid, f"note about {name}"))
db.commit()
