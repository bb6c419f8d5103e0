"""build-static-library: make builds bin/perimeter from libgeom.a (as nobody, in a clean copy)."""

import os
import subprocess
import sys

sys.path.insert(0, "/tests")
from harness import Checks, copy_for_nobody, read, run_as_nobody  # noqa: E402

checks = Checks()
for rel in ("lib/geom.h", "lib/distance.c", "lib/perimeter.c", "app/main.c"):
    checks.guard(f"{rel} is unchanged", read(f"/app/geo/{rel}") == read(f"/tests/src/{rel}"))
work = copy_for_nobody("/app/geo")
run_as_nobody(["make", "clean"], cwd=work, timeout=60)
code, out, err = run_as_nobody(["make"], cwd=work, timeout=120)
binary = os.path.join(work, "bin", "perimeter")
built = code == 0 and os.path.isfile(binary)
checks.goal("make succeeds from a clean tree", built)
checks.goal(
    "lib/libgeom.a was built and the program too", built and os.path.isfile(os.path.join(work, "lib", "libgeom.a"))
)
symbols = (
    subprocess.run(["nm", binary], capture_output=True, text=True, check=False).stdout if os.path.isfile(binary) else ""
)
checks.goal(
    "bin/perimeter holds the library's functions (statically linked)",
    " T distance" in symbols and " T polygon_perimeter" in symbols,
)
for args, want in (
    (["0", "0", "3", "0", "3", "4"], "12.000"),
    (["0", "0", "1", "0", "1", "1", "0", "1"], "4.000"),
    (["-1", "-1", "2", "3"], "10.000"),
):
    ok = False
    if os.path.isfile(binary):
        code, out, _ = run_as_nobody([binary, *args], cwd=work, timeout=10)
        ok = code == 0 and out.strip() == want
    checks.goal(f"perimeter {' '.join(args)} prints {want}", ok)
run_as_nobody(["make", "clean"], cwd=work, timeout=60)
left = [
    p
    for p in ("bin/perimeter", "lib/libgeom.a", "lib/distance.o", "lib/perimeter.o")
    if os.path.lexists(os.path.join(work, p))
]
checks.goal("make clean removes every build product", built and not left)
checks.finish()
