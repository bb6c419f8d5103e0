"""Tasks: where they come from, and which one a seed picks.

Sources (the env file's ``tasks``, or ``make(env, tasks=...)``):

* a JSONL file (``tasks = "tasks.jsonl"``) or a list of task objects: read here, no extra
  dependency;
* a **dataset** (``[tasks] dataset = ...``): a Hugging Face Hub id, local parquet / JSON /
  JSONL / CSV / Arrow files or a folder of them, or a ``datasets.Dataset`` object, mapped
  row by row onto :class:`Task` (see :mod:`openenv_mcp.definitions.taskdata`, which needs the
  ``datasets`` extra and is imported only then);
* a **task source** an installed package registers in the entry-point group
  ``openenv_mcp.task_sources``: ``[tasks] harbor = "tasks/"`` reads a folder of Harbor task
  folders (:mod:`openenv_mcp.worlds.harbor`); the key is the source's name, its value what the
  source is given;
* **named task sets**: ``[tasks.train]``, ``[tasks.eval]``... in one env file, each any of
  the above; ``make(env, tasks="eval")`` or ``--tasks eval`` chooses one.

Order. Seed ``s`` picks the task at position ``s mod n`` of a seeded permutation of the n
tasks (a fresh permutation for every block of n seeds), so seeds ``0..n-1`` play every task
exactly once and ``kn..kn+n-1`` do it again in another order. :meth:`TaskSet.schedule`
gives every task in file order, ``repeat`` times each, with distinct seeds that themselves
pick that task (a replay needs only the seed).
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Callable
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openenv_mcp.errors import ConfigError
from openenv_mcp.types import Task

__all__ = ["TaskSet", "TasksTable", "load_tasks", "resolve_tasks"]


class TasksTable(BaseModel):
    """The ``[tasks]`` table of an env file (or one named set ``[tasks.NAME]`` of it)."""

    model_config = ConfigDict(extra="forbid")

    file: str | None = None
    """A JSONL file of task objects (relative to the env folder); no ``datasets`` needed."""
    dataset: str | None = None
    """A Hub id (``org/name``) or local files: one ``.parquet``/``.json``/``.jsonl``/``.csv``/
    ``.arrow`` file, or a folder of them (or one written by ``Dataset.save_to_disk``)."""
    split: str = "train"
    """The dataset split (a single local file has only ``train``)."""
    config: str | None = None
    """The dataset's configuration (subset) name, for Hub datasets that have several."""
    revision: str | None = None
    """A Hub revision: branch, tag or commit (pin it for reproducible task sets)."""
    id: str | None = None
    """Column holding the task id (default: ``id`` when the dataset has it, else the row's
    index in the split, before ``filter``)."""
    prompt: str = "prompt"
    """The prompt: a column name, or a template over the row's columns: Jinja
    (``"Solve: {{ question }}"``) when it holds ``{{``/``{%``, else ``str.format``
    (``"Solve: {question}"``)."""
    answer: str | None = None
    """Column holding the grader-only answer (``Task.answer``); default ``answer`` when present."""
    data: list[str] | None = None
    """Columns copied into ``Task.data`` (default: every column but the id, answer, workspace
    and prompt columns)."""
    workspace: str | None = None
    """Column holding a per-task workspace seed folder."""
    filter: str | None = None
    """A Jinja expression over the row's columns; rows where it is false are dropped
    (``"difficulty != 'hard'"``)."""
    limit: int | None = Field(default=None, ge=1)
    """Keep the first ``limit`` tasks (after ``filter``)."""
    ids: list[str] | None = None
    """Keep only the tasks with these ids, in this order (a named subset such as ``[tasks.ci]``; every
    id must exist). Applied after ``filter`` and before ``limit``; needs no extra package."""
    private: list[str] = Field(default_factory=list)
    """Keys of ``Task.data`` that are grader-only (as the env's ``private_task_fields``)."""

    def kind(self) -> str:
        if (self.file is None) == (self.dataset is None):
            raise ConfigError("a [tasks] table needs exactly one of `file` (a JSONL file) or `dataset`")
        return "file" if self.file is not None else "dataset"


