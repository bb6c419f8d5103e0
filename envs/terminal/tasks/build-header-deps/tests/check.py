"""build-header-deps: incremental rebuilds follow header dependencies, in a clean copy, as nobody."""

import os
import sys
import time

sys.path.insert(0, "/tests")
from harness import Checks, copy_for_nobody, read, run_as_nobody  # noqa: E402

checks = Checks()
for name in sorted(os.listdir("/tests/src")):
    checks.guard(f"src/{name} is unchanged", read(f"/app/units/src/{name}") == read(f"/tests/src/{name}"))
work = copy_for_nobody("/app/units")
run_as_nobody(["make", "clean"], cwd=work, timeout=60)
code, _, _ = run_as_nobody(["make"], cwd=work, timeout=120)
binary = os.path.join(work, "units")
built = code == 0 and os.path.isfile(binary)
checks.guard("make builds ./units from a clean tree", built)


def mtimes():
    return {
        n: os.stat(os.path.join(work, "build", n)).st_mtime_ns
        for n in ("main.o", "convert.o", "banner.o")
        if os.path.exists(os.path.join(work, "build", n))
    }


def touch_edit(rel, old, new):
    path = os.path.join(work, rel)
    text = open(path).read().replace(old, new)
    time.sleep(1.1)
    with open(path, "w") as out:
        out.write(text)


def rebuilt_after(rel, old, new):
    before = mtimes()
    touch_edit(rel, old, new)
    code, _, _ = run_as_nobody(["make"], cwd=work, timeout=120)
    after = mtimes()
    return code == 0, {n for n in after if after[n] != before.get(n)}


ok, changed = rebuilt_after("src/config.h", "SCALE 1000", "SCALE 60") if built else (False, set())
checks.goal("after config.h changes, exactly convert.o is rebuilt", ok and changed == {"convert.o"})
out = run_as_nobody([binary, "3"], cwd=work, timeout=10)[1].strip() if built else ""
checks.goal("and ./units 3 prints 180", out == "180")
ok, changed = (
    rebuilt_after("src/convert.h", "long to_milli(long units);", "long to_milli(long units); /* v2 */")
    if built
    else (False, set())
)
checks.goal(
    "after convert.h changes, exactly convert.o and main.o are rebuilt", ok and changed == {"convert.o", "main.o"}
)
ok, changed = (True, set())
if built:
    before = mtimes()
    run_as_nobody(["make"], cwd=work, timeout=120)
    changed = {n for n, t in mtimes().items() if before.get(n) != t}
checks.guard("a make with nothing changed rebuilds nothing", built and changed == set())
run_as_nobody(["make", "clean"], cwd=work, timeout=60)
checks.guard(
    "make clean removes every build product",
    built and not os.path.exists(binary) and not any(os.scandir(os.path.join(work, "build")))
    if os.path.isdir(os.path.join(work, "build"))
    else built and not os.path.exists(binary),
)
checks.finish()
