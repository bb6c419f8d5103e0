"""crash-name-overflow: greeter, rebuilt as nobody with its Makefile, greets long names in full."""

import os
import sys

sys.path.insert(0, "/tests")
from harness import Checks, copy_for_nobody, read, run_as_nobody  # noqa: E402

checks = Checks()
checks.guard("the Makefile is unchanged", read("/app/greeter/Makefile") == read("/tests/Makefile.orig"))
work = copy_for_nobody("/app/greeter")
if os.path.lexists(os.path.join(work, "greeter")):
    os.unlink(os.path.join(work, "greeter"))
code, _, _ = run_as_nobody(["make"], cwd=work, timeout=120)
checks.guard("make builds greeter", code == 0 and os.path.isfile(os.path.join(work, "greeter")))


def expect(names):
    return "".join(f"Hello, {n}! ({sum(c.isascii() and c.isalpha() for c in n)} letters)\n" for n in names if n)


cases = {
    "short names": ["Ada", "Grace Hopper"],
    "80 letters": ["A" * 80],
    "long mixed": ["Maria-" + "x" * 120 + " 42"],
    "1000 bytes": ["N" * 999 + "!"],
    "several with blank lines": ["Bo", "", "C" * 300, "", "D.E. F" * 20],
}
binary = os.path.join(work, "greeter")
for name, names in cases.items():
    ok = False
    if os.path.isfile(binary):
        code, out, _ = run_as_nobody([binary], cwd=work, timeout=10, stdin="\n".join(names) + "\n")
        ok = code == 0 and out == expect(names)
    (checks.guard if name == "short names" else checks.goal)(f"{name}: greeted in full", ok)
checks.finish()
