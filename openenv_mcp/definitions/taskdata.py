"""Dataset-backed tasks: a ``[tasks] dataset = ...`` table, loaded with the ``datasets`` library.

Only imported when an environment's tasks come from a dataset (``import openenv_mcp``
stays light); needs the ``datasets`` extra (``pip install 'openenv-mcp[datasets]'``).
Local files load without any network; a Hub id loads when the Hub is reachable
and fails with a :class:`ConfigError` saying so when it is not.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from openenv_mcp.definitions.tasks import TasksTable, check_tasks, compile_filter
from openenv_mcp.errors import ConfigError
from openenv_mcp.types import Task

__all__ = ["load_dataset_tasks", "tasks_from_dataset"]

_BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv", ".arrow": "arrow"}


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "dataset-backed tasks need the `datasets` library: pip install 'openenv-mcp[datasets]'"
        ) from None
    return datasets


def load_dataset_tasks(table: TasksTable, base_dir: Path, split: str | None = None) -> list[Task]:
    """The tasks of ``table`` (its dataset loaded, filtered, limited and mapped)."""
    datasets = _datasets()
    name = str(table.dataset)
    split = split or table.split
    local = (base_dir / name).expanduser()
    looks_local = local.exists() or name.startswith((".", "/", "~")) or Path(name).suffix in _BUILDERS
    try:
        if looks_local:
            if not local.exists():
                raise ConfigError(f"[tasks] dataset {name!r}: no such file or folder {str(local.resolve())!r}")
            dataset = _load_local(datasets, local.resolve(), split)
        else:
            dataset = _load_hub(datasets, name, table, split)
    except ConfigError:
        raise
    except ValueError as e:  # e.g. an unknown split: the library names the ones there are
        raise ConfigError(f"[tasks] dataset {name!r}: {e}") from e
    return tasks_from_dataset(dataset, table)


def _load_local(datasets: Any, path: Path, split: str) -> Any:
    if path.is_dir() and ((path / "state.json").is_file() or (path / "dataset_dict.json").is_file()):
        loaded = datasets.load_from_disk(str(path))  # written by save_to_disk
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise ConfigError(f"[tasks] dataset {str(path)!r} has no split {split!r}; splits: {', '.join(loaded)}")
            return loaded[split]
        return loaded
    if path.is_dir():
        return datasets.load_dataset(str(path), split=split)
    builder = _BUILDERS.get(path.suffix)
    if builder is None:
        raise ConfigError(
            f"[tasks] dataset {str(path)!r}: unknown file type {path.suffix!r}; give a "
            f"{', '.join(_BUILDERS)} file, a folder of them, or a Hub id"
        )
    if split != "train":
        raise ConfigError(
            f"[tasks] dataset {str(path)!r} is one file, so its only split is 'train' (asked: "
            f"{split!r}); put splits in a folder (train.parquet, test.parquet) or use one file per set"
        )
    return datasets.load_dataset(builder, data_files=str(path), split="train")


def _load_hub(datasets: Any, name: str, table: TasksTable, split: str) -> Any:
    import os

    offline = any(
        os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )
    try:
        return datasets.load_dataset(name, table.config, split=split, revision=table.revision)
    except Exception as e:
        network = isinstance(e, (ConnectionError, OSError, TimeoutError))
        if not network and type(e).__name__ not in (
            "DatasetNotFoundError",
            "RepositoryNotFoundError",
            "LocalEntryNotFoundError",
            "OfflineModeIsEnabled",
        ):
            raise
        if offline:
            why = "the Hub is switched off here (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set) and it is not cached"
        elif network:
            why = "the Hugging Face Hub is unreachable and it is not cached"
        else:
            why = "no such dataset on the Hub (or it is private: log in with `hf auth login`)"
        raise ConfigError(
            f"[tasks] dataset {name!r}: {why} ({type(e).__name__}: {str(e)[:200]}). Point `dataset` "
            "at local parquet/JSONL/CSV/Arrow files (relative to the env folder), or load it once "
            "while online"
        ) from None


def _template(text: str, columns: list[str]) -> Any:
    """A function row -> prompt for a column name, a Jinja template or a format template."""
    if "{{" in text or "{%" in text:
        from jinja2 import StrictUndefined, TemplateSyntaxError
        from jinja2.sandbox import SandboxedEnvironment

        try:
            template = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True).from_string(text)
        except TemplateSyntaxError as e:
            raise ConfigError(f"[tasks] prompt template: {e}") from e
        return template.render
    if "{" in text:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f]
        missing = [f for f in fields if f.split(".")[0].split("[")[0] not in columns]
        if missing:
            raise ConfigError(
                f"[tasks] prompt template names column(s) {missing} the dataset does not have; "
                f"columns: {', '.join(columns)}"
            )
        return lambda **row: text.format(**row)
    if text not in columns:
        raise ConfigError(
            f"[tasks] prompt = {text!r} is not a column of the dataset (columns: "
            f'{", ".join(columns)}); give a column name or a template such as "{{{{ question }}}}"'
        )
    return lambda **row: str(row[text])


def _jsonable(value: Any) -> Any:
    """A dataset value as plain JSON (dates as ISO text, bytes as a note)."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(
            json.dumps(value, default=lambda v: v.isoformat() if hasattr(v, "isoformat") else f"<{type(v).__name__}>")
        )


def tasks_from_dataset(dataset: Any, table: TasksTable) -> list[Task]:
    """Map the rows of a ``datasets.Dataset`` onto tasks, as ``table`` says."""
    columns = list(dataset.column_names)
    id_col = table.id or ("id" if "id" in columns else None)
    answer_col = table.answer or ("answer" if "answer" in columns else None)
    for key, col in (("id", table.id), ("answer", table.answer), ("workspace", table.workspace)):
        if col is not None and col not in columns:
            raise ConfigError(f"[tasks] {key} = {col!r} is not a column of the dataset; columns: {', '.join(columns)}")
    skip = (id_col, answer_col, table.workspace, table.prompt)  # the prompt column is the prompt already
    data_cols = table.data if table.data is not None else [c for c in columns if c not in skip]
    unknown = [c for c in data_cols if c not in columns]
    if unknown:
        raise ConfigError(
            f"[tasks] data names column(s) {unknown} the dataset does not have; columns: {', '.join(columns)}"
        )
    render = _template(table.prompt, columns)
    keep = None
    if table.filter:
        keep = compile_filter(table.filter)
    tasks: list[Task] = []
    for index, row in enumerate(dataset):
        try:
            if keep is not None and not keep(**row):
                continue
            prompt = render(**row)
        except Exception as e:  # a template or filter that fails on a row: say which row
            raise ConfigError(f"[tasks] row {index}: {type(e).__name__}: {e}") from e
        task_id = str(row[id_col]) if id_col is not None else str(index)
        data = {c: _jsonable(row[c]) for c in data_cols}
        if table.data is None and isinstance(data.get("data"), dict):  # a tasks.jsonl row: its data is the data
            data = {**{c: v for c, v in data.items() if c != "data"}, **data["data"]}
        tasks.append(
            Task(
                id=task_id,
                prompt=prompt,
                data=data,
                answer=_jsonable(row[answer_col]) if answer_col is not None else None,
                workspace=row[table.workspace] if table.workspace else None,
                private=list(table.private),
            )
        )
        if table.limit is not None and len(tasks) >= table.limit:
            break
    if not tasks:
        raise ConfigError(
            f"[tasks] dataset {table.dataset!r}: no task left"
            + (f" after filter {table.filter!r}" if table.filter else " (the split is empty)")
        )
    return check_tasks(tasks)
