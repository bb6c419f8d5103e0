"""archive-reproducible: order, owners, times, gzip header, exclusions, and modes/contents kept."""

import os
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, "/tests")
from harness import Checks  # noqa: E402

checks = Checks()
ref = os.path.join(tempfile.mkdtemp(), "site")
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", ref], check=True)
expected = {}
for folder, _dirs, files in os.walk(ref):
    rel_folder = os.path.relpath(folder, os.path.dirname(ref))
    expected[rel_folder] = None
    for name in files:
        if not name.endswith(".tmp"):
            path = os.path.join(folder, name)
            expected[os.path.join(rel_folder, name)] = (open(path, "rb").read(), os.stat(path).st_mode & 0o7777)
path = "/app/dist/site.tar.gz"
header = b""
members = []
try:
    if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) < 32 << 20:
        header = open(path, "rb").read(10)
        with tarfile.open(path, "r:gz") as tar:
            for m in tar:
                data = tar.extractfile(m).read() if m.isfile() else None
                members.append((m, data))
except (tarfile.TarError, OSError, EOFError):
    members = []
names = [m.name.rstrip("/") for m, _ in members]
checks.goal("the archive holds exactly site/ without the .tmp files", members and sorted(names) == sorted(expected))
checks.goal("members are in sorted path order", members and names == sorted(names, key=lambda n: n.encode()))
checks.goal(
    "owner and group 0, names empty or root",
    members
    and all(m.uid == 0 and m.gid == 0 and m.uname in ("", "root") and m.gname in ("", "root") for m, _ in members),
)
checks.goal("every mtime is 1704067200", members and all(m.mtime == 1704067200 for m, _ in members))
checks.goal(
    "the gzip header has no name and mtime 0",
    len(header) == 10 and header[:3] == b"\x1f\x8b\x08" and header[3] & 0x08 == 0 and header[4:8] == b"\0\0\0\0",
)
checks.goal(
    "contents and modes are kept",
    members
    and all(
        m.isdir() if expected.get(m.name.rstrip("/")) is None else (data, m.mode & 0o7777) == expected[m.name]
        for m, data in members
        if m.name.rstrip("/") in expected
    ),
)
checks.finish()
