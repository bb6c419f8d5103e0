"""git-recover-reset: feature points at the original "Document the export command" commit again."""

import sys

sys.path.insert(0, "/tests")
from gitlib import build_reference, clone, git  # noqa: E402
from harness import Checks  # noqa: E402

checks = Checks()
reference = build_reference("/tests/mkrepo.sh")
# The commit the reset lost, found in the reference repository's reflog of feature.
lost = ""
for line in git(reference, "reflog", "show", "--format=%H %s", "feature").splitlines():
    if line.endswith(" Document the export command"):
        lost = line.split()[0]
        break
assert lost, "the reference repository lost no commit"
repo = clone("/app/repo")
checks.guard("the repository can be cloned", repo is not None)
repo = repo or "/nonexistent"
checks.guard("main is unchanged", git(repo, "rev-parse", "main").strip() == git(reference, "rev-parse", "main").strip())
tip = git(repo, "rev-parse", "feature").strip()
checks.goal("feature points at the original 'Document the export command' commit", tip == lost)
messages = git(repo, "log", "--format=%s", "feature").splitlines()
checks.goal(
    "feature's history is the original one",
    messages
    == [
        "Document the export command",
        "Add the export command",
        "Store items in todo.txt",
        "Add a README",
        "Add the todo script",
    ]
    and tip == lost,
)
checks.finish()
