"""Seeded data of Northwind Mail: contacts, about 30 messages across folders, two weeks of events."""

from __future__ import annotations

import random
from typing import Any

from openenv_mcp.worlds.browser.seeding import FIRST, LAST, day

ME = "robin.keller@northwind.example"
TITLES = ("Engineer", "Designer", "Product Manager", "Data Analyst", "Support Lead", "Recruiter", "Finance Partner")
TOPICS = (
    ("Lunch on Friday?", "Anyone up for the noodle place on Friday?"),
    ("Slides for the all-hands", "Here are the slides, comments welcome until Wednesday."),
    ("Parking at the office", "The garage is closed next week; use the street spots."),
    ("Design review notes", "Notes from the review are in the shared folder."),
    ("Quarterly numbers", "The quarterly numbers are out, see the dashboard."),
    ("Team offsite", "We are looking at dates in May for the offsite."),
    ("Laptop refresh", "Your laptop is due for a refresh; book a slot with IT."),
    ("Hiring update", "Two candidates moved to the final round."),
)


def email_of(name: str) -> str:
    first, last = name.lower().split(" ", 1)
    return f"{first}.{last.replace(' ', '')}@northwind.example"


def generate(rng: random.Random) -> dict[str, Any]:
    names = []
    while len(names) < 14:
        n = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if n not in names and n != "Robin Keller":
            names.append(n)
    manager = names[0]
    contacts = [{"id": 1, "name": manager, "email": email_of(manager), "title": "Engineering Manager"}]
    contacts += [
        {"id": i + 1, "name": n, "email": email_of(n), "title": rng.choice(TITLES)} for i, n in enumerate(names[1:], 1)
    ]
    contacts.append(
        {"id": len(contacts) + 1, "name": "Deals Weekly", "email": "news@dealsweekly.example", "title": "Newsletter"}
    )
    contacts.append(
        {"id": len(contacts) + 1, "name": "Accounts", "email": "accounts@northwind.example", "title": "Finance team"}
    )
    messages: list[dict[str, Any]] = []

    def add(sender: str, subject: str, body: str, when: str, *, folder: str = "inbox", unread: bool = False) -> dict:
        m = {
            "id": len(messages) + 1,
            "folder": folder,
            "sender": sender,
            "recipients": ME,
            "subject": subject,
            "body": body,
            "sent_at": when,
            "unread": int(unread),
            "in_reply_to": None,
            "forwarded_from": None,
        }
        messages.append(m)
        return m

    for i in range(18):
        who = rng.choice(names[1:])
        subject, text = rng.choice(TOPICS)
        add(
            email_of(who),
            subject,
            f"Hi Robin,\n{text}\nBest,\n{who}",
            f"{day(-14 + i // 2)}T{8 + i % 9:02d}:{rng.randint(0, 59):02d}",
            unread=rng.random() < 0.35,
            folder="archive" if i < 4 else "inbox",
        )
    for i in range(5):
        add(
            "news@dealsweekly.example",
            f"Deals Weekly #{210 + i}: spring picks",
            "This week's picks for the outdoors.\nUnsubscribe any time.",
            f"{day(-12 + 3 * i)}T07:00",
            unread=rng.random() < 0.5,
        )
    manager_question = rng.choice(
        ("the planning meeting on Thursday", "the customer visit next Tuesday", "the launch retro on Friday")
    )
    asked = add(
        email_of(manager),
        "Quick question",
        f"Hi Robin,\nCan you make it to {manager_question}?\nThanks,\n{manager}\nEngineering Manager",
        f"{day(13)}T16:{rng.randint(10, 50)}",
        unread=True,
    )
    add(
        email_of(manager),
        "Welcome back",
        f"Hi Robin,\nGood to have you back.\n{manager}\nEngineering Manager",
        f"{day(2)}T09:05",
    )
    ref = f"HX{rng.randint(100000, 999999)}"
    hotel = rng.choice(("Hotel Arcadia", "Grand Canal Hotel", "Hotel Nordlys"))
    add(
        "reservations@stays.example",
        f"Your booking at {hotel} is confirmed",
        f"Dear Robin Keller,\nYour stay at {hotel} is confirmed.\nBooking reference: {ref}\nCheck-in: {day(24)} from 15:00.",
        f"{day(10)}T11:20",
    )
    amount = rng.randint(120, 980)
    invoice = add(
        "billing@lumenprint.example",
        f"Invoice LP-{rng.randint(2000, 2999)} from Lumen Print",
        f"Hello,\nPlease find our invoice for the brochures: {amount}.00 EUR, due in 30 days.\nLumen Print",
        f"{day(11)}T10:02",
    )
    add(ME, "Re: Lunch on Friday?", "Count me in!", f"{day(-3)}T12:00", folder="sent")
    events = []
    for i in range(10):
        d = rng.randint(0, 11)
        who = rng.choice(names)
        events.append(
            {
                "id": i + 1,
                "title": rng.choice(("1:1", "Standup", "Sprint planning", "Coffee chat", "Roadmap sync", "Interview")),
                "day": day(14 + d - 7),
                "start": f"{rng.choice((9, 10, 11, 13, 14, 15, 16)):02d}:{rng.choice(('00', '30'))}",
                "minutes": rng.choice((15, 30, 45, 60)),
                "organizer": email_of(who) if i % 2 else ME,
                "attendees": ",".join(sorted({ME, email_of(who)})),
                "location": rng.choice(("Room 1", "Room 4", "Video call")),
                "response": "pending" if i % 2 else "organizer",
                "note": "",
            }
        )
    return {
        "meta": {"now": "2026-03-16T09:30", "user": "Robin Keller", "email": ME},
        "contacts": contacts,
        "messages": messages,
        "events": events,
        "_facts": {"manager": manager, "asked": asked["id"], "booking": ref, "invoice": invoice["id"], "names": names},
    }
