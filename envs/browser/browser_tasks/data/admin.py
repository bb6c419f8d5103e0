"""Seeded data of the back office: about 75 customers (four pages), 48 employees, refunds, tickets,
suppliers and the administrators' settings (which staff cannot open)."""

from __future__ import annotations

import random
from typing import Any

from browser_tasks.data.mail import email_of
from openenv_mcp.worlds.browser.seeding import CITIES, FIRST, LAST, day

TEAMS = ("Payments", "Search", "Mobile", "Data Platform", "Identity", "Checkout")
ROLES = ("Engineer", "Engineer", "Senior Engineer", "Designer", "Product Manager")
PREFIX = {
    "Lyon": "+33",
    "Porto": "+351",
    "Graz": "+43",
    "Leeds": "+44",
    "Utrecht": "+31",
    "Bergen": "+47",
    "Turin": "+39",
    "Ghent": "+32",
    "Malmo": "+46",
    "Brno": "+420",
}


def generate(rng: random.Random) -> dict[str, Any]:
    customers, seen = [], set()
    while len(customers) < 75:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name in seen:
            continue
        seen.add(name)
        city = rng.choice(CITIES)
        cid = len(customers) + 1
        customers.append(
            {
                "id": cid,
                "account": f"C-{rng.randint(10000, 99999)}{cid % 10}",
                "name": name,
                "email": f"{name.split()[0].lower()}{rng.randint(1, 99)}@mail.example",
                "phone": f"{PREFIX[city]} {rng.randint(100, 999)} {rng.randint(1000, 9999)}",
                "city": city,
                "status": rng.choice(("active", "active", "active", "suspended")),
                "since": day(-rng.randint(30, 2400)),
                "notes": "",
            }
        )
    employees = []
    for team in TEAMS:
        people = set()
        while len(people) < 8:
            people.add(f"{rng.choice(FIRST)} {rng.choice(LAST)}")
        people_list = sorted(people)
        manager = people_list[0]
        for i, name in enumerate(people_list):
            employees.append(
                {
                    "id": len(employees) + 1,
                    "name": name,
                    "email": email_of(name).replace("@", f".{len(employees) + 1}@"),
                    "team": team,
                    "role": "Engineering Manager" if i == 0 else rng.choice(ROLES),
                    "start_date": day(-rng.randint(40, 3000)),
                    "laptop": rng.choice(("13-inch laptop", "15-inch laptop")),
                    "manager": manager if i else "Vera Haddad",
                    "status": "active",
                }
            )
    rng.shuffle(employees)
    for i, e in enumerate(employees, 1):
        e["id"] = i
    refunds = [
        {
            "id": i + 1,
            "customer_id": rng.randint(1, 75),
            "amount": rng.choice((1250, 2999, 4500, 5000, 5001, 7800, 12000, 3100, 890, 6400)),
            "reason": rng.choice(("Damaged on arrival", "Wrong size", "Late delivery", "Charged twice")),
            "status": "pending",
            "decided_by": None,
        }
        for i in range(8)
    ] + [
        {
            "id": 9 + i,
            "customer_id": rng.randint(1, 75),
            "amount": 2000 + i,
            "reason": "Wrong size",
            "status": "approved",
            "decided_by": "Vera Haddad",
        }
        for i in range(3)
    ]
    tickets = [
        {
            "id": i + 1,
            "customer_id": rng.randint(1, 75),
            "subject": rng.choice(
                ("Cannot log in", "Where is my parcel?", "Change my address", "Invoice copy", "App crashes")
            ),
            "body": "Hello, I need help with my account.",
            "status": rng.choice(("open", "open", "pending", "closed")),
            "priority": rng.choice(("low", "normal", "normal", "high")),
            "resolution": "",
        }
        for i in range(24)
    ]
    suppliers = [
        {
            "id": 1,
            "name": "Lumen Print",
            "vat": "NL812345678B01",
            "email": "billing@lumenprint.example",
            "country": "Netherlands",
        },
        {
            "id": 2,
            "name": "Alpen Logistics",
            "vat": "AT12345678",
            "email": "ops@alpenlog.example",
            "country": "Austria",
        },
    ]
    settings = [
        {"key": "refund_auto_approve_limit", "value": "0"},
        {"key": "admin_email", "value": "it@northwind.example"},
    ]
    return {
        "meta": {"now": "2026-03-16T09:30", "user": "Robin Keller"},
        "customers": customers,
        "employees": employees,
        "refunds": refunds,
        "tickets": tickets,
        "suppliers": suppliers,
        "settings": settings,
    }
