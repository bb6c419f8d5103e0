"""Two CSV exports (seeded): customers.csv (quoted names with commas) and orders.csv."""

import csv
import os
import random
import sys

root = sys.argv[1]
rng = random.Random(77)
os.makedirs(root, exist_ok=True)
countries = ["DE", "FR", "NL", "BE", "IT"]
with open(os.path.join(root, "customers.csv"), "w", newline="") as out:
    w = csv.writer(out)
    w.writerow(["customer_id", "name", "country"])
    for cid in range(1, 61):
        name = rng.choice(["Acme, Inc.", 'Bolt "Fast" Ltd', "Cargo GmbH", "Delta & Sons", "Echo SA"]) + f" #{cid}"
        w.writerow([f"C{cid:03d}", name, rng.choice(countries)])
with open(os.path.join(root, "orders.csv"), "w", newline="") as out:
    w = csv.writer(out)
    w.writerow(["order_id", "customer_id", "amount", "status"])
    for oid in range(1, 501):
        status = rng.choice(["paid", "paid", "paid", "cancelled", "refunded"])
        w.writerow([oid, f"C{rng.randrange(1, 66):03d}", f"{rng.randrange(100, 100000) / 100:.2f}", status])
