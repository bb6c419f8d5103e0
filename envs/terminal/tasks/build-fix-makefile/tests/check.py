"""build-fix-makefile: `make` builds calc from a clean copy (as nobody), and calc computes."""

import os
import sys

sys.path.insert(0, "/tests")
from harness import Checks, copy_for_nobody, read, run_as_nobody  # noqa: E402

checks = Checks()
for name in ("main.c", "ops.c", "ops.h"):
    checks.guard(f"src/{name} is unchanged", read(f"/app/calc/src/{name}") == read(f"/tests/src/{name}"))
work = copy_for_nobody("/app/calc")
run_as_nobody(["make", "clean"], cwd=work, timeout=60)
for leftover in ("calc", "build"):
    checks.guard(f"make clean removes {leftover}", not os.path.lexists(os.path.join(work, leftover)))
code, out, err = run_as_nobody(["make"], cwd=work, timeout=120)
binary = os.path.join(work, "calc")
checks.goal("make succeeds from a clean tree", code == 0)
checks.goal("make builds ./calc", os.path.isfile(binary) and os.access(binary, os.X_OK))
cases = [
    ("6", "mul", "7", "42"),
    ("100", "sub", "58", "42"),
    ("84", "div", "2", "42"),
    ("40", "add", "2", "42"),
    ("-9", "mul", "9", "-81"),
]
for a, op, b, want in cases:
    ok = False
    if os.path.isfile(binary):
        code, out, _ = run_as_nobody([binary, a, op, b], cwd=work, timeout=10)
        ok = code == 0 and out.strip() == want
    checks.goal(f"calc {a} {op} {b} prints {want}", ok)
code, _, _ = run_as_nobody(["make", "clean"], cwd=work, timeout=60)
checks.goal(
    "make clean removes calc and build/",
    code == 0 and not os.path.lexists(binary) and not os.path.lexists(os.path.join(work, "build")),
)
checks.finish()
