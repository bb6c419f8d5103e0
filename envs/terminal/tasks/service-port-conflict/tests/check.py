"""service-port-conflict: after a boot (the container restarted before this runs), the orders API
holds 127.0.0.1:8000, the legacy status page is gone for good, the metrics agent still runs."""

import http.client
import os
import subprocess
import sys
import time

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
checks.guard("metrics.conf is kept", read("/etc/app/autostart.d/metrics.conf") == read("/tests/metrics.conf"))
checks.guard(
    "/etc/app/boot is unchanged", (read("/etc/app/boot") or "").startswith("#!/bin/sh\n# Boot: start every program")
)
checks.goal(
    "port-holder.txt names /opt/app/bin/legacy-status",
    (read("/app/port-holder.txt") or "").strip() == "/opt/app/bin/legacy-status",
)
enabled = {
    n: read(f"/etc/app/autostart.d/{n}") or "" for n in os.listdir("/etc/app/autostart.d") if n.endswith(".conf")
}
checks.goal("legacy-status is no longer started at boot", not any("legacy-status" in t for t in enabled.values()))
checks.goal(
    "orders.conf starts /opt/app/bin/orders-api",
    "exec = /opt/app/bin/orders-api" in (enabled.get("orders.conf") or "").replace("exec=", "exec = "),
)
body = ""
for _ in range(30):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", 8000, timeout=2)
        conn.request("GET", "/health")
        body = conn.getresponse().read().decode()
        conn.close()
        break
    except OSError:
        time.sleep(0.2)
checks.goal("after a boot, 127.0.0.1:8000 answers the orders API's /health", body == "ok")
ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
checks.guard("the metrics agent runs after a boot", "/opt/app/bin/metrics-agent" in ps)
checks.finish()
