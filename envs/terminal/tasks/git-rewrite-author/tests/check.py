"""git-rewrite-author: Kim's commits carry the new identity, nothing else changed (a fresh clone)."""

import sys

sys.path.insert(0, "/tests")
from gitlib import build_reference, clone, git  # noqa: E402
from harness import Checks  # noqa: E402

checks = Checks()
reference = build_reference("/tests/mkrepo.sh")
repo = clone("/app/repo") or "/nonexistent"
checks.guard("the repository can be cloned", repo != "/nonexistent")
fmt = "--format=%T%x09%s%x09%an%x09%ae%x09%aI"
want = []
for line in git(reference, "log", "--reverse", fmt, "main").splitlines():
    tree, subject, name, email, date = line.split("\t")
    if email == "kim@old-company.example":
        name, email = "Kim New", "kim@example.com"
    want.append((tree, subject, name, email, date))
got = [tuple(line.split("\t")) for line in git(repo, "log", "--reverse", fmt, "main").splitlines()]
checks.guard(
    "the same number of commits, trees, messages and dates",
    [(w[0], w[1], w[4]) for w in want] == [(g[0], g[1], g[4]) for g in got if len(g) == 5],
)
checks.guard(
    "the other authors are unchanged",
    [w for w in want if w[2] != "Kim New"] == [g for g in got if len(g) == 5 and g[2] != "Kim New"],
)
checks.goal("Kim's commits have the new name and e-mail", got == want)
checks.goal(
    "the old address is gone from main's history",
    repo != "/nonexistent" and "kim@old-company.example" not in git(repo, "log", "--format=%ae %ce", "main"),
)
status = git("/app/repo", "status", "--porcelain", "--untracked-files=no")
checks.guard(
    "main is checked out, clean",
    git("/app/repo", "symbolic-ref", "--short", "HEAD").strip() == "main" and status.strip() == "",
)
checks.finish()
