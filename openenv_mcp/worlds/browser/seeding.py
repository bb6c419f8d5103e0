"""Seeded data for the browser world's applications: one :class:`random.Random` per (task, seed),
and the small vocabularies the generators draw names, dates and prices from.

Everything is a pure function of ``(task id, seed)``: the same episode seed gives the same shop
catalogue, inbox and wiki, byte for byte (the conformance suite's determinism rule checks it), and
another seed moves the answers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random

__all__ = ["FIRST", "LAST", "CITIES", "STREETS", "day", "rng_for", "person", "pick_distinct"]

FIRST = (
    "Ada",
    "Bruno",
    "Chloe",
    "Dmitri",
    "Elena",
    "Farah",
    "Gustav",
    "Hana",
    "Ivan",
    "Jonas",
    "Keiko",
    "Liam",
    "Maya",
    "Nadia",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Yusuf",
    "Zoe",
)
LAST = (
    "Alvarez",
    "Berg",
    "Costa",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Haddad",
    "Ivanova",
    "Jensen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quinn",
    "Rossi",
    "Schmidt",
    "Tanaka",
)
CITIES = ("Lyon", "Porto", "Graz", "Leeds", "Utrecht", "Bergen", "Turin", "Ghent", "Malmo", "Brno")
STREETS = ("Elm Street", "Harbour Road", "Mill Lane", "Station Square", "Kings Avenue", "Birch Way", "Canal Walk")

EPOCH = dt.date(2026, 3, 2)
"""Day 0 of every generated calendar (a Monday)."""


def rng_for(*parts: object) -> random.Random:
    """A generator seeded by ``parts`` (stable across processes and Python versions)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def day(offset: int) -> str:
    """ISO date ``offset`` days after :data:`EPOCH`."""
    return (EPOCH + dt.timedelta(days=offset)).isoformat()


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def pick_distinct(rng: random.Random, pool: list[str] | tuple[str, ...], n: int) -> list[str]:
    """``n`` different items of ``pool``."""
    return rng.sample(list(pool), n)
