"""A seeded configuration tree under the folder given as the first argument."""

import os
import random
import sys

root = sys.argv[1]
rng = random.Random(7)
names = ["main", "replica", "pool", "limits", "logging", "tls", "auth", "routes", "workers", "metrics"]
folders = ["", "db", "db/replicas", "web", "web/sites", "cache", "cache/tmp", "auth", "plugins/enabled"]
for folder in folders:
    os.makedirs(os.path.join(root, folder), exist_ok=True)
for i in range(45):
    folder = rng.choice(folders)
    ext = rng.choice([".conf", ".conf", ".conf", ".conf.bak", ".yaml", ".conf~", ".ini"])
    name = f"{rng.choice(names)}-{i}{ext}"
    with open(os.path.join(root, folder, name), "w") as out:
        for k in range(rng.randrange(2, 8)):
            out.write(f"key_{k} = {rng.randrange(10**6)}\n")
with open(os.path.join(root, "web", "space name.conf"), "w") as out:
    out.write("listen = 8080\n")
