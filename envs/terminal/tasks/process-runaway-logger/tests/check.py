"""process-runaway-logger: the culprit named, disabled at boot, the others kept, the log emptied.

The verifier runs right after the container restarted, i.e. after a boot: whatever autostart
entry is still enabled is running now."""

import os
import subprocess
import sys
import time

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
for name in ("metricsd.conf", "syncer.conf"):
    checks.guard(f"{name} is kept", read(f"/etc/app/autostart.d/{name}") == read(f"/tests/autostart.d/{name}"))
checks.guard(
    "/etc/app/boot is unchanged", (read("/etc/app/boot") or "").startswith("#!/bin/sh\n# Boot: start every program")
)
checks.goal(
    "culprit.txt names /opt/app/bin/report-cache",
    (read("/app/culprit.txt") or "").strip() == "/opt/app/bin/report-cache",
)
enabled = []
for name in sorted(os.listdir("/etc/app/autostart.d")):
    if name.endswith(".conf"):
        enabled.append(read(f"/etc/app/autostart.d/{name}") or "")
checks.goal("report-cache is no longer started at boot", not any("report-cache" in text for text in enabled))
time.sleep(1.5)
ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
checks.goal("report-cache is not running after a boot", "report-cache" not in ps)
checks.guard("metricsd and syncer run after a boot", "/opt/app/bin/metricsd" in ps and "/opt/app/bin/syncer" in ps)
st = os.lstat("/var/log/app/flood.log") if os.path.lexists("/var/log/app/flood.log") else None
checks.goal(
    "flood.log is an empty regular file", st is not None and st.st_size == 0 and (st.st_mode & 0o170000) == 0o100000
)
checks.finish()
