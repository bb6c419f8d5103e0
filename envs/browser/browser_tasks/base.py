"""What a browser task is (see the package docstring)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from openenv_mcp.worlds.browser import origin
from openenv_mcp.worlds.browser.seeding import rng_for

Facts = dict[str, Any]
"""What a task's scenario decided for one seed (the product to buy, the expected answer...): the
grader's and the reference's, never the agent's."""

APPS = ("shop", "mail", "admin", "wiki")


@dataclass
class Episode:
    """One episode's world as the grader knows it."""

    task: BrowserTask
    seed: int
    data: dict[str, dict[str, Any]]
    """What each application was seeded with."""
    facts: Facts
    initial: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    """The applications' state right after seeding (their own derived rows included)."""


class BrowserTask:
    """One task. Subclasses set the class attributes and override :meth:`scenario`, :meth:`check`
    and :meth:`reference` (and :meth:`wrong`)."""

    id: ClassVar[str] = ""
    app: ClassVar[str] = ""
    """The application the task starts in."""
    prompt: ClassVar[str] = ""
    answer: ClassVar[bool] = False
    """Answered with ``submit`` (else graded on the applications' end state)."""
    changes: ClassVar[dict[str, str]] = {}
    """``"app.table": "insert" | "update" | "any"`` — what the task may change; every other table
    must keep the rows it was seeded with (else the change is destructive and scores 0)."""

    @property
    def start_url(self) -> str:
        return origin(self.app) + "/"

    def world(self, seed: int) -> Episode:
        """Generate every application's data for ``seed`` and this task's scenario in it."""
        from browser_tasks.data import generate

        data = generate(rng_for("world", seed))
        facts = self.scenario(data, rng_for(self.id, seed))
        return Episode(self, seed, data, facts)

    # -- override -----------------------------------------------------------------------------
    def scenario(self, data: dict[str, dict[str, Any]], rng: Any) -> Facts:
        """Shape ``data`` for this task (add the message to reply to...) and say what is expected."""
        return {}

    def check(self, ep: Episode, state: dict[str, Any], answer: str | None) -> tuple[bool, dict[str, Any]]:
        """Whether the task is done, from the applications' ``state`` (and the submitted ``answer``)."""
        raise NotImplementedError

    def reference(self, ep: Episode) -> Generator[Any, Any, None]:
        raise NotImplementedError

    def wrong(self, ep: Episode) -> Generator[Any, Any, None]:
        """A plausible but wrong attempt (default: look at the start page and give up)."""
        from openenv_mcp.worlds.browser.driving import look, navigate

        yield from navigate(self.start_url)
        yield from look()

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "prompt": self.prompt, "data": {"app": self.app, "start_url": self.start_url}}
