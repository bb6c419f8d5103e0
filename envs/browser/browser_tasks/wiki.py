"""Wiki (Handbook) tasks: find facts and answer; edit pages."""

from __future__ import annotations

from typing import Any

from browser_tasks.base import BrowserTask, Episode, Facts
from browser_tasks.checks import same_answer
from openenv_mcp.worlds.browser.driving import click, fill_form, look, navigate, submit, type_into, value_of

WIKI = "http://wiki.localhost:8000"


def open_page(title: str, query: str) -> Any:
    """Search the handbook for ``query`` and open the result titled ``title``; the page's snapshot."""
    yield from navigate(WIKI + "/")
    page = yield from look()
    yield from type_into(page.ref_of("textbox", "Search the handbook"), query, submit=True)
    page = yield from look()
    yield from click(page.ref_of("link", title), title)
    return (yield from look())


class WikiLead(BrowserTask):
    id = "wiki-team-lead"
    app = "wiki"
    prompt = "In the company handbook, find who leads the Search team. Submit their full name."
    answer = True

    def scenario(self, data: dict[str, Any], rng: Any) -> Facts:
        return {"expected": data["wiki"]["_facts"]["leads"]["Search"]}

    def check(self, ep: Episode, state: dict[str, Any], answer: str | None) -> tuple[bool, dict[str, Any]]:
        return same_answer(answer, ep.facts["expected"]), {}

    def reference(self, ep: Episode) -> Any:
        page = yield from open_page("Team directory", "team directory")
        row = page.find("row", contains="Search")
        lead = row.children[1].name
        yield from submit(lead)

    def wrong(self, ep: Episode) -> Any:
        page = yield from open_page("Team directory", "team directory")
        yield from submit(page.find("row", contains="Payments").children[1].name)


class Answer(BrowserTask):
    """A question answered from one page of the handbook."""

    app = "wiki"
    answer = True
    page_title = ""
    query = ""

    def expected(self, facts: dict[str, Any]) -> str:
        raise NotImplementedError

    def scenario(self, data: dict[str, Any], rng: Any) -> Facts:
        return {"expected": self.expected(data["wiki"]["_facts"])}

    def check(self, ep: Episode, state: dict[str, Any], answer: str | None) -> tuple[bool, dict[str, Any]]:
        return same_answer(answer, ep.facts["expected"]), {}

    def read(self, page: Any) -> str:
        raise NotImplementedError

    def reference(self, ep: Episode) -> Any:
        page = yield from open_page(self.page_title, self.query)
        yield from submit(self.read(page))

    def wrong(self, ep: Episode) -> Any:
        page = yield from open_page(self.page_title, self.query)
        yield from submit(self.read_wrong(page))

    def read_wrong(self, page: Any) -> str:
        return "I could not find it"


class OnCall(Answer):
    id = "wiki-on-call"
    prompt = (
        "According to the handbook's on-call rotation, who is the primary on-call engineer of the Payments team "
        "in the week of 2026-03-16? Submit their full name."
    )
    page_title, query = "On-call rotation", "on-call"

    def expected(self, facts: dict[str, Any]) -> str:
        return facts["oncall"]["Payments"][facts["weeks"].index("2026-03-16")]

    def read(self, page: Any) -> str:
        headers = [h.name for h in page.find("table").find_all("columnheader")]
        return page.find("row", contains="Payments").find_all("cell")[headers.index("Week of 2026-03-16")].name

    def read_wrong(self, page: Any) -> str:  # the week before
        return page.find("row", contains="Payments").find_all("cell")[1].name


class ExpenseLimit(Answer):
    id = "wiki-expense-limit"
    prompt = "What is the most you can claim for one hotel night without a director's approval, per the expense policy? Submit the amount in EUR."
    page_title, query = "Expense policy", "expense"

    def expected(self, facts: dict[str, Any]) -> str:
        return str(facts["limits"]["Hotel"])

    def read(self, page: Any) -> str:
        return page.find("row", contains="Hotel").find_all("cell")[1].name

    def read_wrong(self, page: Any) -> str:
        return page.find("row", contains="Meals").find_all("cell")[1].name


class CodeFreeze(Answer):
    id = "wiki-code-freeze"
    prompt = "When does the next code freeze start, according to the release calendar? Submit the date as YYYY-MM-DD."
    page_title, query = "Release calendar", "release"

    def expected(self, facts: dict[str, Any]) -> str:
        return facts["freeze"]

    def read(self, page: Any) -> str:
        return page.find("paragraph", contains="code freeze starts").all_text.rstrip(".").split()[-1]


