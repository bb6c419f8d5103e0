"""archive-nested-formats: the CSV is extracted intact (the delivery rebuilt here, from its script)."""

import hashlib
import os
import subprocess
import sys

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
before = (
    hashlib.sha256(open("/srv/inbox/delivery.tar.xz", "rb").read()).hexdigest()
    if os.path.isfile("/srv/inbox/delivery.tar.xz")
    else None
)
subprocess.run(
    ["sh", "/tests/make_delivery.sh", "/tmp/rebuild", "/tmp/rebuild/expected.csv"],
    check=True,
    env={"PATH": "/usr/bin:/bin"},
)
expected = read("/tmp/rebuild/expected.csv", 64 << 20)
rebuilt = hashlib.sha256(open("/tmp/rebuild/delivery.tar.xz", "rb").read()).hexdigest()
checks.guard("the delivery was left in place, unchanged", before == rebuilt)
got = read("/app/data/measurements.csv", 64 << 20)
checks.goal("measurements.csv is extracted, byte for byte", got is not None and got == expected)
rows = len(expected.splitlines()) - 1
checks.goal("rows.txt holds the number of data rows", (read("/app/data/rows.txt") or "").strip() == str(rows))
checks.finish()