SOURCE_GROUP = "openenv_mcp.task_sources"
"""Entry-point group of task sources: ``name = "module:function"``, called as
``function(value, base_dir) -> list[Task]`` for ``[tasks] name = value``."""


def task_sources() -> dict[str, EntryPoint]:
    """Name -> entry point of every registered task source."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=SOURCE_GROUP):
        found.setdefault(ep.name, ep)
    return found


_TABLE_KEYS = set(TasksTable.model_fields)


def _table_keys() -> set[str]:
    return _TABLE_KEYS | set(task_sources())


def _from_source(table: dict[str, Any], base_dir: Path, split: str | None) -> list[Task] | None:
    """The tasks of a registered source named in ``table`` (``None``: the table names none)."""
    sources = task_sources()
    named = [k for k in table if k in sources]
    if not named:
        return None
    others = set(table) - {named[0], "private", "limit"}
    if len(named) > 1 or others or "file" in table or "dataset" in table:
        raise ConfigError(
            f"[tasks] {named[0]} = ... is a task source of its own: besides it only `private` and `limit` "
            f"apply (got {sorted(others | set(named[1:]))})"
        )
    if split is not None:
        raise ConfigError(f"--split applies to dataset-backed tasks; these come from the {named[0]!r} source")
    try:
        load = sources[named[0]].load()
    except Exception as e:  # a broken plugin package: say which one
        raise ConfigError(f"task source {named[0]!r} ({sources[named[0]].value}) cannot be loaded: {e}") from e
    tasks = check_tasks(list(load(table[named[0]], base_dir)))
    if table.get("limit"):
        tasks = tasks[: int(table["limit"])]
    return _with_private(tasks, list(table.get("private", [])))


def parse_tasks_value(value: Any) -> tuple[dict[str, Any], str, list[str]]:
    """The env file's ``tasks`` value as (named sets, default set name, shared private keys).

    A string, list or flat table is the one set ``default``; sub-tables are named sets that
    inherit the top table's keys."""
    if value is None or isinstance(value, (str, list)):
        return {"default": value}, "default", []
    if not isinstance(value, dict):
        raise ConfigError(f"tasks must be a JSONL file name, a list of tasks or a [tasks] table, got {value!r}")
    keys = _table_keys()
    shared = {k: v for k, v in value.items() if k in keys}
    named = {k: v for k, v in value.items() if k not in keys and k != "default"}
    private = list(shared.get("private", []))
    bad = [k for k, v in named.items() if not isinstance(v, (dict, str, list))]
    if bad:
        raise ConfigError(
            f"[tasks]: unknown key(s) {sorted(bad)}; known: {', '.join(sorted(keys))}, "
            "default, and named sets as sub-tables ([tasks.train], [tasks.eval])"
        )
    if not named:
        return {"default": shared}, "default", private
    sets = {k: ({**_inherited(shared, v), **v} if isinstance(v, dict) else v) for k, v in named.items()}
    if "file" in shared or "dataset" in shared or set(shared) & set(task_sources()):
        sets.setdefault("default", shared)
    default = value.get("default", "default" if "default" in sets else "train" if "train" in sets else next(iter(sets)))
    if default not in sets:
        raise ConfigError(f"[tasks] default = {default!r} names no task set; sets: {', '.join(sets)}")
    return sets, default, private