class CostCentre(Answer):
    id = "wiki-cost-centre"
    prompt = "Which cost centre must the Identity team use on purchase orders? Submit the code."
    page_title, query = "Cost centres", "cost centre"

    def expected(self, facts: dict[str, Any]) -> str:
        return facts["codes"]["Identity"]

    def read(self, page: Any) -> str:
        return page.find("row", contains="Identity").find_all("cell")[1].name

    def read_wrong(self, page: Any) -> str:
        return page.find("row", contains="Checkout").find_all("cell")[1].name


class Sev1(Answer):
    id = "wiki-sev1-response"
    prompt = (
        "Per the incident runbook, within how many minutes must a SEV1 incident be paged? Submit the number of minutes."
    )
    page_title, query = "Incident runbook", "incident"

    def expected(self, facts: dict[str, Any]) -> str:
        return str(facts["sev1"])

    def read(self, page: Any) -> str:
        return page.find("row", contains="SEV1").find_all("cell")[2].name.split()[0]

    def read_wrong(self, page: Any) -> str:
        return page.find("row", contains="SEV2").find_all("cell")[2].name.split()[0]


class HighestOffice(BrowserTask):
    id = "wiki-highest-office-wifi"
    app = "wiki"
    prompt = (
        "Of our offices described in the handbook's People space, which one is on the highest floor? Submit the name "
        "of that office's Wi-Fi network (not the guest network)."
    )
    answer = True

    def scenario(self, data: dict[str, Any], rng: Any) -> Facts:
        f = data["wiki"]["_facts"]
        top = max(f["floors"], key=lambda c: (f["floors"][c], c))
        return {"expected": f["wifi"][top]}

    def check(self, ep: Episode, state: dict[str, Any], answer: str | None) -> tuple[bool, dict[str, Any]]:
        return same_answer(answer, ep.facts["expected"]), {}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(WIKI + "/spaces/people")
        page = yield from look()
        offices = [link.name for link in page.find_all("link") if link.name.startswith("Office: ")]
        best = (-1, "")
        for title in offices:
            yield from navigate(WIKI + "/spaces/people")
            page = yield from look()
            yield from click(page.ref_of("link", title), title)
            page = yield from look()
            floor = int(page.find("paragraph", contains="is on floor").all_text.rstrip(".").split()[-1])
            network = page.find("listitem", contains="Network:").all_text.split("Network:")[1].strip()
            best = max(best, (floor, network))
        yield from submit(best[1])

    def wrong(self, ep: Episode) -> Any:
        yield from submit("nw-guest")


