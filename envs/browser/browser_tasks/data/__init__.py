"""Every application's seeded data for one episode: ``generate(rng) -> {app: {table: [rows], "meta": {...}}}``."""

from __future__ import annotations

import random
from typing import Any

from browser_tasks.data import admin, mail, shop, wiki

NOW = "2026-03-16T09:30"
"""The applications' clock (every episode: the same morning)."""
USER = "Robin Keller"
EMAIL = "robin.keller@northwind.example"


def generate(rng: random.Random) -> dict[str, dict[str, Any]]:
    seeds = {name: random.Random(rng.getrandbits(64)) for name in ("shop", "mail", "admin", "wiki")}
    return {
        "shop": shop.generate(seeds["shop"]),
        "mail": mail.generate(seeds["mail"]),
        "admin": admin.generate(seeds["admin"]),
        "wiki": wiki.generate(seeds["wiki"]),
    }
