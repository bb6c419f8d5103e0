"""Reward of the ``sql`` environment.

Every check runs through the environment's own read-only ``query`` and
``describe_table`` tools (uncounted calls the agent never sees), so the very
same reward holds on SQLite and on PostgreSQL.

- **Query tasks** (``kind = "query"``): the first ``submit_answer`` is compared
  with ``expected`` (rows; order matters only when ``ordered``). Numbers match
  within 0.01 (or 1e-6 relative), text ignoring case and surrounding spaces.
  A single value, a list (one column or one row) or a list of rows are all accepted.
- **Maintenance tasks** (``kind = "maintenance"``): every ``checks`` entry must
  hold on the database's end state: ``{"sql", "expect"}`` (the query's rows) or
  ``{"index": {"table", "columns", "unique"}}`` (such an index exists, not partial) or
  ``{"object": {"name", "kind"}}`` (a table or view of that name: a view asked for must be a view,
  not a table filled with the numbers the view would show today).
- **Guards**, for both kinds: ``{"name", "sql", "expect"}`` fingerprints of the
  rows the task did NOT ask to change (every other table whole; the untouched
  rows and columns of the changed table). A broken guard is a destructive
  change: the score is 0 and the episode ends at once (``done``) with
  ``info["destructive"]`` naming what was damaged. Only the trainer's reset
  brings the rows back.
- **Tables stay tables**: every table a guard reads must still be a table. An
  agent that renames a table and puts a view of its own in its place decides
  what the checks read (hiding the rows a fix should change); that is a
  destructive change too (``"<table> (no longer a table)"``).

The score is 1.0 when the answer is right (or every check holds) and no guard
is broken, else 0.0.
"""

from __future__ import annotations

import math
from typing import Any

from openenv_mcp.types import Score

ANSWER_TOOL = "submit_answer"
QUERY_TOOL = "query"
DESCRIBE_TOOL = "describe_table"
LIST_TOOL = "list_tables"


# -- fingerprints (used by build.py to write the guards) -------------------------------


def fingerprint_sql(table: str, columns: dict[str, str], where: str | None = None) -> str:
    """One portable aggregate row that changes when rows of ``table`` are deleted,
    inserted or edited. ``columns`` maps column -> kind (``int``, ``money``, ``text``, ``date``)."""
    parts = ["COUNT(*) AS n", "COALESCE(SUM(id), 0) AS id_sum"]
    for col, kind in columns.items():
        if col == "id":
            continue
        parts.append(f"COUNT({col}) AS {col}_n")
        if kind == "int":
            parts.append(f"COALESCE(SUM(id * {col}), 0) AS {col}_sum")
        elif kind == "money":
            parts.append(f"COALESCE(SUM(id * CAST(ROUND({col} * 100) AS INTEGER)), 0) AS {col}_sum")
        elif kind == "text":
            parts.append(f"COALESCE(SUM(id * LENGTH({col})), 0) AS {col}_sum")
        elif kind == "date":
            parts.append(f"COUNT(DISTINCT {col}) AS {col}_distinct")
            parts.append(f"MIN({col}) AS {col}_min")
            parts.append(f"MAX({col}) AS {col}_max")
    sql = f"SELECT {', '.join(parts)} FROM {table}"
    return sql + (f" WHERE {where}" if where else "")


# -- comparing ----------------------------------------------------------------------------


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip().replace(",", ""))
        except ValueError:
            return None
    return None


def same_value(a: Any, b: Any, *, lenient: bool) -> bool:
    """Equal as the reward sees it (``lenient`` for agent answers)."""
    if a is None or b is None:
        return a is None and b is None
    na, nb = _num(a), _num(b)
    if isinstance(b, (int, float)) and not isinstance(b, bool) and (lenient or isinstance(a, (int, float))):
        if na is None or nb is None:
            return False
        tol = 0.01 if lenient else 1e-9
        return abs(na - nb) <= tol or math.isclose(na, nb, rel_tol=1e-6)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower() if lenient else a == b
    return a == b


def same_rows(got: list[list[Any]], expected: list[list[Any]], *, ordered: bool, lenient: bool) -> bool:
    """Row lists equal (as multisets unless ``ordered``)."""
    if len(got) != len(expected) or any(len(g) != len(e) for g, e in zip(got, expected, strict=True) if ordered):
        return False
    if ordered:
        return all(
            len(g) == len(e) and all(same_value(x, y, lenient=lenient) for x, y in zip(g, e, strict=True))
            for g, e in zip(got, expected, strict=True)
        )
    remaining = list(got)
    for row in expected:
        for i, cand in enumerate(remaining):
            if len(cand) == len(row) and all(same_value(x, y, lenient=lenient) for x, y in zip(cand, row, strict=True)):
                del remaining[i]
                break
        else:
            return False
    return True


