"""Seeded data of the wiki (Handbook): spaces and pages whose facts (who is on call, limits, codes,
dates) are drawn from the episode's generator, so the answers move with the seed."""

from __future__ import annotations

import random
from typing import Any

from browser_tasks.data.mail import email_of
from openenv_mcp.worlds.browser.seeding import CITIES, day, person, pick_distinct

TEAMS = ("Payments", "Search", "Mobile", "Data Platform", "Identity", "Checkout")
CATEGORIES = ("Meals", "Hotel", "Train", "Taxi", "Conference", "Books")


def generate(rng: random.Random) -> dict[str, Any]:
    now = "2026-03-16"
    spaces = [
        {"key": "eng", "name": "Engineering", "description": "How we build and run our services."},
        {"key": "people", "name": "People", "description": "Policies, benefits and offices."},
        {"key": "ops", "name": "Operations", "description": "Runbooks and on-call."},
    ]
    pages: list[dict[str, Any]] = []

    def add(slug: str, space: str, title: str, body: str) -> None:
        pages.append(
            {
                "id": len(pages) + 1,
                "slug": slug,
                "space": space,
                "title": title,
                "body": body,
                "updated": day(-rng.randint(3, 200)),
                "author": person(rng),
            }
        )

    # on-call: a table team x week
    leads = {team: person(rng) for team in TEAMS}
    oncall = {team: [person(rng) for _ in range(4)] for team in TEAMS}
    weeks = [day(7 * w) for w in range(4)]
    rows = "\n".join(f"| {team} | " + " | ".join(oncall[team]) + " |" for team in TEAMS)
    add(
        "on-call-rotation",
        "ops",
        "On-call rotation",
        "Primary on-call engineer per team and week (weeks start on Monday).\n"
        f"| Team | {' | '.join('Week of ' + w for w in weeks)} |\n{rows}\n"
        "Swap a shift with a colleague, then edit this page with a summary naming both people.",
    )
    add(
        "team-directory",
        "eng",
        "Team directory",
        "Every team and its lead.\n| Team | Lead | Channel | Lead's email |\n"
        + "\n".join(
            f"| {t} | {leads[t]} | #team-{t.lower().replace(' ', '-')} | {email_of(leads[t])} |" for t in TEAMS
        ),
    )
    limits = {c: rng.choice((20, 25, 30, 35, 40, 45, 60, 80, 120, 150, 180, 250)) for c in CATEGORIES}
    add(
        "expense-policy",
        "people",
        "Expense policy",
        "## Limits\nThe most you can claim per item without a director's approval.\n| Category | Limit (EUR) |\n"
        + "\n".join(f"| {c} | {v} |" for c, v in limits.items())
        + "\n## Receipts\nAttach a receipt to every claim above 10 EUR.",
    )
    offices = pick_distinct(rng, CITIES, 4)
    wifi = {city: f"nw-{city.lower()}-{rng.randint(100, 999)}" for city in offices}
    floors = dict(zip(offices, rng.sample(range(2, 12), len(offices)), strict=True))
    for city in offices:
        floor = floors[city]
        add(
            f"office-{city.lower()}",
            "people",
            f"Office: {city}",
            f"## Getting there\nOur {city} office is on floor {floor}.\n## Wi-Fi\n- Network: {wifi[city]}\n"
            f"- Guest network: nw-guest\n## Contacts\n- Office manager: {person(rng)}",
        )
    codes = {team: f"{team[:3].upper()}-{rng.randint(1000, 9999)}" for team in TEAMS}
    add(
        "cost-centres",
        "people",
        "Cost centres",
        "Use your team's cost centre on every purchase order.\n| Team | Cost centre |\n"
        + "\n".join(f"| {t} | {c} |" for t, c in codes.items()),
    )
    freeze = day(rng.randint(20, 40))
    add(
        "release-calendar",
        "eng",
        "Release calendar",
        f"## Code freeze\nThe next code freeze starts on {freeze}.\n"
        "## Process\n- Cut the release branch\n- Run the full test suite\n- Announce in #releases",
    )
    for i, topic in enumerate(
        (
            "Logging",
            "Feature flags",
            "Database migrations",
            "Code review",
            "Incident reviews",
            "Secrets",
            "Dashboards",
            "Load testing",
        )
    ):
        add(
            f"guide-{topic.lower().replace(' ', '-')}",
            "eng",
            f"Guide: {topic}",
            f"## Why\n{topic} matter for every service.\n## How\n- Read the checklist\n- Ask in #help-{i}",
        )
    sev1 = rng.choice((5, 10, 15))
    add(
        "incident-runbook",
        "ops",
        "Incident runbook",
        "## Severity levels\n| Level | Meaning | Page within |\n"
        f"| SEV1 | Customers cannot pay | {sev1} minutes |\n"
        f"| SEV2 | A feature is down | {rng.choice((20, 30, 45))} minutes |\n"
        "| SEV3 | Degraded | next business day |",
    )
    return {
        "meta": {"now": now, "user": "Robin Keller"},
        "spaces": spaces,
        "pages": pages,
        "_facts": {
            "leads": leads,
            "oncall": oncall,
            "weeks": weeks,
            "limits": limits,
            "wifi": wifi,
            "codes": codes,
            "freeze": freeze,
            "floors": floors,
            "sev1": sev1,
        },
    }
