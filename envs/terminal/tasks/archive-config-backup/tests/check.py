"""archive-config-backup: the archive holds exactly the right .conf files, relative to /etc."""

import os
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, "/tests")
from harness import Checks  # noqa: E402

checks = Checks()
expected_root = tempfile.mkdtemp()
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", os.path.join(expected_root, "myapp")], check=True)
expected = {}
for folder, _, files in os.walk(os.path.join(expected_root, "myapp")):
    for name in files:
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, expected_root)
        data = open(path, "rb").read()
        if name.endswith(".conf") and not rel.startswith("myapp/cache/"):
            expected[rel] = data
        checks.guard(
            f"/etc/{rel} is unchanged", os.path.isfile(f"/etc/{rel}") and open(f"/etc/{rel}", "rb").read() == data
        )

path = "/app/backup/myapp-conf.tar.gz"
members = {}
compressed = False
try:
    if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) < 64 << 20:
        with open(path, "rb") as handle:
            compressed = handle.read(2) == b"\x1f\x8b"
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                if member.isfile():
                    members[member.name] = tar.extractfile(member).read(1 << 20)
                elif not member.isdir():
                    members[member.name] = None
except (tarfile.TarError, OSError, EOFError):
    members = {}
checks.goal("the archive is a gzip-compressed tar", compressed and members)
checks.goal("no member has an absolute or ./ path", members and all(not n.startswith(("/", "./")) for n in members))
checks.goal("every expected .conf file is in it", members and set(expected) <= set(members))
checks.goal("nothing else is in it", members and set(members) <= set(expected))
checks.goal("the contents match", members and all(members.get(n) == d for n, d in expected.items()))
checks.finish()
