"""Wiki (Handbook) tasks: find facts and answer; edit pages."""

from __future__ import annotations

from typing import Any

from openenv_mcp.worlds.browser.driving import click, look, navigate, submit, type_into

from .base import BrowserTask, Episode, Facts
from .checks import same_answer

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


TASKS = [WikiLead()]
