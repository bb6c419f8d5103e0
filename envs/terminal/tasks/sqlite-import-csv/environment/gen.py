"""inventory.csv (seeded): quoted fields with commas, quotes and newlines; empty cells."""

import csv
import random
import sys

rng = random.Random(8)
with open(sys.argv[1], "w", newline="") as out:
    w = csv.writer(out)
    w.writerow(["sku", "name", "qty", "price", "discontinued", "notes"])
    for i in range(1, 301):
        name = rng.choice(["Bolt, M6", 'Washer "wide"', "Nut\nhex", "Spring", "Hinge, brass"]) + f" {i}"
        qty = rng.choice(["", str(rng.randrange(0, 500))])
        price = rng.choice(["", f"{rng.randrange(1, 9999) / 100:.2f}"])
        disc = rng.choice(["yes", "no", "no", ""])
        notes = rng.choice(["", "fragile", "see, also: B-2", "line one\nline two"])
        w.writerow([f"SKU-{i:04d}", name, qty, price, disc, notes])
