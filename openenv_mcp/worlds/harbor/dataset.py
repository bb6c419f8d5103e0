"""A folder of task folders (a dataset) as an environment's tasks, and ``harbor:PATH`` as an environment.

* :func:`load_tasks` is the ``harbor`` task source of env files (``[tasks] harbor = "tasks"``, or a
  table: ``path``, ``tasks`` (the ids to keep, in that order) and the options of
  :class:`~.taskformat.LoadOptions`), registered in the entry-point group
  ``openenv_mcp.task_sources``. Every task folder under the path (the path itself when it is one;
  else its sub-folders, up to three levels down, hidden ones skipped) becomes one task: id = its
  path below the dataset folder, prompt = its instruction and a line naming the ``submit`` tool,
  ``data`` = its public metadata (category, difficulty, tags, format) plus a grader-only ``harbor``
  entry (where the folder is) that no face shows.
* :func:`harbor_spec` is what ``make("harbor:PATH")`` and ``openenv-mcp run|serve|conformance|validate
  harbor:PATH`` load: that task source plus the world's tool server, reward and oracle.

A folder in a dataset that cannot be run (a malformed ``task.toml``, a feature this build lacks)
is skipped with a warning naming it and why; a single task folder given directly is an error.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

from openenv_mcp.client.schemes import Scheme
from openenv_mcp.definitions.spec import EnvSpec, Limits, ToolServerSpec
from openenv_mcp.errors import ConfigError, TaskFormatError
from openenv_mcp.types import Task
from openenv_mcp.worlds.harbor.taskformat import LoadOptions, TaskDefinition, is_task_folder, read_task

__all__ = ["PRIVATE", "SCHEME", "SUBMIT_HINT", "definition_of", "find_task_folders", "harbor_spec", "load_tasks"]

PRIVATE = "harbor"
"""The grader-only ``data`` key of every Harbor task."""
SUBMIT_HINT = "When you have finished, call the `submit` tool: the task is graded then."
MAX_DEPTH = 3
DEFAULT_MAX_STEPS = 100
PUBLIC_METADATA = ("category", "difficulty", "tags")


def find_task_folders(root: Path) -> list[Path]:
    """The task folders at or under ``root`` (sorted by path)."""
    if is_task_folder(root):
        return [root]
    found: list[Path] = []

    def scan(folder: Path, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for child in sorted(folder.iterdir()):
            if child.name.startswith(".") or not child.is_dir() or child.is_symlink():
                continue
            if is_task_folder(child):
                found.append(child)
            else:
                scan(child, depth + 1)

    scan(root, 1)
    return found


def parse_source(value: Any, base_dir: Path) -> tuple[Path, LoadOptions, list[str] | None]:
    """``harbor = "PATH"`` or ``harbor = {path = "PATH", tasks = [...], network = ..., tamper = ...,
    processes = ..., pass_env = [...]}`` as (folder, options, the task ids to keep or ``None``)."""
    if isinstance(value, (str, Path)):
        table: dict[str, Any] = {"path": str(value)}
    elif isinstance(value, dict):
        table = dict(value)
    else:
        raise ConfigError(f"[tasks] harbor: expected a folder or a table with `path`, got {value!r}")
    path = table.pop("path", None)
    if not isinstance(path, str):
        raise ConfigError("[tasks] harbor: give the dataset folder as `path`")
    keep = table.pop("tasks", None)
    if keep is not None and (not isinstance(keep, list) or not all(isinstance(t, str) for t in keep)):
        raise ConfigError("[tasks] harbor: `tasks` is a list of task ids (folder paths below the dataset folder)")
    if "pass_env" in table:
        table["pass_env"] = tuple(table["pass_env"])
    try:
        options = LoadOptions(**table)
    except TypeError as e:
        known = ", ".join(LoadOptions.__dataclass_fields__)
        raise ConfigError(f"[tasks] harbor: {e}; known options: path, tasks, {known}") from None
    for key, allowed in (
        ("network", ("none", "harbor")),
        ("tamper", ("enforce", "report")),
        ("processes", ("stop", "keep")),
    ):
        if getattr(options, key) not in allowed:
            raise ConfigError(f"[tasks] harbor: {key} = {getattr(options, key)!r}; expected one of {allowed}")
    folder = (base_dir / path).resolve()
    if not folder.is_dir():
        raise ConfigError(f"[tasks] harbor: no folder at {str(folder)!r}")
    return folder, options, keep


def load_tasks(value: Any, base_dir: Path) -> list[Task]:
    """The ``harbor`` task source (see the module doc)."""
    root, options, keep = parse_source(value, base_dir)
    folders = find_task_folders(root)
    if keep is not None:
        by_id = {(f.name if f == root else f.relative_to(root).as_posix()): f for f in folders}
        missing = [t for t in keep if t not in by_id]
        if missing:
            raise ConfigError(f"[tasks] harbor: no task folder {missing[0]!r} in {root}")
        folders = [by_id[t] for t in keep]
    if not folders:
        raise ConfigError(f"{root}: no task folders (folders holding task.toml or task.yaml) found")
    tasks: list[Task] = []
    skipped: list[str] = []
    for folder in folders:
        task_id = folder.name if folder == root else folder.relative_to(root).as_posix()
        try:
            definition = read_task(folder, options, task_id)
        except TaskFormatError as e:
            if folder == root:
                raise
            skipped.append(str(e))
            continue
        tasks.append(to_task(definition, options))
    if skipped:
        warnings.warn(
            f"{root}: {len(skipped)} task folder(s) skipped: "
            + "; ".join(skipped[:5])
            + (" ..." if len(skipped) > 5 else ""),
            stacklevel=2,
        )
    if not tasks:
        raise ConfigError(f"{root}: no task could be loaded: {skipped[0]}")
    return tasks


def to_task(definition: TaskDefinition, options: LoadOptions) -> Task:
    """The openenv-mcp task of a task folder."""
    public = {k: definition.metadata[k] for k in PUBLIC_METADATA if k in definition.metadata}
    public["format"] = definition.format
    private = {"dir": str(definition.dir), "name": definition.name, "options": _options_json(options)}
    return Task(
        id=definition.name,
        prompt=f"{definition.instruction}\n\n{SUBMIT_HINT}",
        data={**public, PRIVATE: private},
        private=[PRIVATE],
    )


def _options_json(options: LoadOptions) -> dict[str, Any]:
    out = asdict(options)
    out["pass_env"] = list(options.pass_env)
    return out


def definition_of(task: Task) -> TaskDefinition:
    """The task folder's definition behind an openenv-mcp task of a Harbor source."""
    entry = task.data.get(PRIVATE)
    if not isinstance(entry, dict) or "dir" not in entry:
        raise ConfigError(f"task {task.id!r} is not a Harbor task (it has no grader-only `{PRIVATE}` entry)")
    options = dict(entry.get("options") or {})
    options["pass_env"] = tuple(options.get("pass_env") or ())
    folder = Path(entry["dir"])
    stamp = max((p.stat().st_mtime_ns for p in (folder / "task.toml", folder / "task.yaml") if p.is_file()), default=0)
    return _read_cached(str(folder), tuple(sorted(options.items())), str(entry.get("name") or task.id), stamp)


