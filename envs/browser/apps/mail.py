"""Northwind Mail: a mailbox and a calendar. Folders (inbox, archive, sent, trash), search, reading,
replying, forwarding, composing; a calendar of events with invitations to accept or decline and a
form to schedule new events (validated: a date, a time, a duration, known attendees)."""

from __future__ import annotations

import datetime as dt
import re

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openenv_mcp.worlds.browser.webapp import Page, WebApp, esc, page_links, query_string, table

PER_PAGE = 15
EMAIL = re.compile(r"^[^@\s,;]+@[^@\s,;]+\.[a-z]{2,}$")
FOLDERS = ("inbox", "archive", "sent", "trash")


class App(WebApp):
    NAME = "mail"
    TITLE = "Northwind Mail"
    NAV = (
        ("Inbox", "/"),
        ("Archive", "/folder/archive"),
        ("Sent", "/folder/sent"),
        ("Trash", "/folder/trash"),
        ("Compose", "/compose"),
        ("Calendar", "/calendar"),
    )
    SCHEMA = """
    CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE NOT NULL, title TEXT NOT NULL);
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY, folder TEXT NOT NULL, sender TEXT NOT NULL, recipients TEXT NOT NULL,
        subject TEXT NOT NULL, body TEXT NOT NULL, sent_at TEXT NOT NULL, unread INTEGER NOT NULL DEFAULT 0,
        in_reply_to INTEGER REFERENCES messages(id), forwarded_from INTEGER REFERENCES messages(id));
    CREATE TABLE events (
        id INTEGER PRIMARY KEY, title TEXT NOT NULL, day TEXT NOT NULL, start TEXT NOT NULL,
        minutes INTEGER NOT NULL, organizer TEXT NOT NULL, attendees TEXT NOT NULL, location TEXT NOT NULL,
        response TEXT NOT NULL, note TEXT NOT NULL DEFAULT '');
    """
    SCRIPT = """
var to = document.getElementById('to');
if (to) { to.addEventListener('blur', function () { to.value = to.value.replace(/\\s*[;,]\\s*/g, ', ').trim(); }); }
"""

    def routes(self) -> list[Route]:
        return [
            Route("/", self.inbox),
            Route("/folder/{folder}", self.folder),
            Route("/messages/{id:int}", self.message, methods=["GET", "POST"]),
            Route("/compose", self.compose, methods=["GET", "POST"]),
            Route("/calendar", self.calendar),
            Route("/calendar/new", self.new_event, methods=["GET", "POST"]),
            Route("/calendar/{id:int}", self.event, methods=["GET", "POST"]),
        ]

    @property
    def me(self) -> str:
        return str(self.meta.get("email", "me@example.com"))

    def header_extra(self, request: Request) -> str:
        return esc(self.meta.get("user", ""))

    def names(self) -> dict[str, str]:
        return {c["email"]: c["name"] for c in self.rows("SELECT * FROM contacts")} | {
            self.me: str(self.meta.get("user", "me"))
        }

    def who(self, email: str) -> str:
        name = self.names().get(email)
        return f"{name} <{email}>" if name else email

    # -- folders -----------------------------------------------------------------------------------
    async def inbox(self, request: Request) -> Response:
        return await self.listing(request, "inbox")

    async def folder(self, request: Request) -> Response:
        name = request.path_params["folder"]
        if name not in FOLDERS:
            return self.not_found(request, "folder")
        return await self.listing(request, name)

    async def listing(self, request: Request, folder: str) -> Response:
        q = request.query_params.get("q", "").strip()
        where, args = "folder = ?", [folder]
        if q:
            where += " AND (lower(subject) LIKE ? OR lower(body) LIKE ? OR lower(sender) LIKE ?)"
            args += [f"%{q.lower()}%"] * 3
        found = self.rows(f"SELECT * FROM messages WHERE {where} ORDER BY sent_at DESC, id DESC", *args)
        page = int(request.query_params["page"]) if request.query_params.get("page", "").isdigit() else 1
        page = max(1, page)
        pages = max(1, -(-len(found) // PER_PAGE))
        names = self.names()
        rows = [
            (
                esc(names.get(m["sender"], m["sender"])) if folder != "sent" else esc(m["recipients"]),
                f"<a href='/messages/{m['id']}'>{'<strong>' if m['unread'] else ''}{esc(m['subject'])}{'</strong>' if m['unread'] else ''}</a>",
                esc(m["sent_at"].replace("T", " ")),
                "Unread" if m["unread"] else "",
            )
            for m in found[(page - 1) * PER_PAGE : page * PER_PAGE]
        ]
        search = (
            f"<form role='search' class='card'><label for='q'>Search mail</label><input id='q' name='q' value='{esc(q)}'> "
            "<button>Search</button></form>"
        )
        body = search + table(("From" if folder != "sent" else "To", "Subject", "Date", ""), rows, folder.title())
        body += page_links(request.url.path, {"q": q}, page, pages)
        flash = {
            "archived": "Message archived.",
            "deleted": "Message moved to the trash.",
            "sent": "Message sent.",
            "moved": "Message moved to the inbox.",
        }.get(request.query_params.get("done", ""), "")
        return self.render(request, Page(folder.title(), body, flash=flash))

    # -- one message -------------------------------------------------------------------------------
    async def message(self, request: Request) -> Response:
        m = self.row("SELECT * FROM messages WHERE id = ?", request.path_params["id"])
        if m is None:
            return self.not_found(request, "message")
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            action = form.get("action")
            target = {"archive": "archive", "delete": "trash", "inbox": "inbox"}.get(action or "")
            if target:
                self.execute("UPDATE messages SET folder = ? WHERE id = ?", target, m["id"])
                done = {"archive": "archived", "trash": "deleted", "inbox": "moved"}[target]
                return self.redirect(request, "/" + query_string({"done": done}))
            if action == "unread":
                self.execute("UPDATE messages SET unread = 1 WHERE id = ?", m["id"])
                return self.redirect(request, "/")
        if m["unread"]:
            self.execute("UPDATE messages SET unread = 0 WHERE id = ?", m["id"])
        csrf = self.csrf_field(request)
        buttons = (
            f"<a href='/compose?reply={m['id']}'>Reply</a> · <a href='/compose?forward={m['id']}'>Forward</a>"
            f"<form method='post' class='inline'>{csrf}"
            + (
                "<button name='action' value='inbox'>Move to inbox</button>"
                if m["folder"] in ("archive", "trash")
                else ""
            )
            + "<button name='action' value='archive'>Archive</button>"
            "<button name='action' value='delete'>Delete</button><button name='action' value='unread'>Mark as unread</button></form>"
        )
        paras = "".join(f"<p>{esc(line)}</p>" for line in m["body"].split("\n") if line.strip())
        body = (
            f"<p><strong>From:</strong> {esc(self.who(m['sender']))}<br><strong>To:</strong> {esc(m['recipients'])}<br>"
            f"<strong>Date:</strong> {esc(m['sent_at'].replace('T', ' '))}</p><p>{buttons}</p><article>{paras}</article>"
        )
        return self.render(request, Page(m["subject"], body))

    # -- compose -------------------------------------------------------------------------------------
    async def compose(self, request: Request) -> Response:
        q = request.query_params
        values = {"to": "", "subject": "", "body": "", "reply": q.get("reply", ""), "forward": q.get("forward", "")}
        source = None
        if values["reply"].isdigit() or values["forward"].isdigit():
            source = self.row("SELECT * FROM messages WHERE id = ?", int(values["reply"] or values["forward"]))
        if source is not None and request.method == "GET":
            quoted = "\n".join("> " + line for line in source["body"].split("\n"))
            if values["reply"]:
                values.update(to=source["sender"], subject=_prefixed("Re: ", source["subject"]), body=f"\n\n{quoted}")
            else:
                values.update(
                    subject=_prefixed("Fwd: ", source["subject"]),
                    body=f"\n\n---------- Forwarded message ----------\n{source['body']}",
                )
        error = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            values.update({k: form.get(k, "") for k in values})
            recipients = [r.strip() for r in re.split(r"[,;]", values["to"]) if r.strip()]
            bad = [r for r in recipients if not EMAIL.match(r)]
            if not recipients:
                error = "Add at least one recipient."
            elif bad:
                error = f"Not a valid email address: {bad[0]}"
            elif not values["subject"].strip():
                error = "Add a subject."
            elif len(values["body"]) > 20000:
                error = "The message is too long."
            else:
                self.execute(
                    "INSERT INTO messages (folder, sender, recipients, subject, body, sent_at, unread, in_reply_to, forwarded_from) "
                    "VALUES ('sent', ?, ?, ?, ?, ?, 0, ?, ?)",
                    self.me,
                    ", ".join(recipients),
                    values["subject"].strip(),
                    values["body"].replace("\r\n", "\n"),
                    str(self.meta.get("now", "")),
                    int(values["reply"]) if values["reply"].isdigit() else None,
                    int(values["forward"]) if values["forward"].isdigit() else None,
                )
                return self.redirect(request, "/folder/sent" + query_string({"done": "sent"}))
        hidden = "".join(
            f"<input type='hidden' name='{k}' value='{esc(values[k])}'>" for k in ("reply", "forward") if values[k]
        )
        body = (
            f"<form method='post'>{self.csrf_field(request)}{hidden}"
            f"<label for='to'>To</label><input id='to' name='to' size='60' value='{esc(values['to'])}'>"
            f"<label for='subject'>Subject</label><input id='subject' name='subject' size='60' value='{esc(values['subject'])}'>"
            f"<label for='body'>Message</label><textarea id='body' name='body' rows='12'>{esc(values['body'])}</textarea>"
            "<div><button type='submit'>Send</button></div></form>"
        )
        title = "Reply" if values["reply"] else "Forward" if values["forward"] else "New message"
        return self.render(request, Page(title, body, error=error, status=400 if error else 200))

    # -- calendar ------------------------------------------------------------------------------------
    def today(self) -> dt.date:
        return dt.date.fromisoformat(str(self.meta.get("now", "2026-03-16"))[:10])

    async def calendar(self, request: Request) -> Response:
        q = request.query_params.get("week", "")
        try:
            start = dt.date.fromisoformat(q) if q else self.today()
        except ValueError:
            start = self.today()
        monday = start - dt.timedelta(days=start.weekday())
        days = [monday + dt.timedelta(days=i) for i in range(7)]
        events = self.rows(
            "SELECT * FROM events WHERE day BETWEEN ? AND ? ORDER BY day, start",
            days[0].isoformat(),
            days[-1].isoformat(),
        )
        parts = []
        for d in days:
            items = "".join(
                f"<li><a href='/calendar/{e['id']}'>{esc(e['start'])} {esc(e['title'])}</a> ({e['minutes']} min)"
                f"{' · invitation: ' + esc(e['response']) if e['organizer'] != self.me else ''}</li>"
                for e in events
                if e["day"] == d.isoformat()
            )
            parts.append(
                f"<section class='card'><h2>{d.strftime('%A')} {d.isoformat()}</h2><ul>{items or '<li class=muted>Nothing planned</li>'}</ul></section>"
            )
        prev, nxt = (monday - dt.timedelta(days=7)).isoformat(), (monday + dt.timedelta(days=7)).isoformat()
        nav = f"<p><a href='/calendar?week={prev}'>Previous week</a> · <a href='/calendar?week={nxt}'>Next week</a> · <a href='/calendar/new'>New event</a></p>"
        return self.render(request, Page(f"Week of {monday.isoformat()}", nav + "".join(parts)))

    async def event(self, request: Request) -> Response:
        e = self.row("SELECT * FROM events WHERE id = ?", request.path_params["id"])
        if e is None:
            return self.not_found(request, "event")
        flash = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            action = form.get("action")
            if action in ("accepted", "declined", "tentative") and e["organizer"] != self.me:
                self.execute(
                    "UPDATE events SET response = ?, note = ? WHERE id = ?",
                    action,
                    form.get("note", "").strip()[:500],
                    e["id"],
                )
                flash = f"You {action} this invitation." if action != "tentative" else "You answered maybe."
            elif action == "delete" and e["organizer"] == self.me:
                self.execute("DELETE FROM events WHERE id = ?", e["id"])
                return self.redirect(request, f"/calendar?week={e['day']}")
            e = self.row("SELECT * FROM events WHERE id = ?", e["id"])
            assert e is not None
        names = self.names()
        people = ", ".join(esc(names.get(a, a)) for a in e["attendees"].split(",") if a)
        body = (
            f"<dl><dt>When</dt><dd>{esc(e['day'])} at {esc(e['start'])} for {e['minutes']} minutes</dd>"
            f"<dt>Where</dt><dd>{esc(e['location'])}</dd><dt>Organizer</dt><dd>{esc(names.get(e['organizer'], e['organizer']))}</dd>"
            f"<dt>Attendees</dt><dd>{people}</dd></dl>"
        )
        if e["organizer"] != self.me:
            body += (
                f"<p>Your answer: <strong>{esc(e['response'])}</strong></p><form method='post'>{self.csrf_field(request)}"
                "<label for='note'>Note to the organizer (optional)</label><input id='note' name='note' size='50'>"
                "<div><button name='action' value='accepted'>Accept</button><button name='action' value='tentative'>Maybe</button>"
                "<button name='action' value='declined'>Decline</button></div></form>"
            )
        else:
            body += f"<form method='post'>{self.csrf_field(request)}<button name='action' value='delete'>Delete event</button></form>"
        return self.render(request, Page(e["title"], body, flash=flash))

    async def new_event(self, request: Request) -> Response:
        values = {"title": "", "day": "", "start": "", "minutes": "30", "attendees": "", "location": ""}
        error = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            values.update({k: form.get(k, "").strip() for k in values})
            error, attendees = self.event_error(values)
            if not error:
                new_id = self.execute(
                    "INSERT INTO events (title, day, start, minutes, organizer, attendees, location, response) VALUES (?, ?, ?, ?, ?, ?, ?, 'organizer')",
                    values["title"],
                    values["day"],
                    values["start"],
                    int(values["minutes"]),
                    self.me,
                    ",".join(attendees),
                    values["location"],
                )
                return self.redirect(request, f"/calendar/{new_id}")
        durations = "".join(
            f"<option value='{m}'{' selected' if str(m) == values['minutes'] else ''}>{m} minutes</option>"
            for m in (15, 30, 45, 60, 90, 120)
        )
        body = (
            f"<form method='post'>{self.csrf_field(request)}"
            f"<label for='title'>Title</label><input id='title' name='title' value='{esc(values['title'])}'>"
            f"<label for='day'>Date (YYYY-MM-DD)</label><input id='day' name='day' value='{esc(values['day'])}'>"
            f"<label for='start'>Start time (HH:MM)</label><input id='start' name='start' value='{esc(values['start'])}'>"
            f"<label for='minutes'>Duration</label><select id='minutes' name='minutes'>{durations}</select>"
            f"<label for='attendees'>Attendees (email addresses, comma-separated)</label><input id='attendees' name='attendees' size='60' value='{esc(values['attendees'])}'>"
            f"<label for='location'>Location</label><input id='location' name='location' value='{esc(values['location'])}'>"
            "<div><button type='submit'>Save event</button></div></form>"
        )
        return self.render(request, Page("New event", body, error=error, status=400 if error else 200))

    def event_error(self, v: dict[str, str]) -> tuple[str, list[str]]:
        if not v["title"]:
            return "Give the event a title.", []
        try:
            dt.date.fromisoformat(v["day"])
        except ValueError:
            return "Enter the date as YYYY-MM-DD.", []
        if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v["start"]):
            return "Enter the start time as HH:MM (24 hours).", []
        if v["minutes"] not in ("15", "30", "45", "60", "90", "120"):
            return "Choose a duration.", []
        attendees = [a.strip().lower() for a in re.split(r"[,;]", v["attendees"]) if a.strip()]
        known = set(self.names())
        unknown = [a for a in attendees if a not in known]
        if unknown:
            return f"{unknown[0]} is not in your contacts.", []
        return "", attendees


def _prefixed(prefix: str, subject: str) -> str:
    return subject if subject.lower().startswith(prefix.lower()) else prefix + subject
