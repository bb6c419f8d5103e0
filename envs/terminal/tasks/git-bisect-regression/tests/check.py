"""git-bisect-regression: /app/first-bad.txt names the 27th commit of main."""

import sys

sys.path.insert(0, "/tests")
from gitlib import build_reference, clone, git  # noqa: E402
from harness import Checks, read  # noqa: E402

checks = Checks()
reference = build_reference("/tests/mkrepo.sh")
commits = git(reference, "rev-list", "--reverse", "main").split()
assert len(commits) == 40
repo = clone("/app/repo")
checks.guard("main is unchanged", repo is not None and git(repo, "rev-parse", "main").strip() == commits[-1])
checks.guard("main is checked out", git("/app/repo", "symbolic-ref", "--short", "HEAD").strip() == "main")
answer = (read("/app/first-bad.txt") or "").strip()
checks.goal("first-bad.txt holds the first bad commit's full hash", answer == commits[26])
checks.finish()
