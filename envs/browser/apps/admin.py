"""Northwind Back Office: customers and employees in paginated, sortable tables with search;
record forms validated on the server (email, phone, VAT number, required fields); a four-step
onboarding wizard kept in the session until confirmed; a refund approval queue; support tickets.
The signed-in user is staff, not an administrator: ``/admin/*`` (settings, users, audit log) is
forbidden to them."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openenv_mcp.worlds.browser.webapp import Page, WebApp, esc, page_links, query_string, table

PER_PAGE = 20
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")
PHONE = re.compile(r"^\+[1-9][0-9 ]{7,15}$")
VAT = re.compile(r"^[A-Z]{2}[0-9A-Z]{8,12}$")
TEAMS = ("Payments", "Search", "Mobile", "Data Platform", "Identity", "Checkout")
ROLES = ("Engineer", "Senior Engineer", "Engineering Manager", "Designer", "Product Manager")
LAPTOPS = ("13-inch laptop", "15-inch laptop", "Desktop workstation")
WIZARD = ("details", "role", "equipment", "review")


class App(WebApp):
    NAME = "admin"
    TITLE = "Northwind Back Office"
    NAV = (
        ("Customers", "/customers"),
        ("Employees", "/employees"),
        ("Onboarding", "/onboarding"),
        ("Refunds", "/refunds"),
        ("Tickets", "/tickets"),
        ("Suppliers", "/suppliers"),
    )
    SCHEMA = """
    CREATE TABLE customers (
        id INTEGER PRIMARY KEY, account TEXT UNIQUE NOT NULL, name TEXT NOT NULL, email TEXT NOT NULL,
        phone TEXT NOT NULL, city TEXT NOT NULL, status TEXT NOT NULL, since TEXT NOT NULL, notes TEXT NOT NULL DEFAULT '');
    CREATE TABLE employees (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE NOT NULL, team TEXT NOT NULL, role TEXT NOT NULL,
        start_date TEXT NOT NULL, laptop TEXT NOT NULL, manager TEXT NOT NULL, status TEXT NOT NULL);
    CREATE TABLE refunds (
        id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), amount INTEGER NOT NULL,
        reason TEXT NOT NULL, status TEXT NOT NULL, decided_by TEXT);
    CREATE TABLE tickets (
        id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), subject TEXT NOT NULL,
        body TEXT NOT NULL, status TEXT NOT NULL, priority TEXT NOT NULL, resolution TEXT NOT NULL DEFAULT '');
    CREATE TABLE suppliers (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, vat TEXT UNIQUE NOT NULL, email TEXT NOT NULL, country TEXT NOT NULL);
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """
    SCRIPT = """