def answer_rows(answer: Any, expected: list[list[Any]]) -> list[list[Any]]:
    """The submitted answer as rows shaped like ``expected``."""
    if not isinstance(answer, list):
        return [[answer]]
    if all(isinstance(x, list) for x in answer):
        return [list(x) for x in answer]
    width = len(expected[0]) if expected else 1
    if width == 1:
        return [[x] for x in answer]
    if len(expected) == 1 and len(answer) == width:
        return [list(answer)]
    return [list(answer)]


# -- the reward ---------------------------------------------------------------------------


async def _rows(ctx: Any, sql: str) -> list[list[Any]] | None:
    result = await ctx.call_tool(QUERY_TOOL, {"sql": sql})
    if result.is_error or not result.structured_content:
        return None
    return result.structured_content.get("rows")


async def _index_exists(ctx: Any, spec: dict[str, Any]) -> bool:
    result = await ctx.call_tool(DESCRIBE_TOOL, {"table": spec["table"]})
    if result.is_error or not result.structured_content:
        return False
    for ix in result.structured_content.get("indexes", []):
        if ix.get("partial"):  # a WHERE-limited index (``WHERE 0``) enforces nothing on most rows
            continue
        if [str(c).lower() for c in ix["columns"]] == [c.lower() for c in spec["columns"]] and (
            ix["unique"] or not spec.get("unique")
        ):
            return True
    return False


async def check_holds(ctx: Any, check: dict[str, Any]) -> bool:
    """Whether one check or guard holds on the database now."""
    if "object" in check:
        return await object_kind(ctx, check["object"]["name"]) == check["object"]["kind"]
    if "index" in check:
        return await _index_exists(ctx, check["index"])
    rows = await _rows(ctx, check["sql"])
    return rows is not None and same_rows(rows, check["expect"], ordered=True, lenient=False)


async def _kinds(ctx: Any) -> dict[str, str]:
    result = await ctx.call_tool(LIST_TOOL, {})
    tables = [] if result.is_error or not result.structured_content else result.structured_content.get("tables", [])
    return {t["name"]: t["kind"] for t in tables}


async def object_kind(ctx: Any, name: str) -> str | None:
    """``table``, ``view`` or ``None`` (no such object)."""
    return (await _kinds(ctx)).get(name)


async def not_tables(ctx: Any, names: list[str]) -> list[str]:
    """Those of ``names`` that are no longer tables (dropped, or replaced by a view)."""
    kinds = await _kinds(ctx)
    return [name for name in names if kinds.get(name) != "table"]


def guarded_tables(guards: list[dict[str, Any]]) -> list[str]:
    """The tables the guards read (guard ``orders#2`` reads ``orders``), in order, once each."""
    return list(dict.fromkeys(g["name"].split("#")[0] for g in guards))


def submitted_answer(ctx: Any) -> tuple[bool, Any]:
    """``(True, answer)`` for the episode's first accepted submission, else ``(False, None)``."""
    for action, result in ctx.history:
        if action.name == ANSWER_TOOL and not result.is_error:
            return True, action.arguments.get("answer")
    return False, None


async def score(ctx: Any) -> Score:
    data = ctx.task.data
    info: dict[str, Any] = {}
    if data["kind"] == "query":
        given, answer = submitted_answer(ctx)
        if not given:
            return Score(score=0.0)
        correct = same_rows(
            answer_rows(answer, data["expected"]), data["expected"], ordered=data.get("ordered", False), lenient=True
        )
        info["answer_correct"] = correct
        goal = correct
    else:
        passed = [await check_holds(ctx, c) for c in data["checks"]]
        info["checks_passed"] = sum(passed)
        info["checks"] = len(passed)
        goal = all(passed)
    guards = data.get("guards", [])
    broken = [f"{name} (no longer a table)" for name in await not_tables(ctx, guarded_tables(guards))]
    broken += [g["name"] for g in guards if not await check_holds(ctx, g)]
    if broken:
        info["destructive"] = broken
        return Score(score=0.0, done=True, info=info)
    if data["kind"] == "query":
        return Score(score=1.0 if goal else 0.0, done=True, info=info)
    return Score(score=1.0 if goal else 0.0, info=info)
