"""crash-double-free: topwords, rebuilt as nobody, exits 0 with the same output, under glibc's
strict heap checks (MALLOC_CHECK_=3, MALLOC_PERTURB_) so a use after free cannot hide."""

import collections
import os
import random
import sys

sys.path.insert(0, "/tests")
from harness import Checks, copy_for_nobody, run_as_nobody  # noqa: E402

checks = Checks()
work = copy_for_nobody("/app/topwords")
if os.path.lexists(os.path.join(work, "topwords")):
    os.unlink(os.path.join(work, "topwords"))
code, _, _ = run_as_nobody(["gcc", "-O0", "-g", "-Wall", "-o", "topwords", "topwords.c"], cwd=work, timeout=120)
checks.guard("topwords.c compiles", code == 0)
binary = os.path.join(work, "topwords")
rng = random.Random(3)
vocab = ["alpha", "beta", "gamma", "delta", "Echo", "fox", "golf", "hotel", "india", "juliet"]


def expected(text, top):
    words = collections.Counter(
        w.lower() for w in "".join(c if c.isascii() and c.isalpha() else " " for c in text).split()
    )
    ranked = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return "".join(f"{n} {w}\n" for w, n in ranked)


texts = {
    "a sentence": ("the cat and the hat and the bat", 3),
    "random words": (" ".join(rng.choice(vocab) for _ in range(3000)), 5),
    "punctuation": ("Hi! hi, HI? ho-ho; ho. " * 50, 2),
    "one word": ("solo", 10),
}
env = {"MALLOC_CHECK_": "3", "MALLOC_PERTURB_": "165"}
for name, (text, top) in texts.items():
    ok = False
    if os.path.isfile(binary):
        code, out, _ = run_as_nobody([binary, str(top)], cwd=work, timeout=20, stdin=text, env=env)
        ok = code == 0 and out == expected(text, top)
    checks.goal(f"{name}: right output and exit status 0", ok)
code, out, _ = (
    run_as_nobody([binary, "3"], cwd=work, timeout=10, stdin="", env=env) if os.path.isfile(binary) else (None, "", "")
)
checks.guard("empty input: no output, exit status 0", code == 0 and out == "")
checks.finish()
