"""Mail and calendar (Northwind Mail) tasks: find, reply, forward, archive, schedule, decline."""

from __future__ import annotations

from typing import Any

from browser_tasks.base import BrowserTask, Episode, Facts
from browser_tasks.checks import changed_rows, new_rows, norm, same_answer
from browser_tasks.data.mail import email_of
from openenv_mcp.worlds.browser.driving import click, fill_form, look, navigate, select, submit, type_into, value_of

MAIL = "http://mail.localhost:8000"
SENT = {"mail.messages": "insert"}


def sent_messages(ep: Episode, state: dict) -> list[dict]:
    return [m for m in new_rows(ep, state, "mail", "messages") if m["folder"] == "sent"]


def open_message(subject: str, query: str | None = None) -> Any:
    """Search the mailbox (``query``, default: the subject) and open the message with ``subject``."""
    yield from navigate(MAIL + "/")
    page = yield from look()
    yield from type_into(page.ref_of("textbox", "Search mail"), query or subject, submit=True)
    page = yield from look()
    yield from click(page.find("link", contains=subject).ref or "", subject)
    return (yield from look())


def send(page: Any, *, to: str | None = None, body: str | None = None, subject: str | None = None) -> Any:
    """On a compose page: fill what is given (the body goes before the quoted text) and Send."""
    fields = []
    if to is not None:
        fields.append((page.ref_of("textbox", "To"), "To", "textbox", to))
    if subject is not None:
        fields.append((page.ref_of("textbox", "Subject"), "Subject", "textbox", subject))
    if body is not None:
        fields.append((page.ref_of("textbox", "Message"), "Message", "textbox", body))
    if fields:
        yield from fill_form(fields)
    yield from click(page.ref_of("button", "Send"), "Send")


class ReplyManager(BrowserTask):
    id = "mail-reply-manager"
    app = "mail"
    prompt = (
        "Your manager (the Engineering Manager) asked you something in their most recent email. Reply to that "
        "email saying you will be there; your reply must contain the word 'confirmed'."
    )
    changes = SENT

    def scenario(self, data: dict, rng: Any) -> Facts:
        f = data["mail"]["_facts"]
        return {"asked": f["asked"], "manager": email_of(f["manager"])}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        replies = [m for m in sent_messages(ep, state) if m["in_reply_to"] == ep.facts["asked"]]
        ok = any(ep.facts["manager"] in m["recipients"] and "confirmed" in m["body"].lower() for m in replies)
        kept = [
            (m["id"], m["folder"]) for m in state["mail"]["messages"] if m["id"] <= len(ep.initial["mail"]["messages"])
        ]
        same = kept == [(m["id"], m["folder"]) for m in ep.initial["mail"]["messages"]]
        return ok and same, {"replies": len(replies), "folders_kept": same}

    def reference(self, ep: Episode) -> Any:
        page = yield from open_message("Quick question")
        yield from click(page.ref_of("link", "Reply"), "Reply")
        page = yield from look()
        quoted = yield from value_of(page.ref_of("textbox", "Message"), "Message")
        yield from send(page, body="Confirmed, I will be there.\n" + quoted)

    def wrong(self, ep: Episode) -> Any:  # answers the older "Welcome back" message instead
        page = yield from open_message("Welcome back")
        yield from click(page.ref_of("link", "Reply"), "Reply")
        page = yield from look()
        yield from send(page, body="Confirmed, I will be there.")


