"""Back-office tasks: forms with validation, a multi-step wizard, tables with pagination and search."""

from __future__ import annotations

from typing import Any

from browser_tasks.base import BrowserTask, Episode, Facts
from browser_tasks.checks import changed_rows, new_rows, same_answer
from openenv_mcp.worlds.browser.driving import click, fill_form, look, navigate, select, submit, type_into

ADMIN = "http://admin.localhost:8000"


def find_customer(name: str) -> Any:
    """Search the customers for ``name`` and open the record; its form's snapshot."""
    yield from navigate(ADMIN + "/customers")
    page = yield from look()
    yield from type_into(page.ref_of("textbox", "Search"), name, submit=True)
    page = yield from look()
    yield from click(page.find("row", contains=name).find("link").ref or "", name)
    return (yield from look())


def add_customer(data: dict, rng: Any, **fields: Any) -> dict:
    customers = data["admin"]["customers"]
    row = {
        "id": len(customers) + 1,
        "account": f"C-{rng.randint(10000, 99999)}0",
        "email": "x@mail.example",
        "phone": "+31 20 555 0101",
        "city": "Utrecht",
        "status": "active",
        "since": "2024-05-02",
        "notes": "",
    } | fields
    customers.append(row)
    return row


class UpdateCustomer(BrowserTask):
    id = "admin-update-customer"
    app = "admin"
    prompt = (
        "In the back office, update the customer Marta Lindqvist: her new email is marta.l@fjordmail.example and her "
        "new phone number is +47 22 33 44 55. Change nothing else."
    )
    changes = {"admin.customers": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        row = add_customer(
            data, rng, name="Marta Lindqvist", city="Bergen", email="marta@oldmail.example", phone="+47 91 000 111"
        )
        return {"id": row["id"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        changed = changed_rows(ep, state, "admin", "customers")
        if len(changed) != 1 or changed[0][0]["id"] != ep.facts["id"]:
            return False, {"customers_changed": len(changed)}
        before, after = changed[0]
        want = before | {"email": "marta.l@fjordmail.example", "phone": "+47 22 33 44 55"}
        return after == want, {"customers_changed": 1}

    def reference(self, ep: Episode) -> Any:
        page = yield from find_customer("Marta Lindqvist")
        yield from fill_form(
            [
                (page.ref_of("textbox", "Email"), "Email", "textbox", "marta.l@fjordmail.example"),
                (
                    page.ref_of("textbox", "Phone (international, e.g. +31 20 123 4567)"),
                    "Phone",
                    "textbox",
                    "+47 22 33 44 55",
                ),
            ]
        )
        yield from click(page.ref_of("button", "Save customer"), "Save customer")

    def wrong(self, ep: Episode) -> Any:  # a phone number without the country code: refused, so nothing saved
        page = yield from find_customer("Marta Lindqvist")
        yield from fill_form(
            [
                (page.ref_of("textbox", "Email"), "Email", "textbox", "marta.l@fjordmail.example"),
                (
                    page.ref_of("textbox", "Phone (international, e.g. +31 20 123 4567)"),
                    "Phone",
                    "textbox",
                    "22 33 44 55",
                ),
            ]
        )
        yield from click(page.ref_of("button", "Save customer"), "Save customer")


class Onboard(BrowserTask):
    id = "admin-onboard-employee"
    app = "admin"
    prompt = (
        "Onboard a new employee with the back office's onboarding wizard: Theo Brandt, work email "
        "theo.brandt@northwind.example, starting 2026-04-01, in the Search team as an Engineer, managed by the "
        "Search team's Engineering Manager (see the employee list), with a 15-inch laptop."
    )
    changes = {"admin.employees": "insert"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        manager = next(
            e for e in data["admin"]["employees"] if e["team"] == "Search" and e["role"] == "Engineering Manager"
        )
        return {"manager": manager["name"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        made = new_rows(ep, state, "admin", "employees")
        want = {
            "name": "Theo Brandt",
            "email": "theo.brandt@northwind.example",
            "team": "Search",
            "role": "Engineer",
            "start_date": "2026-04-01",
            "laptop": "15-inch laptop",
            "manager": ep.facts["manager"],
            "status": "starting",
        }
        ok = len(made) == 1 and {k: made[0][k] for k in want} == want
        return ok, {"employees_added": len(made)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/employees?q=search")
        page = yield from look()
        manager = None
        while manager is None:
            rows = page.find("table").find_all("row")[1:]
            hit = [r for r in rows if "Engineering Manager" in r.all_text and "Search" in r.all_text]
            if hit:
                manager = hit[0].find_all("cell")[0].name
                break
            yield from click(page.ref_of("link", "Next page"), "Next page")
            page = yield from look()
        yield from navigate(ADMIN + "/onboarding")
        page = yield from look()
        yield from fill_form(
            [
                (page.ref_of("textbox", "Full name"), "Full name", "textbox", "Theo Brandt"),
                (page.ref_of("textbox", "Work email"), "Work email", "textbox", "theo.brandt@northwind.example"),
                (page.ref_of("textbox", "Start date (YYYY-MM-DD)"), "Start date", "textbox", "2026-04-01"),
            ]
        )
        yield from click(page.ref_of("button", "Next"), "Next")
        page = yield from look()
        yield from select(page.ref_of("combobox", "Team"), ["Search"], "Team")
        yield from select(page.ref_of("combobox", "Role"), ["Engineer"], "Role")
        yield from select(page.ref_of("combobox", "Manager"), [manager], "Manager")
        yield from click(page.ref_of("button", "Next"), "Next")
        page = yield from look()
        yield from select(page.ref_of("combobox", "Computer"), ["15-inch laptop"], "Computer")
        yield from click(page.ref_of("button", "Next"), "Next")
        page = yield from look()
        page.find("cell", "Theo Brandt")
        yield from click(page.ref_of("button", "Confirm onboarding"), "Confirm onboarding")

    def wrong(self, ep: Episode) -> Any:  # stops at the review step (nothing is saved until confirmed)
        yield from navigate(ADMIN + "/onboarding")
        page = yield from look()
        yield from fill_form(
            [
                (page.ref_of("textbox", "Full name"), "Full name", "textbox", "Theo Brandt"),
                (page.ref_of("textbox", "Work email"), "Work email", "textbox", "theo.brandt@northwind.example"),
                (page.ref_of("textbox", "Start date (YYYY-MM-DD)"), "Start date", "textbox", "2026-04-01"),
            ]
        )
        yield from click(page.ref_of("button", "Next"), "Next")
        page = yield from look()
        yield from select(page.ref_of("combobox", "Team"), ["Search"], "Team")
        yield from select(page.ref_of("combobox", "Role"), ["Engineer"], "Role")
        yield from select(page.ref_of("combobox", "Manager"), [ep.facts["manager"]], "Manager")
        yield from click(page.ref_of("button", "Next"), "Next")


class OldestCustomer(BrowserTask):
    id = "admin-oldest-customer"
    app = "admin"
    prompt = "In the back office, find the customer who has been a customer the longest. Submit their account number."
    answer = True

    def scenario(self, data: dict, rng: Any) -> Facts:
        first = min(data["admin"]["customers"], key=lambda c: (c["since"], c["id"]))
        for c in data["admin"]["customers"]:
            if c is not first and c["since"] == first["since"]:
                c["since"] = "2020-01-01" if first["since"] < "2020-01-01" else c["since"][:8] + "28"
        first["since"] = min(first["since"], "2019-11-04")
        return {"expected": first["account"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return same_answer(answer, ep.facts["expected"]), {}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/customers")
        page = yield from look()
        yield from select(page.ref_of("combobox", "Sort by"), ["Customer since"], "Sort by")
        yield from click(page.ref_of("button", "Apply"), "Apply")
        page = yield from look()
        yield from submit(page.find("table").find_all("row")[1].find("link").name)

    def wrong(self, ep: Episode) -> Any:  # the first row without sorting
        yield from navigate(ADMIN + "/customers")
        page = yield from look()
        yield from submit(page.find("table").find_all("row")[1].find("link").name)


class Refunds(BrowserTask):
    id = "admin-decide-refunds"
    app = "admin"
    prompt = (
        "In the back office, approve every pending refund of 50.00 EUR or less, and reject every other pending refund."
    )
    changes = {"admin.refunds": "update"}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        before = {r["id"]: r for r in ep.initial["admin"]["refunds"]}
        bad = []
        for r in state["admin"]["refunds"]:
            was = before[r["id"]]
            want = (
                was["status"] if was["status"] != "pending" else ("approved" if was["amount"] <= 5000 else "rejected")
            )
            if r["status"] != want or r["amount"] != was["amount"] or r["customer_id"] != was["customer_id"]:
                bad.append(r["id"])
        return not bad, {"wrong_refunds": len(bad)}

    def reference(self, ep: Episode) -> Any:
        while True:
            yield from navigate(ADMIN + "/refunds")
            page = yield from look()
            rows = page.find("table").find_all("row")[1:]
            if not rows:
                return
            cells = rows[0].find_all("cell")
            rid, amount = cells[0].name, float(cells[2].name.lstrip("€"))
            verb = "Approve" if amount <= 50 else "Reject"
            yield from click(rows[0].ref_of("button", f"{verb} {rid}"), f"{verb} {rid}")

    def wrong(self, ep: Episode) -> Any:  # approves everything
        while True:
            yield from navigate(ADMIN + "/refunds")
            page = yield from look()
            rows = page.find("table").find_all("row")[1:]
            if not rows:
                return
            rid = rows[0].find_all("cell")[0].name
            yield from click(rows[0].ref_of("button", f"Approve {rid}"), f"Approve {rid}")


class SuspendCity(BrowserTask):
    id = "admin-suspend-ghent"
    app = "admin"
    prompt = "Our Ghent partner closed: in the back office, set every active customer in Ghent to 'suspended'. Change nothing else."
    changes = {"admin.customers": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        add_customer(data, rng, name="Lotte Peeters", city="Ghent", phone="+32 9 123 4567")
        add_customer(data, rng, name="Wout Claes", city="Ghent", phone="+32 9 765 4321", status="suspended")
        return {}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        before = {c["id"]: c for c in ep.initial["admin"]["customers"]}
        bad = [
            c["id"]
            for c in state["admin"]["customers"]
            if c
            != (before[c["id"]] | {"status": "suspended"} if before[c["id"]]["city"] == "Ghent" else before[c["id"]])
        ]
        return not bad, {"wrong_customers": len(bad)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/customers?q=ghent")
        page = yield from look()
        links = [
            (r.find("link").name, r.all_text)
            for r in page.find("table").find_all("row")[1:]
            if "active" in r.all_text.split()
        ]
        for account, _ in links:
            yield from navigate(ADMIN + "/customers?q=ghent")
            page = yield from look()
            yield from click(page.ref_of("link", account), account)
            page = yield from look()
            yield from select(page.ref_of("combobox", "Status"), ["suspended"], "Status")
            yield from click(page.ref_of("button", "Save customer"), "Save customer")

    def wrong(self, ep: Episode) -> Any:  # the first one only
        yield from navigate(ADMIN + "/customers?q=ghent")
        page = yield from look()
        row = next(r for r in page.find("table").find_all("row")[1:] if "active" in r.all_text.split())
        yield from click(row.find("link").ref or "", "customer")
        page = yield from look()
        yield from select(page.ref_of("combobox", "Status"), ["closed"], "Status")
        yield from click(page.ref_of("button", "Save customer"), "Save customer")


class AddSupplier(BrowserTask):
    id = "admin-add-supplier"
    app = "admin"
    prompt = (
        "Add a supplier in the back office: Baltic Paper Works, VAT number LV 40003 456789, email "
        "orders@balticpaper.example, country Latvia."
    )
    changes = {"admin.suppliers": "insert"}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        made = new_rows(ep, state, "admin", "suppliers")
        want = {
            "name": "Baltic Paper Works",
            "vat": "LV40003456789",
            "email": "orders@balticpaper.example",
            "country": "Latvia",
        }
        return len(made) == 1 and {k: made[0][k] for k in want} == want, {"suppliers_added": len(made)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/suppliers")
        page = yield from look()
        yield from fill_form(
            [
                (page.ref_of("textbox", "Name"), "Name", "textbox", "Baltic Paper Works"),
                (page.ref_of("textbox", "VAT number"), "VAT number", "textbox", "LV 40003 456789"),
                (page.ref_of("textbox", "Email"), "Email", "textbox", "orders@balticpaper.example"),
                (page.ref_of("textbox", "Country"), "Country", "textbox", "Latvia"),
            ]
        )
        yield from click(page.ref_of("button", "Add supplier"), "Add supplier")

    def wrong(self, ep: Episode) -> Any:  # a VAT number without the country letters: refused
        yield from navigate(ADMIN + "/suppliers")
        page = yield from look()
        yield from fill_form(
            [
                (page.ref_of("textbox", "Name"), "Name", "textbox", "Baltic Paper Works"),
                (page.ref_of("textbox", "VAT number"), "VAT number", "textbox", "40003456789"),
                (page.ref_of("textbox", "Email"), "Email", "textbox", "orders@balticpaper.example"),
                (page.ref_of("textbox", "Country"), "Country", "textbox", "Latvia"),
            ]
        )
        yield from click(page.ref_of("button", "Add supplier"), "Add supplier")


class CloseTicket(BrowserTask):
    id = "admin-close-ticket"
    app = "admin"
    prompt = (
        "Close the support ticket about a double charge, with a resolution saying the duplicate payment was refunded "
        "(use the word 'refunded'). Leave the other tickets alone."
    )
    changes = {"admin.tickets": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        tickets = data["admin"]["tickets"]
        tid = len(tickets) + 1
        tickets.append(
            {
                "id": tid,
                "customer_id": rng.randint(1, 75),
                "subject": "Double charge on my card",
                "body": "I was charged twice for order TH-4101.",
                "status": "open",
                "priority": "urgent",
                "resolution": "",
            }
        )
        return {"ticket": tid}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        changed = changed_rows(ep, state, "admin", "tickets")
        ok = (
            len(changed) == 1
            and changed[0][1]["id"] == ep.facts["ticket"]
            and changed[0][1]["status"] == "closed"
            and "refunded" in changed[0][1]["resolution"].lower()
        )
        return ok, {"tickets_changed": len(changed)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/tickets")
        page = yield from look()
        yield from type_into(page.ref_of("textbox", "Search"), "double charge", submit=True)
        page = yield from look()
        yield from click(page.find("row", contains="Double charge").find("link").ref or "", "ticket")
        page = yield from look()
        yield from type_into(
            page.ref_of("textbox", "Resolution"),
            "The duplicate payment was refunded to the card.",
            element="Resolution",
        )
        yield from click(page.ref_of("button", "Close ticket"), "Close ticket")

    def wrong(self, ep: Episode) -> Any:  # too short a resolution: refused
        yield from navigate(ADMIN + "/tickets?q=double+charge")
        page = yield from look()
        yield from click(page.find("row", contains="Double charge").find("link").ref or "", "ticket")
        page = yield from look()
        yield from type_into(page.ref_of("textbox", "Resolution"), "refunded", element="Resolution")
        yield from click(page.ref_of("button", "Close ticket"), "Close ticket")


class CountEngineers(BrowserTask):
    id = "admin-count-engineers"
    app = "admin"
    prompt = "How many people in the Mobile team have the role Engineer or Senior Engineer? Submit the number."
    answer = True

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        n = sum(
            1
            for e in ep.initial["admin"]["employees"]
            if e["team"] == "Mobile" and e["role"] in ("Engineer", "Senior Engineer")
        )
        return same_answer(answer, n), {}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/employees?q=mobile")
        page = yield from look()
        count = 0
        while True:
            for row in page.find("table").find_all("row")[1:]:
                cells = [c.name for c in row.find_all("cell")]
                count += cells[2] == "Mobile" and cells[3] in ("Engineer", "Senior Engineer")
            nxt = page.find_all("link", "Next page")
            if not nxt:
                break
            yield from click(nxt[0].ref or "", "Next page")
            page = yield from look()
        yield from submit(str(count))

    def wrong(self, ep: Episode) -> Any:  # counts everyone in the team
        yield from navigate(ADMIN + "/employees?q=mobile")
        page = yield from look()
        yield from submit(str(sum(1 for r in page.find("table").find_all("row")[1:] if "Mobile" in r.all_text)))


class RaisePriority(BrowserTask):
    id = "admin-raise-crash-tickets"
    app = "admin"
    prompt = "Set the priority of every support ticket titled 'App crashes' that is not closed to 'high'. Change nothing else."
    changes = {"admin.tickets": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        tickets = data["admin"]["tickets"]
        for status in ("open", "pending", "closed"):
            tickets.append(
                {
                    "id": len(tickets) + 1,
                    "customer_id": rng.randint(1, 75),
                    "subject": "App crashes",
                    "body": "The app closes on start.",
                    "status": status,
                    "priority": "normal",
                    "resolution": "",
                }
            )
        return {}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        before = {t["id"]: t for t in ep.initial["admin"]["tickets"]}
        bad = []
        for t in state["admin"]["tickets"]:
            was = before[t["id"]]
            want = was | {"priority": "high"} if was["subject"] == "App crashes" and was["status"] != "closed" else was
            if t != want:
                bad.append(t["id"])
        return not bad, {"wrong_tickets": len(bad)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/tickets?q=app+crashes")
        page = yield from look()
        todo = [
            r.find("link").name
            for r in page.find("table").find_all("row")[1:]
            if "App crashes" in r.all_text and "closed" not in r.all_text.split()
        ]
        for ticket in todo:
            yield from navigate(ADMIN + "/tickets/" + ticket.removeprefix("T-"))
            page = yield from look()
            yield from select(page.ref_of("combobox", "Priority"), ["high"], "Priority")
            yield from click(page.ref_of("button", "Change priority"), "Change priority")

    def wrong(self, ep: Episode) -> Any:  # the closed ones too (first: the reward ends the episode on success)
        yield from navigate(ADMIN + "/tickets?q=app+crashes")
        page = yield from look()
        rows = [r for r in page.find("table").find_all("row")[1:] if "App crashes" in r.all_text]
        rows.sort(key=lambda r: "closed" not in r.all_text.split())
        for ticket in [r.find("link").name for r in rows]:
            yield from navigate(ADMIN + "/tickets/" + ticket.removeprefix("T-"))
            page = yield from look()
            yield from select(page.ref_of("combobox", "Priority"), ["high"], "Priority")
            yield from click(page.ref_of("button", "Change priority"), "Change priority")


class SuspendedInCity(BrowserTask):
    id = "admin-count-suspended"
    app = "admin"
    prompt = "How many customers in Porto are suspended? Submit the number."
    answer = True

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        n = sum(1 for c in ep.initial["admin"]["customers"] if c["city"] == "Porto" and c["status"] == "suspended")
        return same_answer(answer, n), {}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(ADMIN + "/customers")
        page = yield from look()
        yield from type_into(page.ref_of("textbox", "Search"), "Porto", submit=True)
        page = yield from look()
        count = 0
        while True:
            count += sum(
                1
                for r in page.find("table").find_all("row")[1:]
                if [c.name for c in r.find_all("cell")][3:5] == ["Porto", "suspended"]
            )
            nxt = page.find_all("link", "Next page")
            if not nxt:
                break
            yield from click(nxt[0].ref or "", "Next page")
            page = yield from look()
        yield from submit(str(count))

    def wrong(self, ep: Episode) -> Any:  # every customer in Porto
        yield from navigate(ADMIN + "/customers?q=porto")
        page = yield from look()
        yield from submit(str(len(page.find("table").find_all("row")) - 1))


TASKS = [
    UpdateCustomer(),
    Onboard(),
    OldestCustomer(),
    Refunds(),
    SuspendCity(),
    AddSupplier(),
    CloseTicket(),
    CountEngineers(),
    RaisePriority(),
    SuspendedInCity(),
]
