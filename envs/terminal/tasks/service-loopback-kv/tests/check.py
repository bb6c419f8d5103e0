"""service-loopback-kv: the fixed configuration serves on 127.0.0.1:8765 and keeps its data.

The agent's processes were stopped before this runs, so the service is started here, from the
pristine copy of its code, as the user kv (unprivileged): only the configuration is the agent's.
"""

import configparser
import http.client
import os
import pwd
import subprocess
import sys
import time

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
checks.guard("server.py is unchanged", read("/opt/kv/server.py") == read("/tests/server.py"))
config = configparser.ConfigParser()
try:
    parsed = bool(config.read("/etc/kv/kv.conf"))
except configparser.Error:
    parsed = False
bind = config.get("server", "bind", fallback=None) if parsed else None
port = config.get("server", "port", fallback=None) if parsed else None
data_dir = config.get("storage", "data_dir", fallback=None) if parsed else None
checks.goal("bind is 127.0.0.1 (loopback only)", bind == "127.0.0.1")
checks.goal("port is 8765", port == "8765")
checks.goal("data_dir is /var/lib/kv", data_dir and os.path.normpath(data_dir) == "/var/lib/kv")
kv = pwd.getpwnam("kv")
st = os.stat("/var/lib/kv") if os.path.isdir("/var/lib/kv") else None
checks.goal("/var/lib/kv is writable by kv", st is not None and st.st_uid == kv.pw_uid and st.st_mode & 0o200)


def request(method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", 8765, timeout=3)
    try:
        conn.request(method, path, body=body)
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


def start():
    proc = subprocess.Popen(
        [
            "setpriv",
            f"--reuid={kv.pw_uid}",
            f"--regid={kv.pw_gid}",
            "--clear-groups",
            "--",
            "python3",
            "-I",
            "/tests/server.py",
            "--config",
            "/etc/kv/kv.conf",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    for _ in range(50):
        try:
            if request("GET", "/health") == (200, "ok"):
                return proc
        except OSError:
            pass
        if proc.poll() is not None:
            return None
        time.sleep(0.1)
    proc.kill()
    return None


serving = start() if all(g for _, g in checks.goals) else None
checks.goal("GET /health answers ok on 127.0.0.1:8765", serving is not None)
stored = serving is not None and request("GET", "/kv/color") == (200, "blue")
checks.goal("the value 'blue' stored under 'color' survived the restart", stored)
roundtrip = False
if serving is not None:
    roundtrip = request("PUT", "/kv/check-key", body=b"v-123")[0] == 200 and request("GET", "/kv/check-key") == (
        200,
        "v-123",
    )
    serving.kill()
    serving.wait()
checks.goal("PUT then GET of a new name works", roundtrip)
checks.finish()
