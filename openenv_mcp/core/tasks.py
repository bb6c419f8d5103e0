"""Tasks: loading them and picking one deterministically from a seed."""

from __future__ import annotations

import json
import random
import secrets
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from ..types import Task

__all__ = ["TaskSet", "load_tasks"]


def load_tasks(source: str | Path | list[Any] | None, base_dir: Path) -> list[Task]:
    """Tasks from a JSONL file (relative to ``base_dir``) or a list of dicts/Tasks."""
    if source is None:
        return [Task(id="default", prompt="")]
    rows: list[tuple[str, Any]]
    if isinstance(source, list):
        rows = [(f"tasks[{i}]", row) for i, row in enumerate(source)]
    else:
        path = (base_dir / source).resolve()
        if not path.is_file():
            raise ConfigError(f"tasks file {str(path)!r} does not exist")
        rows = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append((f"{path.name}:{n}", json.loads(line)))
                except json.JSONDecodeError as e:
                    raise ConfigError(f"{path.name}:{n}: invalid JSON: {e.msg}") from e
    tasks = []
    for where, row in rows:
        try:
            tasks.append(row if isinstance(row, Task) else Task.model_validate(row))
        except ValidationError as e:
            raise ConfigError(f"{where}: invalid task: {e.errors()[0]['msg']} at {e.errors()[0]['loc']}") from e
    ids = [t.id for t in tasks]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ConfigError(f"task ids must be unique; repeated: {dup}")
    if not tasks:
        raise ConfigError("the task list is empty")
    return tasks


class TaskSet:
    """An environment's tasks with deterministic, seeded selection."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = tasks
        self._by_id = {t.id: t for t in tasks}

    def __len__(self) -> int:
        return len(self.tasks)

    def full(self, task: Task) -> Task:
        """The loaded task with ``task``'s id (grader-only fields included), else ``task``."""
        return self._by_id.get(task.id, task)

    def pick(self, seed: int | None = None, task_id: str | None = None) -> tuple[Task, int]:
        """The task for ``seed`` (or ``task_id``), and the seed used.

        Without a seed one is drawn, and returned, so the episode can be replayed.
        """
        if seed is None:
            seed = secrets.randbelow(2**31)
        if task_id is not None:
            task = self._by_id.get(task_id)
            if task is None:
                raise ConfigError(f"unknown task_id {task_id!r}; known: {', '.join(list(self._by_id)[:10])}...")
            return task, seed
        return self.tasks[random.Random(seed).randrange(len(self.tasks))], seed
