"""Rule registry and the context every rule gets.

A rule is an async function ``check_*(ctx)`` registered with :func:`rule`
under a stable id and a severity. It passes by returning (a string it returns is the
verdict's message: what it normalized or ignored), is inconclusive by raising
:class:`Inconclusive`, fails by raising
:class:`Failed` with a message that names the call and the actual value, and
declines by raising :class:`Skipped` with the reason it does not apply. A rule
that makes tool calls ends with :meth:`Context.conclude`: when most of its
calls failed it raises :class:`Inconclusive` (it compared errors with errors,
which proves nothing) instead of passing. No bare asserts: a check never
depends on ``python -O``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool

from openenv_mcp.conformance.report import Result, Severity
from openenv_mcp.conformance.subject import Subject
from openenv_mcp.types import CallTool

__all__ = ["RULES", "Context", "Failed", "Inconclusive", "Rule", "Skipped", "fail_if", "leaf", "rule"]

HOW_TO_CONCLUDE = (
    "give calls that work as `solutions` in the env file (per task a reference trajectory of "
    '{"name": tool, "arguments": {...}} calls; see docs/env-file.md): the rules replay them and '
    "take their arguments as samples"
)


class Failed(Exception):
    """The rule does not hold; the message says which call gave which value."""


class Skipped(Exception):
    """The rule does not apply to this target; the message says why."""


class Inconclusive(Exception):
    """The rule ran but decided nothing (its calls mostly failed); the message says how to fix that."""


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
    runs_after: tuple[str, ...] = ()
    """Rules that run before this one when both are selected (the report keeps registration order)."""


RULES: dict[str, Rule] = {}
"""Every rule, by id, in registration (= run) order."""


def rule(
    id: str,
    severity: Severity,
    title: str,
    *,
    needs: tuple[str, ...] = ("mcp",),
    timeout: float = 60.0,
    runs_after: tuple[str, ...] = (),
) -> Callable[[Callable[[Context], Awaitable[str | None]]], Callable[[Context], Awaitable[str | None]]]:
    """Register ``check_*`` as rule ``id``. ``needs``: subject capabilities it requires
    (``mcp``, ``episodes``, ``local``, ``http``). ``runs_after``: rules to run first when selected
    (the report still lists rules in registration order)."""

    def register(fn: Callable[[Context], Awaitable[str | None]]) -> Callable[[Context], Awaitable[str | None]]:
        if id in RULES:
            raise ValueError(f"rule id {id!r} registered twice")
        RULES[id] = Rule(
            id=id, severity=severity, title=title, fn=fn, needs=frozenset(needs), timeout=timeout, runs_after=runs_after
        )
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
    rule_id: str = ""
    """The rule running now (set by the runner)."""
    notes: list[str] = field(default_factory=list)
    """What the running rule could not check (shown as the message of a pass; reset per rule)."""

    def note(self, text: str) -> None:
        """Say what this rule left unchecked and why; a pass then carries the note as its message."""
        self.notes.append(text)

    def sample_calls(self, task: Any = None) -> list[CallTool]:
        """The calls of the env file's ``solutions`` (reference trajectories: ``task``'s first, in
        order, then every other task's; each distinct call once): calls known to work."""
        key = f"samples:{getattr(task, 'id', None)}"
        if key not in self.cache:
            environment = self.subject.environment
            tasks = list(environment.tasks.tasks) if environment is not None else []
            if task is not None:
                tasks = [t for t in tasks if t.id == task.id] + [t for t in tasks if t.id != task.id]
            calls: list[CallTool] = []
            for t in tasks:
                for call in self.subject.trajectory(t, "reference") or []:
                    if call not in calls:
                        calls.append(call)
            self.cache[key] = calls
        return self.cache[key]

    async def tools(self) -> list[Tool]:
        """The tool list (``tools/list`` on a fresh session, every page), cached."""
        if "tools" not in self.cache:
            async with self.subject.mcp() as client:
                self.cache["tools"] = await list_all_tools(client)
        return self.cache["tools"]

    def conclude(self, what: str = "tool calls", tally: Any = None) -> None:
        """End of a rule that made tool calls through episodes (``ctx.subject.tally``, reset by the
        runner before each rule; or ``tally``): raise :class:`Inconclusive` when no call was made, or when at
        least half of the tools it called never answered without an error (their calls were
        rejected, so the rule compared errors with errors)."""
        tally = tally if tally is not None else self.subject.tally
        if tally.calls == 0:
            raise Inconclusive(f"no {what} were made (no tools, or the episode ended at once): nothing was compared")
        untested, called = tally.untested(), tally.called()
        if untested and len(untested) * 2 >= len(called):
            ok = sum(tally.ok.values())
            raise Inconclusive(
                f"{len(untested)} of the {len(called)} tools called never succeeded ({', '.join(map(repr, untested))}; "
                f"{ok} of {tally.calls} calls succeeded; first: {tally.first_failure[untested[0]]}): the episodes "
                f"agreed on errors, which proves nothing; to make this rule conclusive, {HOW_TO_CONCLUDE}"
            )

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


async def call_tool_as_sent(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    """``tools/call`` through ``client`` (an SDK ``Client``), the result as the server sent it:
    ``Client.call_tool`` validates ``structuredContent`` against the tool's outputSchema and
    raises, which would hide the very value a rule must judge or compare (JSON-RPC errors
    still raise ``MCPError``)."""
    from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult

    request = CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments))
    return await client.session.send_request(request, CallToolResult)
