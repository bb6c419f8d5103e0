"""Planted bug: roll() draws from the operating system's randomness, so the same seed and the same calls give
different results. The fixed twin draws from a generator seeded with a constant. Caught by env.determinism."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

RNG = random.Random(20261130) if _kit.FIXED else random.SystemRandom()

_kit.serve(
    "random-unseeded",
    [(_kit.tool("roll", {}, "Roll a number between 1 and 1000000000."), lambda a: f"rolled {RNG.randint(1, 10**9)}")],
)
