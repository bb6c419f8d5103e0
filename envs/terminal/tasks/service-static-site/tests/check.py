"""service-static-site: webd, started here from its pristine code as www-data with the agent's
configuration, serves /srv/docs on 127.0.0.1:8080 with home.html and the svg type."""

import configparser
import http.client
import subprocess
import sys
import time

sys.path.insert(0, "/tests")
from harness import Checks, read  # noqa: E402

checks = Checks()
checks.guard("webd.py is unchanged", read("/opt/webd/webd.py") == read("/tests/webd.py"))
for rel in ("home.html", "docs/home.html", "logo.svg"):
    checks.guard(f"/srv/docs/{rel} is unchanged", read(f"/srv/docs/{rel}") == read(f"/tests/site/{rel}"))
config = configparser.ConfigParser()
try:
    config.read("/etc/webd/webd.ini")
    listen = config.get("http", "listen", fallback="")
except configparser.Error:
    listen = ""
checks.goal("it listens on 127.0.0.1:8080 only", listen.strip() == "127.0.0.1:8080")


def get(path):
    conn = http.client.HTTPConnection("127.0.0.1", 8080, timeout=3)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read().decode(errors="replace")
    finally:
        conn.close()


server = None
if listen.strip() == "127.0.0.1:8080":
    server = subprocess.Popen(
        [
            "setpriv",
            "--reuid=www-data",
            "--regid=www-data",
            "--init-groups",
            "--",
            "python3",
            "-I",
            "/tests/webd.py",
            "--config",
            "/etc/webd/webd.ini",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    for _ in range(50):
        try:
            get("/")
            break
        except OSError:
            time.sleep(0.1)
try:
    results = {p: (get(p) if server else (0, "", "")) for p in ("/", "/docs/", "/logo.svg")}
except OSError:
    results = {p: (0, "", "") for p in ("/", "/docs/", "/logo.svg")}
finally:
    if server:
        server.kill()
checks.goal("/ serves /srv/docs/home.html", results["/"][0] == 200 and "Welcome to the docs" in results["/"][2])
checks.goal(
    "/docs/ serves /srv/docs/docs/home.html", results["/docs/"][0] == 200 and "The guide." in results["/docs/"][2]
)
checks.goal(
    "logo.svg is image/svg+xml", results["/logo.svg"][0] == 200 and results["/logo.svg"][1].startswith("image/svg+xml")
)
checks.finish()