class SwapOnCall(BrowserTask):
    id = "wiki-swap-on-call"
    app = "wiki"
    prompt = (
        "Edit the handbook's on-call rotation page: the Search team's engineers on call in the weeks of 2026-03-09 and "
        "2026-03-16 swapped shifts, so swap those two names in the table. Save with an edit summary naming both people. "
        "Change nothing else on the page."
    )
    changes = {"wiki.pages": "update", "wiki.revisions": "insert"}

    def scenario(self, data: dict[str, Any], rng: Any) -> Facts:
        f = data["wiki"]["_facts"]
        a, b = f["oncall"]["Search"][1], f["oncall"]["Search"][2]
        if a == b:
            f["oncall"]["Search"][2] = b = "Quentin Rossi" if a != "Quentin Rossi" else "Zoe Tanaka"
            page = next(p for p in data["wiki"]["pages"] if p["slug"] == "on-call-rotation")
            line = next(line for line in page["body"].splitlines() if line.startswith("| Search |"))
            cells = line.split(" | ")
            cells[3] = b
            page["body"] = page["body"].replace(line, " | ".join(cells))
        return {"a": a, "b": b}

    def check(self, ep: Episode, state: dict[str, Any], answer: str | None) -> tuple[bool, dict[str, Any]]:
        before = next(p for p in ep.initial["wiki"]["pages"] if p["slug"] == "on-call-rotation")
        after = next(p for p in state["wiki"]["pages"] if p["slug"] == "on-call-rotation")
        old = next(line for line in before["body"].splitlines() if line.startswith("| Search |"))
        cells = [c.strip() for c in old.strip("|").split("|")]
        cells[2], cells[3] = cells[3], cells[2]
        want = before["body"].replace(old, "| " + " | ".join(cells) + " |")
        others = [p for p in state["wiki"]["pages"] if p["slug"] != "on-call-rotation"]
        same_others = others == [p for p in ep.initial["wiki"]["pages"] if p["slug"] != "on-call-rotation"]
        revs = [r for r in state["wiki"]["revisions"] if r["page_id"] == before["id"]]
        summary_ok = any(
            ep.facts["a"].lower() in r["summary"].lower() and ep.facts["b"].lower() in r["summary"].lower()
            for r in revs
        )
        body_ok = _table_of(after["body"]) == _table_of(want) and _prose_of(after["body"]) == _prose_of(before["body"])
        return body_ok and summary_ok and same_others, {"body_ok": body_ok, "summary_ok": summary_ok}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(WIKI + "/pages/on-call-rotation")
        page = yield from look()
        yield from click(page.ref_of("link", "Edit this page"), "Edit this page")
        page = yield from look()
        text = yield from value_of(page.ref_of("textbox", "Page text"), "Page text")
        line = next(line for line in text.split("\n") if line.startswith("| Search |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        a, b = cells[2], cells[3]
        cells[2], cells[3] = b, a
        body = text.replace(line, "| " + " | ".join(cells) + " |")
        yield from fill_form(
            [
                (page.ref_of("textbox", "Page text"), "Page text", "textbox", body),
                (
                    page.ref_of("textbox", "Edit summary"),
                    "Edit summary",
                    "textbox",
                    f"Swap Search on-call: {a} and {b}",
                ),
            ]
        )
        yield from click(page.ref_of("button", "Save page"), "Save page")

    def wrong(self, ep: Episode) -> Any:  # saves the page unchanged, with a summary
        yield from navigate(WIKI + "/pages/on-call-rotation/edit")
        page = yield from look()
        yield from type_into(
            page.ref_of("textbox", "Edit summary"), f"Swap {ep.facts['a']} and {ep.facts['b']}", element="Edit summary"
        )
        yield from click(page.ref_of("button", "Save page"), "Save page")


def _table_of(body: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in body.splitlines()
        if line.strip().startswith("|")
    ]


def _prose_of(body: str) -> list[str]:
    return [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("|")]


class AddReleaseStep(BrowserTask):
    id = "wiki-add-release-step"
    app = "wiki"
    prompt = (
        "On the handbook's release calendar page, add the step 'Update the changelog' to the end of the Process list "
        "(as its last item), and save with an edit summary. Keep everything else as it is."
    )
    changes = {"wiki.pages": "update", "wiki.revisions": "insert"}

    def check(self, ep: Episode, state: dict[str, Any], answer: str | None) -> tuple[bool, dict[str, Any]]:
        before = next(p for p in ep.initial["wiki"]["pages"] if p["slug"] == "release-calendar")
        after = next(p for p in state["wiki"]["pages"] if p["slug"] == "release-calendar")
        lines = [line.rstrip() for line in after["body"].splitlines() if line.strip()]
        want = [line.rstrip() for line in before["body"].splitlines() if line.strip()] + ["- Update the changelog"]
        others = [p for p in state["wiki"]["pages"] if p["slug"] != "release-calendar"]
        ok = lines == want and others == [p for p in ep.initial["wiki"]["pages"] if p["slug"] != "release-calendar"]
        return ok, {"lines": len(lines)}

    def reference(self, ep: Episode) -> Any:
        page = yield from open_page("Release calendar", "release")
        yield from click(page.ref_of("link", "Edit this page"), "Edit this page")
        page = yield from look()
        text = (yield from value_of(page.ref_of("textbox", "Page text"), "Page text")).rstrip("\n")
        yield from fill_form(
            [
                (page.ref_of("textbox", "Page text"), "Page text", "textbox", text + "\n- Update the changelog"),
                (page.ref_of("textbox", "Edit summary"), "Edit summary", "textbox", "Add the changelog step"),
            ]
        )
        yield from click(page.ref_of("button", "Save page"), "Save page")

    def wrong(self, ep: Episode) -> Any:  # adds it at the top instead
        page = yield from open_page("Release calendar", "release")
        yield from click(page.ref_of("link", "Edit this page"), "Edit this page")
        page = yield from look()
        text = yield from value_of(page.ref_of("textbox", "Page text"), "Page text")
        yield from fill_form(
            [
                (page.ref_of("textbox", "Page text"), "Page text", "textbox", "- Update the changelog\n" + text),
                (page.ref_of("textbox", "Edit summary"), "Edit summary", "textbox", "Add the changelog step"),
            ]
        )
        yield from click(page.ref_of("button", "Save page"), "Save page")


TASKS = [
    WikiLead(),
    OnCall(),
    ExpenseLimit(),
    CodeFreeze(),
    CostCentre(),
    Sev1(),
    HighestOffice(),
    SwapOnCall(),
    AddReleaseStep(),
]