@functools.lru_cache(maxsize=1024)
def _read_cached(folder: str, options: tuple[tuple[str, Any], ...], name: str, stamp: int) -> TaskDefinition:
    return read_task(folder, LoadOptions(**dict(options)), name)


def harbor_spec(path: str | Path, **source: Any) -> EnvSpec:
    """The environment of a task folder or a dataset folder (``make("harbor:PATH")``)."""
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"harbor:{path}: no folder there (give a task folder or a folder of task folders)")
    single = is_task_folder(folder)
    return EnvSpec(
        name=folder.name,
        description=f"Harbor task {folder.name}" if single else f"Harbor tasks from {folder}",
        max_steps=DEFAULT_MAX_STEPS,
        tasks={"harbor": {"path": str(folder), **source}},
        reward="openenv_mcp.worlds.harbor.reward:score",
        solutions="openenv_mcp.worlds.harbor.oracle",
        tool_servers=[terminal_server()],
        base_dir=folder.parent,
    )


SCHEME = Scheme(load=lambda target: harbor_spec(target.partition(":")[2]))
"""``harbor:PATH`` (registered in the entry-point group ``openenv_mcp.schemes``)."""


def terminal_server() -> ToolServerSpec:
    """The world's tool server: in-process (trusted, outside the container), acting on the container."""
    from openenv_mcp.worlds.harbor.tools import MAX_TIMEOUT

    return ToolServerSpec(
        name="terminal",
        namespace="",
        object="openenv_mcp.worlds.harbor.tools:create_server",
        isolation="inprocess",
        limits=Limits(call_timeout=MAX_TIMEOUT + 30, memory_mb=None, cpu_seconds=None, processes=None),
    )