document.querySelectorAll('form[data-confirm]').forEach(function (f) {
  f.addEventListener('submit', function (e) { if (!f.querySelector('input[name=confirm]:checked')) {
    e.preventDefault(); alert(f.dataset.confirm); } });
});
"""

    def __init__(self) -> None:
        super().__init__()
        self.wizards: dict[str, dict[str, str]] = {}
        """Onboarding drafts per session (not in the database until confirmed)."""

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home),
            Route("/customers", self.customers),
            Route("/customers/{id:int}", self.customer, methods=["GET", "POST"]),
            Route("/employees", self.employees),
            Route("/onboarding", self.onboarding, methods=["GET", "POST"]),
            Route("/refunds", self.refunds, methods=["GET", "POST"]),
            Route("/tickets", self.tickets),
            Route("/tickets/{id:int}", self.ticket, methods=["GET", "POST"]),
            Route("/suppliers", self.suppliers, methods=["GET", "POST"]),
            Route("/admin/{rest:path}", self.admin_only, methods=["GET", "POST"]),
        ]

    @property
    def user(self) -> str:
        return str(self.meta.get("user", "staff"))

    def header_extra(self, request: Request) -> str:
        return f"{esc(self.user)} (staff)"

    async def home(self, request: Request) -> Response:
        return self.redirect(request, "/customers")

    async def admin_only(self, request: Request) -> Response:
        return self.forbidden(request)

    # -- tables ------------------------------------------------------------------------------------
    def listing(
        self, request: Request, sql_table: str, columns: dict[str, str], search: tuple[str, ...]
    ) -> tuple[list[Any], str]:
        """Rows of ``sql_table`` filtered by ``q`` over ``search``, sorted by ``sort`` (a key of ``columns``),
        one page of :data:`PER_PAGE`; and the search form + pagination HTML around them."""
        q = request.query_params
        text = q.get("q", "").strip()
        sort = q.get("sort", "")
        order = sort if sort in columns else "id"
        where, args = "1 = 1", []
        if text:
            where = " OR ".join(f"lower({c}) LIKE ?" for c in search)
            args = [f"%{text.lower()}%"] * len(search)
        found = self.rows(f"SELECT * FROM {sql_table} WHERE {where} ORDER BY {order}, id", *args)
        page = int(q["page"]) if q.get("page", "").isdigit() and int(q["page"]) > 0 else 1
        pages = max(1, -(-len(found) // PER_PAGE))
        sorts = "".join(
            f"<option value='{k}'{' selected' if k == sort else ''}>{esc(v)}</option>" for k, v in columns.items()
        )
        form = (
            f"<form role='search' class='card'><label for='q'>Search</label><input id='q' name='q' value='{esc(text)}'> "
            f"<label for='sort'>Sort by</label><select id='sort' name='sort'><option value=''>Newest first</option>{sorts}</select> "
            "<button>Apply</button></form>"
            f"<p>{len(found)} records · page {page} of {pages}</p>"
        )
        return found[(page - 1) * PER_PAGE : page * PER_PAGE], (
            form,
            page_links(request.url.path, {"q": text, "sort": sort}, page, pages),
        )  # type: ignore[return-value]

    async def customers(self, request: Request) -> Response:
        rows, (form, pager) = self.listing(
            request,
            "customers",
            {"name": "Name", "city": "City", "since": "Customer since"},
            ("name", "email", "account", "city"),
        )
        cells = [
            (
                f"<a href='/customers/{c['id']}'>{esc(c['account'])}</a>",
                esc(c["name"]),
                esc(c["email"]),
                esc(c["city"]),
                esc(c["status"]),
                esc(c["since"]),
            )
            for c in rows
        ]
        body = (
            form + table(("Account", "Name", "Email", "City", "Status", "Customer since"), cells, "Customers") + pager
        )
        return self.render(
            request, Page("Customers", body, flash="Customer saved." if request.query_params.get("saved") else "")
        )

    async def customer(self, request: Request) -> Response:
        c = self.row("SELECT * FROM customers WHERE id = ?", request.path_params["id"])
        if c is None:
            return self.not_found(request, "customer")
        values = {k: c[k] for k in ("name", "email", "phone", "city", "status", "notes")}
        error = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            values.update({k: form.get(k, "").strip() for k in values})
            error = self.customer_error(values)
            if not error:
                self.execute(
                    "UPDATE customers SET name = ?, email = ?, phone = ?, city = ?, status = ?, notes = ? WHERE id = ?",
                    *(values[k] for k in ("name", "email", "phone", "city", "status", "notes")),
                    c["id"],
                )
                return self.redirect(request, "/customers" + query_string({"saved": 1}))
        statuses = "".join(
            f"<option{' selected' if s == values['status'] else ''}>{s}</option>"
            for s in ("active", "suspended", "closed")
        )
        body = (
            f"<p>Account {esc(c['account'])} · customer since {esc(c['since'])}</p><form method='post'>{self.csrf_field(request)}"
            f"<label for='name'>Name</label><input id='name' name='name' value='{esc(values['name'])}'>"
            f"<label for='email'>Email</label><input id='email' name='email' value='{esc(values['email'])}'>"
            f"<label for='phone'>Phone (international, e.g. +31 20 123 4567)</label><input id='phone' name='phone' value='{esc(values['phone'])}'>"
            f"<label for='city'>City</label><input id='city' name='city' value='{esc(values['city'])}'>"
            f"<label for='status'>Status</label><select id='status' name='status'>{statuses}</select>"
            f"<label for='notes'>Notes</label><textarea id='notes' name='notes'>{esc(values['notes'])}</textarea>"
            "<div><button type='submit'>Save customer</button></div></form>"
        )
        return self.render(request, Page(f"Customer {c['name']}", body, error=error, status=400 if error else 200))

    def customer_error(self, v: dict[str, Any]) -> str:
        if not v["name"]:
            return "The name is required."
        if not EMAIL.match(v["email"]):
            return "Enter a valid email address."
        if not PHONE.match(v["phone"]):
            return "Enter the phone number in international format, starting with + (e.g. +31 20 123 4567)."
        if not v["city"]:
            return "The city is required."
        if v["status"] not in ("active", "suspended", "closed"):
            return "Choose a status."
        return ""

    async def employees(self, request: Request) -> Response:
        rows, (form, pager) = self.listing(
            request,
            "employees",
            {"name": "Name", "team": "Team", "start_date": "Start date"},
            ("name", "email", "team", "role"),
        )
        cells = [
            (esc(e["name"]), esc(e["email"]), esc(e["team"]), esc(e["role"]), esc(e["start_date"]), esc(e["status"]))
            for e in rows
        ]
        body = form + table(("Name", "Email", "Team", "Role", "Start date", "Status"), cells, "Employees") + pager
        flash = "Onboarding saved: the new employee is in the list." if request.query_params.get("onboarded") else ""
        return self.render(request, Page("Employees", body, flash=flash))

    # -- the onboarding wizard ---------------------------------------------------------------------
    async def onboarding(self, request: Request) -> Response:
        sid = self.session(request)
        draft = self.wizards.setdefault(sid, {"step": "details"})
        error = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            if form.get("action") == "back":
                draft["step"] = WIZARD[max(0, WIZARD.index(draft["step"]) - 1)]
            elif form.get("action") == "cancel":
                self.wizards.pop(sid, None)
                return self.redirect(request, "/employees")
            else:
                error = self.wizard_step(draft, form)
                if not error and draft["step"] == "done":
                    self.wizards.pop(sid, None)
                    return self.redirect(request, "/employees" + query_string({"onboarded": 1}))
        step = draft["step"]
        n = WIZARD.index(step) + 1
        body = f"<p>Step {n} of {len(WIZARD)}: {step.title()}</p><form method='post'>{self.csrf_field(request)}{self.wizard_fields(draft)}"
        body += "<div>" + ("<button name='action' value='back'>Back</button>" if n > 1 else "")
        body += f"<button name='action' value='next'>{'Confirm onboarding' if step == 'review' else 'Next'}</button>"
        body += "<button name='action' value='cancel'>Cancel</button></div></form>"
        return self.render(request, Page("Onboard a new employee", body, error=error, status=400 if error else 200))

    def wizard_fields(self, d: dict[str, str]) -> str:
        def options(values: tuple[str, ...], chosen: str) -> str:
            return "<option value=''>Choose...</option>" + "".join(
                f"<option{' selected' if v == chosen else ''}>{esc(v)}</option>" for v in values
            )

        step = d["step"]
        if step == "details":
            return (
                f"<label for='name'>Full name</label><input id='name' name='name' value='{esc(d.get('name', ''))}'>"
                f"<label for='email'>Work email</label><input id='email' name='email' value='{esc(d.get('email', ''))}'>"
                f"<label for='start_date'>Start date (YYYY-MM-DD)</label><input id='start_date' name='start_date' value='{esc(d.get('start_date', ''))}'>"
            )
        if step == "role":
            managers = tuple(
                r["name"]
                for r in self.rows("SELECT name FROM employees WHERE role = 'Engineering Manager' ORDER BY name")
            )
            return (
                f"<label for='team'>Team</label><select id='team' name='team'>{options(TEAMS, d.get('team', ''))}</select>"
                f"<label for='role'>Role</label><select id='role' name='role'>{options(ROLES, d.get('role', ''))}</select>"
                f"<label for='manager'>Manager</label><select id='manager' name='manager'>{options(managers, d.get('manager', ''))}</select>"
            )
        if step == "equipment":
            return f"<label for='laptop'>Computer</label><select id='laptop' name='laptop'>{options(LAPTOPS, d.get('laptop', ''))}</select>"
        rows = [
            (esc(k.replace("_", " ").title()), esc(d.get(k, "")))
            for k in ("name", "email", "start_date", "team", "role", "manager", "laptop")
        ]
        return table(("Field", "Value"), rows, "Review")

    def wizard_step(self, d: dict[str, str], form: dict[str, str]) -> str:
        step = d["step"]
        if step == "details":
            values = {k: form.get(k, "").strip() for k in ("name", "email", "start_date")}
            if not values["name"]:
                return "The full name is required."
            if not EMAIL.match(values["email"]) or not values["email"].endswith("@northwind.example"):
                return "The work email must be an address at northwind.example."
            if self.row("SELECT 1 FROM employees WHERE email = ?", values["email"]):
                return "An employee with this email exists already."
            if (
                not re.fullmatch(r"\d{4}-\d{2}-\d{2}", values["start_date"])
                or values["start_date"] < str(self.meta.get("now", ""))[:10]
            ):
                return "The start date must be a date (YYYY-MM-DD), today or later."
        elif step == "role":
            values = {k: form.get(k, "") for k in ("team", "role", "manager")}
            managers = {r["name"] for r in self.rows("SELECT name FROM employees WHERE role = 'Engineering Manager'")}
            if values["team"] not in TEAMS or values["role"] not in ROLES or values["manager"] not in managers:
                return "Choose a team, a role and a manager."
        elif step == "equipment":
            values = {"laptop": form.get("laptop", "")}
            if values["laptop"] not in LAPTOPS:
                return "Choose a computer."
        else:
            self.execute(
                "INSERT INTO employees (name, email, team, role, start_date, laptop, manager, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'starting')",
                *(d[k] for k in ("name", "email", "team", "role", "start_date", "laptop", "manager")),
            )
            d["step"] = "done"
            return ""
        d.update(values)
        d["step"] = WIZARD[WIZARD.index(step) + 1]
        return ""

    # -- refunds, tickets, suppliers -------------------------------------------------------------
    async def refunds(self, request: Request) -> Response:
        flash = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            r = self.row("SELECT * FROM refunds WHERE id = ? AND status = 'pending'", form.get("id", ""))
            if r is not None and form.get("action") in ("approved", "rejected"):
                self.execute(
                    "UPDATE refunds SET status = ?, decided_by = ? WHERE id = ?", form["action"], self.user, r["id"]
                )
                flash = f"Refund R-{r['id']} {form['action']}."
        status = request.query_params.get("status", "pending")
        rows = self.rows(
            "SELECT r.*, c.name FROM refunds r JOIN customers c ON c.id = r.customer_id WHERE r.status = ? OR ? = 'all' ORDER BY r.id",
            status,
            status,
        )
        cells = []
        for r in rows:
            action = ""
            if r["status"] == "pending":
                action = (
                    f"<form method='post' class='inline'>{self.csrf_field(request)}<input type='hidden' name='id' value='{r['id']}'>"
                    f"<button name='action' value='approved'>Approve R-{r['id']}</button><button name='action' value='rejected'>Reject R-{r['id']}</button></form>"
                )
            cells.append(
                (
                    f"R-{r['id']}",
                    esc(r["name"]),
                    f"€{r['amount'] / 100:.2f}",
                    esc(r["reason"]),
                    esc(r["status"]),
                    action,
                )
            )
        tabs = " · ".join(
            f"<a href='/refunds?status={s}'>{s.title()}</a>" for s in ("pending", "approved", "rejected", "all")
        )
        body = f"<p>{tabs}</p>" + table(("Refund", "Customer", "Amount", "Reason", "Status", ""), cells, "Refunds")
        return self.render(request, Page("Refunds", body, flash=flash))

    async def tickets(self, request: Request) -> Response:
        rows, (form, pager) = self.listing(
            request, "tickets", {"priority": "Priority", "status": "Status"}, ("subject", "body", "status")
        )
        cells = [
            (f"<a href='/tickets/{t['id']}'>T-{t['id']}</a>", esc(t["subject"]), esc(t["priority"]), esc(t["status"]))
            for t in rows
        ]
        return self.render(
            request,
            Page(
                "Support tickets", form + table(("Ticket", "Subject", "Priority", "Status"), cells, "Tickets") + pager
            ),
        )

    async def ticket(self, request: Request) -> Response:
        t = self.row(
            "SELECT t.*, c.name, c.account FROM tickets t JOIN customers c ON c.id = t.customer_id WHERE t.id = ?",
            request.path_params["id"],
        )
        if t is None:
            return self.not_found(request, "ticket")
        error = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            resolution = form.get("resolution", "").strip()
            if form.get("action") == "close" and len(resolution) < 10:
                error = "Describe the resolution (at least 10 characters) before closing the ticket."
            elif form.get("action") == "close":
                self.execute("UPDATE tickets SET status = 'closed', resolution = ? WHERE id = ?", resolution, t["id"])
                return self.redirect(request, f"/tickets/{t['id']}")
            elif form.get("priority") in ("low", "normal", "high", "urgent"):
                self.execute("UPDATE tickets SET priority = ? WHERE id = ?", form["priority"], t["id"])
                return self.redirect(request, f"/tickets/{t['id']}")
        prios = "".join(
            f"<option{' selected' if p == t['priority'] else ''}>{p}</option>"
            for p in ("low", "normal", "high", "urgent")
        )
        body = (
            f"<p>From {esc(t['name'])} (account {esc(t['account'])}) · status <strong>{esc(t['status'])}</strong></p>"
            f"<article><p>{esc(t['body'])}</p></article>"
            f"<form method='post'>{self.csrf_field(request)}<label for='priority'>Priority</label><select id='priority' name='priority'>{prios}</select>"
            "<button name='action' value='priority'>Change priority</button></form>"
        )
        if t["status"] != "closed":
            body += (
                f"<form method='post'>{self.csrf_field(request)}<label for='resolution'>Resolution</label>"
                "<textarea id='resolution' name='resolution'></textarea><button name='action' value='close'>Close ticket</button></form>"
            )
        else:
            body += f"<p>Resolution: {esc(t['resolution'])}</p>"
        return self.render(
            request, Page(f"T-{t['id']}: {t['subject']}", body, error=error, status=400 if error else 200)
        )

    async def suppliers(self, request: Request) -> Response:
        values = {"name": "", "vat": "", "email": "", "country": ""}
        error = ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            values.update({k: form.get(k, "").strip() for k in values})
            values["vat"] = values["vat"].replace(" ", "").upper()
            if not values["name"]:
                error = "The supplier's name is required."
            elif not VAT.match(values["vat"]):
                error = "Enter a VAT number: two letters for the country, then 8 to 12 letters or digits (e.g. NL123456789B01)."
            elif self.row("SELECT 1 FROM suppliers WHERE vat = ?", values["vat"]):
                error = "A supplier with this VAT number exists already."
            elif not EMAIL.match(values["email"]):
                error = "Enter a valid email address."
            elif not values["country"]:
                error = "The country is required."
            else:
                self.execute("INSERT INTO suppliers (name, vat, email, country) VALUES (?, ?, ?, ?)", *values.values())
                return self.redirect(request, "/suppliers" + query_string({"saved": 1}))
        rows = [
            (esc(s["name"]), esc(s["vat"]), esc(s["email"]), esc(s["country"]))
            for s in self.rows("SELECT * FROM suppliers ORDER BY name")
        ]
        body = table(("Name", "VAT number", "Email", "Country"), rows, "Suppliers") + (
            f"<h2>Add a supplier</h2><form method='post'>{self.csrf_field(request)}"
            + "".join(
                f"<label for='{k}'>{label}</label><input id='{k}' name='{k}' value='{esc(values[k])}'>"
                for k, label in (("name", "Name"), ("vat", "VAT number"), ("email", "Email"), ("country", "Country"))
            )
            + "<div><button type='submit'>Add supplier</button></div></form>"
        )
        flash = "Supplier added." if request.query_params.get("saved") else ""
        return self.render(request, Page("Suppliers", body, error=error, flash=flash, status=400 if error else 200))
