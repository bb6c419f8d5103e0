"""Helpers for interactive scripted solutions of browser tasks: each is a generator to ``yield from``
inside a solution's generator; it yields Playwright MCP tool calls and gets their observations back,
like an agent (``obs = yield action``).

```python
def reference(task, seed):
    yield from navigate("http://wiki.localhost:8000/")
    page = yield from look()                       # browser_snapshot, parsed
    yield from type_into(page.ref_of("textbox", "Search the handbook"), "on-call", submit=True)
    ...
    yield from submit("Priya Tanaka")
```
A step that fails (an error result, an element not in the snapshot) raises :class:`ScriptError`, so a
reference that no longer works says where.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from openenv_mcp.types import CallTool
from openenv_mcp.worlds.browser.snapshot import Snapshot, SnapshotError

__all__ = [
    "ScriptError",
    "Steps",
    "click",
    "fill_form",
    "look",
    "navigate",
    "result_text",
    "select",
    "submit",
    "type_into",
    "value_of",
]

Steps = Generator[CallTool, Any, Any]
"""What the helpers are: generators of calls that receive each call's observation."""


class ScriptError(RuntimeError):
    """A scripted step did not do what the script expected."""


def result_text(obs: Any) -> str:
    result = getattr(obs, "result", None)
    if result is None:
        return ""
    return "\n".join(getattr(c, "text", "") or "" for c in result.content)


def call(name: str, arguments: dict[str, Any], *, may_fail: bool = False) -> Steps:
    """One tool call; its observation (an error result raises unless ``may_fail``)."""
    obs = yield CallTool(name=name, arguments=arguments)
    if not may_fail and getattr(getattr(obs, "result", None), "is_error", False):
        raise ScriptError(f"{name}({arguments}) failed: {result_text(obs)[:600]}")
    return obs


def navigate(url: str) -> Steps:
    return (yield from call("browser_navigate", {"url": url}))


def look() -> Generator[CallTool, Any, Snapshot]:
    """``browser_snapshot``, parsed."""
    obs = yield from call("browser_snapshot", {})
    try:
        return Snapshot.of_result(result_text(obs))
    except SnapshotError as e:
        raise ScriptError(str(e)) from e


def click(ref: str, element: str = "element") -> Steps:
    return (yield from call("browser_click", {"element": element, "target": ref}))


def type_into(ref: str, text: str, *, element: str = "field", submit: bool = False) -> Steps:
    args: dict[str, Any] = {"element": element, "target": ref, "text": text}
    if submit:
        args["submit"] = True
    return (yield from call("browser_type", args))


def select(ref: str, values: list[str], element: str = "list") -> Steps:
    return (yield from call("browser_select_option", {"element": element, "target": ref, "values": values}))


def fill_form(fields: list[tuple[str, str, str, str]]) -> Steps:
    """``browser_fill_form`` with ``(ref, name, type, value)`` per field."""
    items = [{"target": ref, "name": name, "type": kind, "value": value} for ref, name, kind, value in fields]
    return (yield from call("browser_fill_form", {"fields": items}))


def value_of(ref: str, element: str = "field") -> Steps:
    """A form field's exact value (a snapshot shows a textarea's lines joined by spaces), read with
    ``browser_evaluate`` on the element."""
    import json

    obs = yield from call("browser_evaluate", {"element": element, "target": ref, "function": "(el) => el.value"})
    text = result_text(obs)
    section = text.split("### Result", 1)[-1].split("\n### ", 1)[0].strip()
    try:
        return json.loads(section)
    except ValueError as e:
        raise ScriptError(f"browser_evaluate did not return a JSON value: {section[:200]!r}") from e


def submit(answer: str) -> Steps:
    return (yield from call("submit", {"answer": answer}))
