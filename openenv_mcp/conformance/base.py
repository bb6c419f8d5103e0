"""Rule registry and the context every rule gets.

A rule is an async function ``check_*(ctx)`` registered with :func:`rule`
under a stable id and a severity. It passes by returning (a string it returns is the
verdict's message: what it normalized or ignored), is inconclusive by raising
:class:`Inconclusive`, fails by raising
:class:`Failed` with a message that names the call and the actual value, and
declines by raising :class:`Skipped` with the reason it does not apply. No
bare asserts: a check never depends on ``python -O``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool

from .report import Result, Severity
from .subject import Subject

__all__ = ["RULES", "Context", "Failed", "Inconclusive", "Rule", "Skipped", "fail_if", "leaf", "rule"]


class Failed(Exception):
    """The rule does not hold; the message says which call gave which value."""


class Skipped(Exception):
    """The rule does not apply to this target; the message says why."""


class Inconclusive(Exception):
    """The rule ran but its calls could not test what it promises (e.g. every write failed);
    the message says what failed and how to make it conclusive. Never a pass."""


def fail_if(problems: list[str], limit: int = 6) -> None:
    """Raise :class:`Failed` listing ``problems`` (at most ``limit`` shown) when there are any."""
    problems = [p.strip().splitlines()[0] if p.strip() else p for p in dict.fromkeys(problems)]
    if problems:
        shown = "; ".join(problems[:limit])
        more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
        raise Failed(shown + more)


def leaf(error: BaseException) -> BaseException:
    """The meaningful exception inside (nested) exception groups: a verdict first, else the first leaf."""
    if not isinstance(error, BaseExceptionGroup):
        return error
    leaves = [leaf(e) for e in error.exceptions]
    for kind in (Failed, Inconclusive, Skipped):
        for item in leaves:
            if isinstance(item, kind):
                return item
    return leaves[0] if leaves else error


@dataclass
class Rule:
    """One registered rule."""

    id: str
    severity: Severity
    title: str
    fn: Callable[[Context], Awaitable[str | None]]
    needs: frozenset[str]
    timeout: float


RULES: dict[str, Rule] = {}
"""Every rule, by id, in registration (= run) order."""


def rule(
    id: str, severity: Severity, title: str, *, needs: tuple[str, ...] = ("mcp",), timeout: float = 60.0
) -> Callable[[Callable[[Context], Awaitable[str | None]]], Callable[[Context], Awaitable[str | None]]]:
    """Register ``check_*`` as rule ``id``. ``needs``: subject capabilities it requires
    (``mcp``, ``episodes``, ``local``, ``http``)."""

    def register(fn: Callable[[Context], Awaitable[str | None]]) -> Callable[[Context], Awaitable[str | None]]:
        if id in RULES:
            raise ValueError(f"rule id {id!r} registered twice")
        RULES[id] = Rule(id=id, severity=severity, title=title, fn=fn, needs=frozenset(needs), timeout=timeout)
        return fn

    return register


@dataclass
class Context:
    """What a rule sees: the subject, the run's options and a cache shared by rules."""

    subject: Subject
    seed: int = 0
    calls: int = 12
    """How many generated calls a rule makes when the environment has no scripted trajectories."""
    max_tasks: int = 4
    """How many tasks the parity rule replays (time-boxed after the first)."""
    results: dict[str, Result] = field(default_factory=dict)
    """Verdicts of the rules run so far (a rule may mention a related failure)."""
    cache: dict[str, Any] = field(default_factory=dict)

    async def tools(self) -> list[Tool]:
        """The tool list (``tools/list`` on a fresh session, every page), cached."""
        if "tools" not in self.cache:
            async with self.subject.mcp() as client:
                self.cache["tools"] = await list_all_tools(client)
        return self.cache["tools"]

    def failed(self, rule_id: str) -> bool:
        r = self.results.get(rule_id)
        return r is not None and r.status in ("failed", "known")


async def list_all_tools(client: Any, max_pages: int = 100) -> list[Tool]:
    """Every page of ``tools/list`` (bounded)."""
    tools: list[Tool] = []
    cursor = None
    for _ in range(max_pages):
        page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise Failed(f"tools/list: still returning nextCursor after {max_pages} pages")
