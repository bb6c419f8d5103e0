"""Every task, by id."""

from __future__ import annotations

from browser_tasks import admin, mail, shop, wiki
from browser_tasks.base import BrowserTask

TASKS: dict[str, BrowserTask] = {t.id: t for t in [*shop.TASKS, *mail.TASKS, *admin.TASKS, *wiki.TASKS]}
