"""Seeded data of the shop application."""

from __future__ import annotations

import random
from typing import Any


def generate(rng: random.Random) -> dict[str, Any]:
    return {"meta": {}}