class BookingReference(BrowserTask):
    id = "mail-booking-reference"
    app = "mail"
    prompt = "A hotel confirmed a booking for you by email. Find the booking reference and submit it."
    answer = True

    def scenario(self, data: dict, rng: Any) -> Facts:
        return {"expected": data["mail"]["_facts"]["booking"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return same_answer(answer, ep.facts["expected"]), {}

    def reference(self, ep: Episode) -> Any:
        page = yield from open_message("is confirmed", "booking")
        text = page.find("article").all_text
        yield from submit(text.split("Booking reference:")[1].split()[0])

    def wrong(self, ep: Episode) -> Any:
        page = yield from open_message("Invoice", "invoice")
        yield from submit(page.find("article").all_text.split()[-1])


class DeclineInvite(BrowserTask):
    id = "mail-decline-invite"
    app = "mail"
    prompt = (
        "In your calendar, decline the invitation to the 'Vendor demo' meeting with the note "
        "'Conflict with a customer call'. Leave your other invitations as they are."
    )
    changes = {"mail.events": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        mail = data["mail"]
        who = email_of(rng.choice(mail["_facts"]["names"]))
        eid = len(mail["events"]) + 1
        mail["events"].append(
            {
                "id": eid,
                "title": "Vendor demo",
                "day": "2026-03-18",
                "start": "15:00",
                "minutes": 60,
                "organizer": who,
                "attendees": f"{who},robin.keller@northwind.example",
                "location": "Room 2",
                "response": "pending",
                "note": "",
            }
        )
        return {"event": eid}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        changed = changed_rows(ep, state, "mail", "events")
        ok = (
            len(changed) == 1
            and changed[0][1]["id"] == ep.facts["event"]
            and changed[0][1]["response"] == "declined"
            and norm(changed[0][1]["note"]) == "conflict with a customer call"
        )
        return ok, {"events_changed": len(changed)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(MAIL + "/calendar")
        page = yield from look()
        yield from click(page.find("link", contains="Vendor demo").ref or "", "Vendor demo")
        page = yield from look()
        yield from type_into(
            page.ref_of("textbox", "Note to the organizer (optional)"), "Conflict with a customer call", element="Note"
        )
        yield from click(page.ref_of("button", "Decline"), "Decline")

    def wrong(self, ep: Episode) -> Any:  # declines without the note
        yield from navigate(MAIL + "/calendar")
        page = yield from look()
        yield from click(page.find("link", contains="Vendor demo").ref or "", "Vendor demo")
        page = yield from look()
        yield from click(page.ref_of("button", "Decline"), "Decline")


class ScheduleBudget(BrowserTask):
    id = "mail-schedule-meeting"
    app = "mail"
    prompt = (
        "Two colleagues emailed you this week about the budget. Schedule a 45-minute event titled 'Budget review' "
        "on 2026-03-19 at 14:00 in Room 4, with both of them as attendees (use their email addresses)."
    )
    changes = {"mail.events": "insert"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        mail = data["mail"]
        a, b = rng.sample(mail["_facts"]["names"][1:], 2)
        for n, who in enumerate((a, b)):
            mail["messages"].append(
                {
                    "id": len(mail["messages"]) + 1,
                    "folder": "inbox",
                    "sender": email_of(who),
                    "recipients": "robin.keller@northwind.example",
                    "subject": "Budget" if n else "Budget numbers",
                    "body": f"Hi Robin,\nWe should go through the budget together.\n{who}",
                    "sent_at": f"2026-03-1{3 + n}T10:1{n}",
                    "unread": 1,
                    "in_reply_to": None,
                    "forwarded_from": None,
                }
            )
        return {"attendees": sorted([email_of(a), email_of(b)])}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        made = new_rows(ep, state, "mail", "events")
        ok = len(made) == 1 and (
            norm(made[0]["title"]) == "budget review"
            and made[0]["day"] == "2026-03-19"
            and made[0]["start"] == "14:00"
            and made[0]["minutes"] == 45
            and norm(made[0]["location"]) == "room 4"
            and sorted(a for a in made[0]["attendees"].split(",") if a) == ep.facts["attendees"]
        )
        return ok, {"events_made": len(made)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(MAIL + "/?q=budget")
        page = yield from look()
        emails: list[str] = []
        for i in range(len(page.find("table").find_all("row")) - 1):
            link = page.find("table").find_all("row")[1 + i].find("link")  # refs of the page just seen
            yield from click(link.ref or "", link.all_text)
            message = yield from look()
            sender = message.find("paragraph", contains="From:").all_text
            emails.append(sender.split("<")[1].split(">")[0])
            yield from navigate(MAIL + "/?q=budget")
            page = yield from look()
        yield from navigate(MAIL + "/calendar/new")
        page = yield from look()
        yield from fill_form(
            [
                (page.ref_of("textbox", "Title"), "Title", "textbox", "Budget review"),
                (page.ref_of("textbox", "Date (YYYY-MM-DD)"), "Date", "textbox", "2026-03-19"),
                (page.ref_of("textbox", "Start time (HH:MM)"), "Start time", "textbox", "14:00"),
                (
                    page.ref_of("textbox", "Attendees (email addresses, comma-separated)"),
                    "Attendees",
                    "textbox",
                    ", ".join(emails),
                ),
                (page.ref_of("textbox", "Location"), "Location", "textbox", "Room 4"),
            ]
        )
        yield from select(page.ref_of("combobox", "Duration"), ["45 minutes"], "Duration")
        yield from click(page.ref_of("button", "Save event"), "Save event")

    def wrong(self, ep: Episode) -> Any:  # 30 minutes, one attendee
        yield from navigate(MAIL + "/calendar/new")
        page = yield from look()
        yield from fill_form(
            [
                (page.ref_of("textbox", "Title"), "Title", "textbox", "Budget review"),
                (page.ref_of("textbox", "Date (YYYY-MM-DD)"), "Date", "textbox", "2026-03-19"),
                (page.ref_of("textbox", "Start time (HH:MM)"), "Start time", "textbox", "14:00"),
                (
                    page.ref_of("textbox", "Attendees (email addresses, comma-separated)"),
                    "Attendees",
                    "textbox",
                    ep.facts["attendees"][0],
                ),
                (page.ref_of("textbox", "Location"), "Location", "textbox", "Room 4"),
            ]
        )
        yield from click(page.ref_of("button", "Save event"), "Save event")


class ForwardInvoice(BrowserTask):
    id = "mail-forward-invoice"
    app = "mail"
    prompt = "Forward the invoice you received from Lumen Print to accounts@northwind.example."
    changes = SENT

    def scenario(self, data: dict, rng: Any) -> Facts:
        return {"invoice": data["mail"]["_facts"]["invoice"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        fwd = [m for m in sent_messages(ep, state) if m["forwarded_from"] == ep.facts["invoice"]]
        ok = any(m["recipients"] == "accounts@northwind.example" for m in fwd)
        return ok, {"forwards": len(fwd)}

    def reference(self, ep: Episode) -> Any:
        page = yield from open_message("Lumen Print", "lumen")
        yield from click(page.ref_of("link", "Forward"), "Forward")
        page = yield from look()
        yield from send(page, to="accounts@northwind.example")

    def wrong(self, ep: Episode) -> Any:  # a new message instead of forwarding the invoice
        yield from navigate(MAIL + "/compose")
        page = yield from look()
        yield from send(
            page, to="accounts@northwind.example", subject="Invoice from Lumen Print", body="See the invoice."
        )


class ArchiveNewsletters(BrowserTask):
    id = "mail-archive-newsletters"
    app = "mail"
    prompt = "Archive every Deals Weekly newsletter in your inbox. Leave all other messages where they are."
    changes = {"mail.messages": "update"}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        before = {m["id"]: m for m in ep.initial["mail"]["messages"]}
        wrong = []
        for m in state["mail"]["messages"]:
            was = before[m["id"]]
            news = was["sender"] == "news@dealsweekly.example" and was["folder"] == "inbox"
            want = "archive" if news else was["folder"]
            if m["folder"] != want or {k: v for k, v in m.items() if k not in ("folder", "unread")} != {
                k: v for k, v in was.items() if k not in ("folder", "unread")
            }:
                wrong.append(m["id"])
        return not wrong, {"misplaced": len(wrong)}

    def reference(self, ep: Episode) -> Any:
        while True:
            yield from navigate(MAIL + "/?q=deals+weekly")
            page = yield from look()
            links = [r.find("link") for r in page.find("table").find_all("row")[1:]]
            if not links:
                return
            yield from click(links[0].ref or "", links[0].name)
            message = yield from look()
            yield from click(message.ref_of("button", "Archive"), "Archive")

    def wrong(self, ep: Episode) -> Any:  # only the newest one
        yield from navigate(MAIL + "/?q=deals+weekly")
        page = yield from look()
        link = page.find("table").find_all("row")[1].find("link")
        yield from click(link.ref or "", link.name)
        message = yield from look()
        yield from click(message.ref_of("button", "Archive"), "Archive")


class UnreadCount(BrowserTask):
    id = "mail-unread-count"
    app = "mail"
    prompt = (
        "How many unread messages are in your inbox right now? Submit the number (opening a message marks it read)."
    )
    answer = True

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        expected = sum(1 for m in ep.initial["mail"]["messages"] if m["folder"] == "inbox" and m["unread"])
        return same_answer(answer, expected), {}

    def reference(self, ep: Episode) -> Any:
        count, url = 0, MAIL + "/"
        while url:
            yield from navigate(url)
            page = yield from look()
            count += sum(1 for r in page.find("table").find_all("row")[1:] if r.find_all("cell")[-1].name == "Unread")
            nxt = page.find_all("link", "Next page")
            url = MAIL + nxt[0].url if nxt and nxt[0].url else ""
        yield from submit(str(count))

    def wrong(self, ep: Episode) -> Any:  # the first page only
        yield from navigate(MAIL + "/")
        page = yield from look()
        rows = page.find("table").find_all("row")[1:]
        yield from submit(str(sum(1 for r in rows if r.find_all("cell")[-1].name == "Unread") + 100))


class EmailTeamLead(BrowserTask):
    id = "mail-email-team-lead"
    app = "mail"
    prompt = (
        "Email the lead of the Payments team (the company handbook's team directory says who it is) with the "
        "subject 'Access request', asking for access to the payments dashboard."
    )
    changes = SENT

    def scenario(self, data: dict, rng: Any) -> Facts:
        lead = data["wiki"]["_facts"]["leads"]["Payments"]
        if all(c["email"] != email_of(lead) for c in data["mail"]["contacts"]):
            data["mail"]["contacts"].append(
                {"id": len(data["mail"]["contacts"]) + 1, "name": lead, "email": email_of(lead), "title": "Team lead"}
            )
        return {"to": email_of(lead), "lead": lead}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        ok = any(
            m["recipients"] == ep.facts["to"]
            and "access request" in m["subject"].lower()
            and "dashboard" in m["body"].lower()
            for m in sent_messages(ep, state)
        )
        return ok, {"sent": len(sent_messages(ep, state))}

    def reference(self, ep: Episode) -> Any:
        yield from navigate("http://wiki.localhost:8000/pages/team-directory")
        page = yield from look()
        cells = page.find("row", contains="Payments").find_all("cell")
        email = cells[3].name
        yield from navigate(MAIL + "/compose")
        page = yield from look()
        yield from send(
            page,
            to=email,
            subject="Access request",
            body="Hi, could I get access to the payments dashboard? Thanks, Robin",
        )

    def wrong(self, ep: Episode) -> Any:  # the Search team's lead
        yield from navigate("http://wiki.localhost:8000/pages/team-directory")
        page = yield from look()
        email = page.find("row", contains="Search").find_all("cell")[3].name
        yield from navigate(MAIL + "/compose")
        page = yield from look()
        yield from send(
            page, to=email, subject="Access request", body="Hi, could I get access to the payments dashboard?"
        )


class AcceptInvite(BrowserTask):
    id = "mail-accept-offsite"
    app = "mail"
    prompt = "Accept the invitation to the 'Team offsite planning' event in your calendar (it is next week). Answer no other invitation."
    changes = {"mail.events": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        mail = data["mail"]
        who = email_of(mail["_facts"]["names"][0])
        eid = len(mail["events"]) + 1
        mail["events"].append(
            {
                "id": eid,
                "title": "Team offsite planning",
                "day": f"2026-03-{rng.randint(23, 27)}",
                "start": f"{rng.randint(9, 16)}:00",
                "minutes": 90,
                "organizer": who,
                "attendees": f"{who},robin.keller@northwind.example",
                "location": "Room 1",
                "response": "pending",
                "note": "",
            }
        )
        return {"event": eid}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        changed = changed_rows(ep, state, "mail", "events")
        ok = len(changed) == 1 and changed[0][1]["id"] == ep.facts["event"] and changed[0][1]["response"] == "accepted"
        return ok, {"events_changed": len(changed)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(MAIL + "/calendar")
        page = yield from look()
        yield from click(page.ref_of("link", "Next week"), "Next week")
        page = yield from look()
        yield from click(page.find("link", contains="Team offsite planning").ref or "", "Team offsite planning")
        page = yield from look()
        yield from click(page.ref_of("button", "Accept"), "Accept")

    def wrong(self, ep: Episode) -> Any:  # answers "maybe"
        yield from navigate(MAIL + "/calendar?week=2026-03-23")
        page = yield from look()
        yield from click(page.find("link", contains="Team offsite planning").ref or "", "Team offsite planning")
        page = yield from look()
        yield from click(page.ref_of("button", "Maybe"), "Maybe")


class RestoreFromTrash(BrowserTask):
    id = "mail-restore-from-trash"
    app = "mail"
    prompt = (
        "You deleted the message 'Contract draft for review' by mistake. Move it from the trash back to your inbox."
    )
    changes = {"mail.messages": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        mail = data["mail"]
        mid = len(mail["messages"]) + 1
        mail["messages"].append(
            {
                "id": mid,
                "folder": "trash",
                "sender": email_of(rng.choice(mail["_facts"]["names"])),
                "recipients": "robin.keller@northwind.example",
                "subject": "Contract draft for review",
                "body": "Hi Robin,\nThe contract draft is attached for your review.",
                "sent_at": "2026-03-12T15:40",
                "unread": 0,
                "in_reply_to": None,
                "forwarded_from": None,
            }
        )
        return {"message": mid}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        moved = [
            (b["id"], a["folder"]) for b, a in changed_rows(ep, state, "mail", "messages") if a["folder"] != b["folder"]
        ]
        return moved == [(ep.facts["message"], "inbox")], {"moved": moved}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(MAIL + "/")
        page = yield from look()
        yield from click(page.ref_of("link", "Trash"), "Trash")
        page = yield from look()
        yield from click(page.find("link", contains="Contract draft").ref or "", "Contract draft for review")
        page = yield from look()
        yield from click(page.ref_of("button", "Move to inbox"), "Move to inbox")

    def wrong(self, ep: Episode) -> Any:  # archives it instead
        yield from navigate(MAIL + "/folder/trash")
        page = yield from look()
        yield from click(page.find("link", contains="Contract draft").ref or "", "Contract draft for review")
        page = yield from look()
        yield from click(page.ref_of("button", "Archive"), "Archive")


TASKS = [
    ReplyManager(),
    BookingReference(),
    DeclineInvite(),
    ScheduleBudget(),
    ForwardInvoice(),
    ArchiveNewsletters(),
    UnreadCount(),
    EmailTeamLead(),
    AcceptInvite(),
    RestoreFromTrash(),
]
