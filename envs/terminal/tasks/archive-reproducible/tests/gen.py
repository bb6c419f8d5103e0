"""A small static site (seeded), with a few .tmp files and varied modes and times."""

import os
import random
import sys

root = sys.argv[1]
rng = random.Random(12)
for folder in ("", "css", "js", "img", "blog", "blog/2024", "blog/drafts"):
    os.makedirs(os.path.join(root, folder), exist_ok=True)
files = [
    "index.html",
    "css/site.css",
    "js/app.js",
    "js/app.js.tmp",
    "img/logo.svg",
    "blog/index.html",
    "blog/2024/hello.html",
    "blog/2024/second.html",
    "blog/drafts/notes.tmp",
    "Z-upper.txt",
    "a-lower.txt",
    "deploy.sh",
]
for i, rel in enumerate(files):
    path = os.path.join(root, rel)
    with open(path, "w") as out:
        out.write(f"<!-- {rel} -->\n" + "x" * rng.randrange(10, 400) + "\n")
    os.chmod(path, 0o755 if rel.endswith(".sh") else 0o644)
    os.utime(path, (1700000000 + i * 1000, 1700000000 + i * 1000))
