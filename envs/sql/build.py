"""Build the ``sql`` environment's data: ``workspace/shop.db`` and ``tasks.jsonl``.

    python envs/sql/build.py

Deterministic: the seed comes from :mod:`seed`, the tasks from ``TASKS`` in
:mod:`task_specs`. Every expected answer, check and guard value is computed here by
running SQL on the seed (and on a copy where the reference solution was
applied), through the tool server's own SQLite backend so values are in the
tools' result format. The build refuses a task whose checks already hold on the
seed, whose guards would fire on the reference, or whose wrong trajectory would
score. ``tests/envs/test_sql_env.py`` checks the committed files are up to date.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent.parent) not in sys.path:  # run as a script from a checkout
    sys.path.append(str(HERE.parent.parent))


def _sibling(name: str) -> Any:
    """This folder's ``name.py`` under a private module name (never shadows another env's module)."""
    key = f"_openenv_sql_build_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


reward = _sibling("reward")
seed = _sibling("seed")
task_specs = _sibling("task_specs")
COLUMNS, TASKS, execute, query = task_specs.COLUMNS, task_specs.TASKS, task_specs.execute, task_specs.query

from openenv_mcp.tool_servers.sql.backend import SqlError  # noqa: E402
from openenv_mcp.tool_servers.sql.sqlite import SQLiteBackend  # noqa: E402


def _answer_value(rows: list[list[Any]]) -> Any:
    """How a reference solution submits ``rows``: a value, a list, or rows."""
    if len(rows) == 1 and len(rows[0]) == 1:
        return rows[0][0]
    if rows and len(rows[0]) == 1:
        return [r[0] for r in rows]
    return rows


async def _rows(backend: SQLiteBackend, sql: str) -> list[list[Any]]:
    return (await backend.query(sql, 100_000)).rows


async def _holds(backend: SQLiteBackend, check: dict[str, Any]) -> bool:
    if "object" in check:
        kinds = {t["name"]: t["kind"] for t in await backend.list_tables()}
        return kinds.get(check["object"]["name"]) == check["object"]["kind"]
    if "index" in check:
        try:
            d = await backend.describe_table(check["index"]["table"])
        except SqlError:
            return False
        return any(
            ix["columns"] == check["index"]["columns"]
            and (ix["unique"] or not check["index"]["unique"])
            and not ix["partial"]
            for ix in d.indexes
        )
    try:
        rows = await _rows(backend, check["sql"])
    except SqlError:
        return False
    return reward.same_rows(rows, check["expect"], ordered=True, lenient=False)


async def _guards(task: dict[str, Any], base: SQLiteBackend) -> list[dict[str, Any]]:
    guards = []
    changes = {k: v if isinstance(v, list) else [v] for k, v in task.get("changes", {}).items()}
    for table in seed.TABLES:
        specs = changes.get(table) or [{}]
        if task["kind"] == "query":
            specs = [{}]
        for n, spec in enumerate(specs):
            where = spec.get("where")
            if where and "{dirty}" in where:
                ids = [r[0] for r in await _rows(base, spec["dirty"])]
                where = where.format(dirty=", ".join(map(str, ids)))
            columns = {c: COLUMNS[table][c] for c in spec.get("columns", COLUMNS[table])}
            sql = reward.fingerprint_sql(table, columns, where)
            name = table if not where and len(columns) == len(COLUMNS[table]) else f"{table}#{n + 1}"
            guards.append({"name": name, "sql": sql, "expect": await _rows(base, sql)})
    return guards


async def build_task(spec: dict[str, Any], seed_db: Path, tmp: Path) -> dict[str, Any]:
    base = SQLiteBackend(seed_db)
    data: dict[str, Any] = {"kind": spec["kind"]}
    data["guards"] = await _guards(spec, base)
    if spec["kind"] == "query":
        expected = await _rows(base, spec["sql"])
        if not expected:
            raise SystemExit(f"{spec['id']}: the reference query returns no rows")
        data["expected"], data["ordered"] = expected, spec["ordered"]
        reference = spec["explore"] + [
            query(spec["sql"]),
            {"name": "submit_answer", "arguments": {"answer": _answer_value(expected)}},
        ]
        if spec["wrong_sql"]:
            wrong_rows = await _rows(base, spec["wrong_sql"])
            wrong = [
                query(spec["wrong_sql"]),
                {"name": "submit_answer", "arguments": {"answer": _answer_value(wrong_rows)}},
            ]
            if reward.same_rows(wrong_rows, expected, ordered=spec["ordered"], lenient=True):
                raise SystemExit(f"{spec['id']}: the wrong query gives the right answer")
        elif spec["wrong_answer"] is not None:
            wrong = [{"name": "submit_answer", "arguments": {"answer": spec["wrong_answer"]}}]
            if reward.same_rows(
                reward.answer_rows(spec["wrong_answer"], expected), expected, ordered=spec["ordered"], lenient=True
            ):
                raise SystemExit(f"{spec['id']}: the wrong answer is right")
        else:  # destructive, then the right answer: the guard must zero it
            wrong = spec["wrong_before"] + [{"name": "submit_answer", "arguments": {"answer": _answer_value(expected)}}]
        data["reference"], data["wrong"] = reference, wrong
        return {"id": spec["id"], "prompt": spec["prompt"], "data": data}
    # maintenance: expectations from the reference end state
    end = tmp / f"{spec['id']}-ref.db"
    shutil.copyfile(seed_db, end)
    after = SQLiteBackend(end)
    await after.execute(spec["solution"], 100)
    checks = []
    for check in spec["checks"]:
        if isinstance(check, str):
            checks.append({"sql": check, "expect": await _rows(after, check)})
        else:
            checks.append(dict(check))
    data["checks"] = checks
    if all([await _holds(base, c) for c in checks]):
        raise SystemExit(f"{spec['id']}: the checks already hold on the seed")
    for guard in data["guards"]:
        if not await _holds(after, guard):
            raise SystemExit(f"{spec['id']}: guard {guard['name']} fires on the reference solution")
    bad = tmp / f"{spec['id']}-wrong.db"
    shutil.copyfile(seed_db, bad)
    wrong_db = SQLiteBackend(bad)
    try:
        await wrong_db.execute(spec["wrong"], 100)
    except SqlError:
        pass  # a failing statement (e.g. a foreign key) changes nothing: still wrong
    if all([await _holds(wrong_db, c) for c in checks]) and all([await _holds(wrong_db, g) for g in data["guards"]]):
        raise SystemExit(f"{spec['id']}: the wrong solution would score")
    data["reference"] = spec["explore"] + [execute(spec["solution"])]
    data["wrong"] = [execute(spec["wrong"])]
    return {"id": spec["id"], "prompt": spec["prompt"], "data": data}


async def build(out: Path = HERE) -> None:
    (out / "workspace").mkdir(parents=True, exist_ok=True)
    seed_db = seed.build_sqlite(out / "workspace" / "shop.db")
    with tempfile.TemporaryDirectory() as tmp:
        tasks = [await build_task(spec, seed_db, Path(tmp)) for spec in TASKS]
    with open(out / "tasks.jsonl", "w") as f:
        for task in tasks:
            f.write(json.dumps(task, sort_keys=True) + "\n")
    print(f"wrote {seed_db} and {len(tasks)} tasks to {out / 'tasks.jsonl'}")


if __name__ == "__main__":
    asyncio.run(build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
