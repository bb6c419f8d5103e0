"""The browser environment's tasks: each a :class:`BrowserTask` that shapes the seeded world for its
scenario, knows how to check the applications' end state (or the submitted answer), and carries an
interactive reference solution that drives the real Playwright MCP tools from the snapshots it gets.

``TASKS`` (id -> task) is what ``tasks.jsonl`` is built from (``python build.py``) and what the
grader and the solutions look tasks up in.
"""

from __future__ import annotations

from browser_tasks.base import BrowserTask, Episode, Facts
from browser_tasks.catalog import TASKS

__all__ = ["TASKS", "BrowserTask", "Episode", "Facts"]
