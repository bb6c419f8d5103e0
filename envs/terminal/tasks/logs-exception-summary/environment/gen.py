"""A worker's log (seeded): ordinary lines, and Python tracebacks spanning several lines, some chained."""

import random

rng = random.Random(2718)
kinds = [
    ("KeyError", "'user_id'"),
    ("ValueError", "invalid literal for int() with base 10: 'abc'"),
    ("TimeoutError", "read timed out"),
    ("ConnectionResetError", "[Errno 104] Connection reset by peer"),
    ("json.decoder.JSONDecodeError", "Expecting value: line 1 column 1 (char 0)"),
]
out = []
for i in range(900):
    stamp = f"2026-06-01 {8 + i // 120:02d}:{(i // 2) % 60:02d}:{i % 60:02d},{rng.randrange(1000):03d}"
    if rng.random() < 0.12:
        kind, message = rng.choice(kinds)
        out.append(f"{stamp} ERROR worker: job {i} failed")
        out.append("Traceback (most recent call last):")
        for depth in range(rng.randrange(1, 4)):
            out.append(f'  File "/srv/app/jobs.py", line {10 + depth * 7}, in step_{depth}')
            out.append(f"    result = handle(payload[{depth}])")
        if rng.random() < 0.25:
            out.append(f"ValueError: bad payload {i}")
            out.append("")
            out.append("During handling of the above exception, another exception occurred:")
            out.append("")
            out.append("Traceback (most recent call last):")
            out.append('  File "/srv/app/jobs.py", line 99, in retry')
            out.append("    raise")
        out.append(f"{kind}: {message}")
    else:
        out.append(f"{stamp} INFO worker: job {i} done in {rng.randrange(5, 900)} ms")
print("\n".join(out))
