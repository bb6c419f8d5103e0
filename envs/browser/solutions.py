"""Scripted solutions of the ``browser`` environment: interactive scripts that drive the real
Playwright MCP tools, finding every element in the snapshot they just got (refs change with the
page and the seed), like an agent. Each task's ``reference`` solves it, its ``wrong`` does not, and
``probes`` are the reward hacks every task must score 0 on (``openenv-mcp validate`` runs them)."""

from __future__ import annotations

from typing import Any

from browser_tasks import TASKS


def reference(task: Any, seed: int | None = None) -> Any:
    t = TASKS[task.id]
    return t.reference(t.world(seed or 0))


def wrong(task: Any, seed: int | None = None) -> Any:
    t = TASKS[task.id]
    return t.wrong(t.world(seed or 0))
