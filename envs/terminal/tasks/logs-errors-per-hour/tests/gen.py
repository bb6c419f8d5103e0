"""An application's logs over two days (seeded): app.log, app.log.1 and gzipped older ones."""

import gzip
import os
import random
import sys

root = sys.argv[1]
rng = random.Random(5150)
os.makedirs(root, exist_ok=True)
levels = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
messages = {"DEBUG": "cache lookup", "INFO": "request served", "WARN": "slow query", "ERROR": "upstream timeout"}
lines = []
for minute in range(0, 48 * 60, 3):
    day, rest = divmod(minute, 24 * 60)
    hour, mins = divmod(rest, 60)
    for _ in range(rng.randrange(1, 4)):
        level = rng.choice(levels)
        if 13 <= hour <= 14 and day == 1 and rng.random() < 0.5:
            level = "ERROR"
        text = messages[level]
        if level == "ERROR" and rng.random() < 0.2:
            text = "upstream timeout\n  at fetch (client.py:42)\n  ERROR cascade suppressed"
        lines.append(f"2026-05-{11 + day:02d}T{hour:02d}:{mins:02d}:{rng.randrange(60):02d}Z [{level}] {text}")
chunks = [lines[i : i + 400] for i in range(0, len(lines), 400)]
names = ["app.log"] + [f"app.log.{i}" for i in range(1, len(chunks))]
for name, chunk in zip(names, reversed(chunks), strict=False):
    data = ("\n".join(chunk) + "\n").encode()
    if name not in ("app.log", "app.log.1", "app.log.2"):
        with gzip.GzipFile(os.path.join(root, name + ".gz"), "wb", mtime=0) as out:
            out.write(data)
    else:
        with open(os.path.join(root, name), "wb") as out:
            out.write(data)
