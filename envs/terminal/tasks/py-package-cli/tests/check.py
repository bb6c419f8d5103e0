"""py-package-cli: the project installs offline into a fresh virtualenv (as nobody) and works."""

import filecmp
import os
import sys

sys.path.insert(0, "/tests")
from harness import Checks, copy_for_nobody, run_as_nobody  # noqa: E402

checks = Checks()
cmp = filecmp.dircmp("/app/wordfreq/src/wordfreq", "/tests/src/wordfreq", ignore=["__pycache__"])
checks.guard(
    "the package's code is unchanged",
    not cmp.diff_files and not cmp.left_only and not cmp.right_only and not cmp.subdirs.get("data", cmp).diff_files,
)
work = copy_for_nobody("/app/wordfreq")
for leftover in ("build", "dist"):
    path = os.path.join(work, leftover)
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil

        shutil.rmtree(path)
venv = "/tmp/check-venv"
code, _, err = run_as_nobody(["python3", "-m", "venv", "--system-site-packages", venv], timeout=120)
assert code == 0, err
env = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}
code, out, err = run_as_nobody(
    [f"{venv}/bin/pip", "install", "--no-index", "--no-build-isolation", work], cwd="/tmp", timeout=180, env=env
)
checks.goal("pip installs the project offline", code == 0)
probe = (
    "import importlib.metadata as m, wordfreq, json; from importlib import resources;"
    "d = resources.files('wordfreq').joinpath('data/stopwords.txt');"
    "eps = [e.value for e in m.entry_points(group='console_scripts') if e.name == 'wordfreq'];"
    "print(json.dumps([m.version('wordfreq'), d.is_file(), eps, wordfreq.__file__]))"
)
code, out, _ = run_as_nobody([f"{venv}/bin/python", "-I", "-c", probe], cwd="/tmp", timeout=60)
import json  # noqa: E402

info = json.loads(out) if code == 0 else None
checks.goal("wordfreq 0.3.1 is installed", info is not None and info[0] == "0.3.1" and info[3].startswith(venv))
checks.goal("its data file stopwords.txt is installed", info is not None and info[1])
checks.goal("the console script names wordfreq.cli:main", info is not None and info[2] == ["wordfreq.cli:main"])
code, out, _ = run_as_nobody(
    [f"{venv}/bin/wordfreq", "-n", "2"], cwd="/tmp", timeout=30, stdin="the cat and the hat and the cat"
)
checks.goal("the wordfreq command works", code == 0 and out == "2 cat\n1 hat\n")
code, out, _ = run_as_nobody(
    [f"{venv}/bin/python", "-I", "-c", "import importlib.util; print(importlib.util.find_spec('tests'))"],
    cwd="/tmp",
    timeout=30,
)
checks.guard("no top-level 'tests' package is installed", code == 0 and out.strip() == "None")
checks.finish()