def _inherited(shared: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """The top table's keys a named set inherits (not its source when the set names its own)."""
    sources = {"file", "dataset", *task_sources()}
    if sources & set(own):
        return {k: v for k, v in shared.items() if k not in sources}
    return shared


def resolve_tasks(spec_tasks: Any, base_dir: Path, override: Any = None, split: str | None = None) -> list[Task]:
    """The tasks an environment plays: the env file's (its default set), or ``override``:
    a set name, a JSONL/dataset path, a list, or a ``datasets.Dataset``. ``split`` replaces the
    dataset split."""
    sets, default, _ = parse_tasks_value(spec_tasks)
    chosen: Any = sets[default]
    if override is not None:
        if isinstance(override, str) and override in sets:
            chosen = sets[override]
        elif isinstance(override, (str, Path)):
            path = Path(override)
            if (
                not (base_dir / path).exists()
                and not path.exists()
                and "/" not in str(override)
                and "." not in str(override)
            ):  # a set name, not a path or a Hub id (org/name)
                raise ConfigError(f"no task set {str(override)!r}; sets: {', '.join(sets)}")
            table = dict(chosen) if isinstance(chosen, dict) and "dataset" in chosen else {}
            if path.suffix == ".jsonl" and not table:
                chosen = str(path)
            else:
                table.pop("file", None)
                chosen = {**table, "dataset": str(path)}
        else:
            chosen = override
    if _is_dataset(chosen):
        table = sets[default] if isinstance(sets[default], dict) and "dataset" in sets[default] else {}
        return _from_dataset_object(chosen, table, split)
    if isinstance(chosen, dict):
        sourced = _from_source(chosen, base_dir, split)
        if sourced is not None:
            return sourced
        try:
            table = TasksTable.model_validate(chosen)
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(f"[tasks]: {err['msg']} at {'.'.join(map(str, err['loc']))}") from e
        if table.kind() == "file":
            if split is not None:
                raise ConfigError("--split applies to dataset-backed tasks; these come from a JSONL file")
            return _with_private(_kept(load_tasks(table.file, base_dir), table), table.private)
        from openenv_mcp.definitions.taskdata import load_dataset_tasks

        if table.ids is not None:  # the dataset's limit then applies to the chosen ids
            chosen_ids = table.model_copy(update={"limit": None})
            return _kept(load_dataset_tasks(chosen_ids, base_dir, split), table.model_copy(update={"filter": None}))
        return load_dataset_tasks(table, base_dir, split)
    if split is not None and chosen is not None:
        raise ConfigError("--split applies to dataset-backed tasks; these come from a JSONL file or a list")
    return load_tasks(chosen, base_dir)


def compile_filter(expression: str) -> Callable[..., Any]:
    """A ``[tasks] filter`` expression (Jinja, sandboxed) as a function of a row's columns."""
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment

    try:
        return SandboxedEnvironment().compile_expression(expression)
    except TemplateSyntaxError as e:
        raise ConfigError(f"[tasks] filter {expression!r}: {e}") from e


def _kept(tasks: list[Task], table: TasksTable) -> list[Task]:
    """Tasks after the table's ``filter`` (over each task's fields), ``ids`` and ``limit``."""
    if table.filter:
        keep = compile_filter(table.filter)
        try:
            tasks = [t for t in tasks if keep(**t.model_dump())]
        except Exception as e:  # a filter that fails on a task: say which expression
            raise ConfigError(f"[tasks] filter {table.filter!r}: {type(e).__name__}: {e}") from e
        if not tasks:
            raise ConfigError(f"[tasks] file {table.file!r}: no task left after filter {table.filter!r}")
    if table.ids is not None:
        by_id = {t.id: t for t in tasks}
        missing = [i for i in table.ids if i not in by_id]
        if missing:
            raise ConfigError(f"[tasks] ids names task(s) {missing} the set does not have")
        tasks = [by_id[i] for i in table.ids]
    return tasks[: table.limit] if table.limit is not None else tasks


def _is_dataset(value: Any) -> bool:
    return type(value).__module__.startswith("datasets.") and hasattr(value, "column_names")


def _from_dataset_object(dataset: Any, table: dict[str, Any], split: str | None) -> list[Task]:
    from openenv_mcp.definitions.taskdata import tasks_from_dataset

    options = {k: v for k, v in table.items() if k not in ("dataset", "file", "split", "config", "revision")}
    return tasks_from_dataset(dataset, TasksTable.model_validate({"dataset": "<in memory>", **options}))


def _with_private(tasks: list[Task], private: list[str]) -> list[Task]:
    if not private:
        return tasks
    return [t.model_copy(update={"private": sorted({*t.private, *private})}) for t in tasks]


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
    return check_tasks(tasks)


def check_tasks(tasks: list[Task]) -> list[Task]:
    """``tasks`` if ids are unique and there is at least one, else a :class:`ConfigError`."""
    ids = [t.id for t in tasks]
    seen: set[str] = set()
    dup = sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
    if dup:
        raise ConfigError(f"task ids must be unique; repeated: {dup[:10]}")
    if not tasks:
        raise ConfigError("the task list is empty")
    return tasks


@lru_cache(maxsize=64)
def _permutation(n: int, block: int) -> tuple[int, ...]:
    order = list(range(n))
    random.Random(f"openenv-mcp/tasks/{n}/{block}").shuffle(order)
    return tuple(order)


class TaskSet:
    """An environment's tasks with deterministic, seeded selection."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = tasks
        self._by_id = {t.id: t for t in tasks}
        self._index = {t.id: i for i, t in enumerate(tasks)}

    def __len__(self) -> int:
        return len(self.tasks)

    def full(self, task: Task) -> Task:
        """The loaded task with ``task``'s id (grader-only fields included), else ``task``."""
        return self._by_id.get(task.id, task)

    def index_for_seed(self, seed: int) -> int:
        """Position of the task seed ``seed`` picks (see the module doc)."""
        n = len(self.tasks)
        block, position = divmod(seed, n)
        return _permutation(n, block)[position]

    def seed_for(self, task_id: str, block: int = 0) -> int:
        """The seed in ``[block*n, block*n + n)`` that picks ``task_id``."""
        n = len(self.tasks)
        return block * n + _permutation(n, block).index(self._index[self.get(task_id).id])

    def get(self, task_id: str) -> Task:
        task = self._by_id.get(task_id)
        if task is None:
            raise ConfigError(
                f"unknown task_id {task_id!r}; known: {', '.join(list(self._by_id)[:10])}"
                + ("..." if len(self._by_id) > 10 else "")
            )
        return task

    def pick(self, seed: int | None = None, task_id: str | None = None) -> tuple[Task, int]:
        """The task for ``seed`` (or ``task_id``), and the seed used.

        Without a seed one is drawn, and returned, so the episode can be replayed.
        """
        if seed is None:
            seed = secrets.randbelow(2**31)
        if task_id is not None:
            return self.get(task_id), seed
        return self.tasks[self.index_for_seed(seed)], seed

    def schedule(self, repeat: int = 1, start: int = 0) -> list[tuple[str, int]]:
        """Every task in order, ``repeat`` times each: ``(task_id, seed)`` pairs whose seeds are
        distinct and each pick their task (``start``: the first block of seeds used)."""
        if repeat < 1:
            raise ConfigError(f"repeat must be at least 1, got {repeat}")
        return [(t.id, self.seed_for(t.id, start + r)) for t in self.tasks for r in range(repeat)]

    def order(
        self,
        episodes: int | None = None,
        *,
        seed: int = 0,
        all_tasks: bool = False,
        repeat: int = 1,
        task_id: str | None = None,
    ) -> list[tuple[str | None, int]]:
        """The episodes a run plays, as ``(task_id, seed)`` pairs:

        * ``all_tasks``: every task in order, ``repeat`` times each (:meth:`schedule`; ``seed``
          chooses the block of seeds);
        * ``task_id``: that task, ``episodes × repeat`` times, seeds ``seed, seed+1, ...``;
        * else ``episodes`` consecutive seeds from ``seed`` (task_id ``None``: the seed picks it).
        """
        if all_tasks:
            if task_id is not None:
                raise ConfigError("all_tasks plays every task: do not also pin one task")
            return list(self.schedule(repeat, start=max(seed, 0) // max(len(self.tasks), 1)))
        if episodes is None or episodes < 1:
            raise ConfigError("give a number of episodes (at least 1), or all_tasks")
        if task_id is not None:
            self.get(task_id)
            return [(task_id, seed + i) for i in range(episodes * repeat)]
        if repeat != 1:
            raise ConfigError(
                "repeat (--repeat) needs all_tasks (--all-tasks: K episodes of every task) or one pinned task (--task)"
            )
        return [(None, seed + i) for i in range(episodes)]
