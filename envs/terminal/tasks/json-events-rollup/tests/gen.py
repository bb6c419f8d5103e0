"""A JSON-lines event stream (seeded), with a few malformed lines and duplicated events."""

import json
import random
import sys

rng = random.Random(31337)
users = [f"u{n:02d}" for n in range(1, 16)]
events = []
for i in range(1, 1501):
    events.append(
        {
            "id": f"e{i:05d}",
            "user": rng.choice(users),
            "type": rng.choice(["view", "view", "click", "purchase"]),
            "ms": rng.randrange(5, 4000),
            "ts": 1770000000 + i * 7,
        }
    )
with open(sys.argv[1], "w") as out:
    for i, event in enumerate(events):
        if event["type"] == "purchase":
            event["cents"] = rng.randrange(100, 20000)
        out.write(json.dumps(event, sort_keys=rng.random() < 0.5) + "\n")
        if i % 97 == 0:
            out.write(json.dumps(event) + "\n")  # a duplicated delivery (same id)
        if i % 211 == 0:
            out.write('{"id": "broken", "user": \n')
        if i % 333 == 0:
            out.write("\n")
