"""git-purge-secret: a fresh clone holds no trace of the secret, and nothing else changed."""

import sys

sys.path.insert(0, "/tests")
from gitlib import build_reference, clone, git, tree_listing  # noqa: E402
from harness import Checks  # noqa: E402

SECRET = "hunter2-s3cret-7781"
checks = Checks()
reference = build_reference("/tests/mkrepo.sh")
repo = clone("/app/repo")
checks.guard("the repository can be cloned", repo is not None)
repo = repo or "/nonexistent"
fmt = "--format=%s%x09%an <%ae>%x09%aI"
want = git(reference, "log", "--reverse", fmt, "main").splitlines()
got = git(repo, "log", "--reverse", fmt, "main").splitlines()
checks.guard("main has the same commits (messages, authors, author dates) in order", got == want and len(want) == 7)
ref_commits = git(reference, "rev-list", "--reverse", "main").split()
new_commits = git(repo, "rev-list", "--reverse", "main").split()
same_trees = len(ref_commits) == len(new_commits) == 7
for old, new in zip(ref_commits, new_commits, strict=False):
    expected = [line for line in tree_listing(reference, old) if not line.startswith("config/secrets.env ")]
    same_trees &= tree_listing(repo, new) == expected
checks.goal("every commit holds exactly its files, without config/secrets.env", same_trees)
paths = git(repo, "log", "--all", "--format=", "--name-only")
checks.goal(
    "no commit of any branch or tag touches config/secrets.env",
    repo != "/nonexistent" and "config/secrets.env" not in paths,
)
objects = git(repo, "rev-list", "--objects", "--all").split("\n")
leaked = repo == "/nonexistent" or not objects
for line in objects:
    sha = line.split(" ")[0]
    if sha and SECRET in git(repo, "cat-file", "-p", sha):
        leaked = True
        break
checks.goal("the password is in no reachable object", not leaked)
tag_target = git(repo, "rev-parse", "v1.0^{commit}").strip()
checks.goal(
    "v1.0 points at the rewritten 4th commit",
    len(new_commits) == 7 and tag_target == new_commits[3] and new_commits[3] != ref_commits[3],
)
checks.guard("v1.0 is still an annotated tag", git(repo, "cat-file", "-t", "v1.0").strip() == "tag")
status = git("/app/repo", "status", "--porcelain", "--untracked-files=no")
branch = git("/app/repo", "symbolic-ref", "--short", "HEAD").strip()
checks.guard("main is checked out, clean", branch == "main" and status.strip() == "" and got == want)
checks.finish()
