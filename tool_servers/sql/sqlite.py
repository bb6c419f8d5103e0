"""SQLite backend: a database file, one connection per call (simulation default).

Read-only ``query`` is enforced three ways: the file is opened with
``mode=ro``, ``PRAGMA query_only`` is on, and an authorizer lets through only
reads (no writes, no ``ATTACH``, no pragma assignments). ``execute`` runs in
one explicit transaction with foreign keys ON (as PostgreSQL always has them).
Long statements are interrupted after ``timeout`` seconds by a progress
handler; calls run in a worker thread so the event loop never blocks.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio

from . import normalize
from .backend import (Backend, Column, RowSet, SqlError, StatementResult, TableDescription,
                      check_execute_statement, split_statements, statement_command)

__all__ = ["SQLiteBackend"]

_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                 getattr(sqlite3, "SQLITE_RECURSIVE", 33)}


_SCHEMA_PRAGMAS = {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
"""Pragmas that take an argument but only read the schema (``PRAGMA table_info(t)``, ``pragma_table_info('t')``)."""


def _pragma_reads(arg1: Any, arg2: Any) -> bool:
    return arg2 is None or str(arg1).lower() in _SCHEMA_PRAGMAS


def _read_only_authorizer(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and _pragma_reads(arg1, arg2):
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and arg1 in ("sqlite_master", "sqlite_temp_master"):
        return sqlite3.SQLITE_OK  # SQLite asks this while reading the schema for pragma_*() functions
    return sqlite3.SQLITE_DENY


def _execute_authorizer(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and not _pragma_reads(arg1, arg2):
        return sqlite3.SQLITE_DENY  # no pragma assignments (foreign_keys, writable_schema...)
    return sqlite3.SQLITE_OK


def _error(e: sqlite3.Error, statement: int | None = None) -> SqlError:
    message = str(e)
    kind = normalize.error_kind("sqlite", message)
    if kind == "timeout":
        message = "statement cancelled: it ran longer than the time limit"
    return SqlError(kind, message, statement)


def _fetch(cursor: sqlite3.Cursor, max_rows: int) -> RowSet:
    columns = [d[0] for d in cursor.description]
    raw = cursor.fetchmany(max_rows + 1)
    truncated = len(raw) > max_rows
    return RowSet(columns, [[normalize.value(v) for v in row] for row in raw[:max_rows]], truncated)


class SQLiteBackend(Backend):
    """A SQLite database file."""

    engine = "sqlite"

    def __init__(self, path: str | Path, *, timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.timeout = timeout

    def _connect(self, read_only: bool) -> sqlite3.Connection:
        if read_only:
            if not self.path.exists():
                raise SqlError("undefined_table", f"the database file {self.path.name!r} does not exist yet")
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA query_only = ON")
            conn.set_authorizer(_read_only_authorizer)
        else:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA foreign_keys = ON")
            conn.set_authorizer(_execute_authorizer)
        deadline = time.monotonic() + self.timeout
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
        return conn

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    # -- query -----------------------------------------------------------------
    def _query(self, sql: str, max_rows: int) -> RowSet:
        statements = split_statements(sql)
        if len(statements) != 1:
            raise SqlError("not_allowed", f"query runs exactly one statement; got {len(statements)}")
        conn = self._connect(read_only=True)
        try:
            cursor = conn.execute(statements[0])
            if cursor.description is None:
                return RowSet([], [])
            return _fetch(cursor, max_rows)
        except sqlite3.Error as e:
            raise _error(e) from None
        finally:
            conn.close()

    async def query(self, sql: str, max_rows: int) -> RowSet:
        return await self._run(self._query, sql, max_rows)

    # -- execute -----------------------------------------------------------------
    def _execute(self, sql: str, max_rows: int) -> list[StatementResult]:
        statements = split_statements(sql)
        if not statements:
            raise SqlError("syntax", "no SQL statement given")
        for i, statement in enumerate(statements, 1):
            check_execute_statement(statement, i)
        conn = self._connect(read_only=False)
        results: list[StatementResult] = []
        try:
            conn.execute("BEGIN")
            for i, statement in enumerate(statements, 1):
                try:
                    cursor = conn.execute(statement)
                    command = statement_command(statement)
                    if cursor.description is not None:
                        rows = _fetch(cursor, max_rows)
                        rest = len(cursor.fetchall())  # finish the statement (rows beyond the cap)
                        total = len(rows.rows) + (1 + rest if rows.truncated else 0)
                        results.append(StatementResult(command, total, rows))
                    else:
                        count = cursor.rowcount
                        results.append(StatementResult(command, count if count >= 0 else None))
                except sqlite3.Error as e:
                    error = _error(e, i)
                    if error.kind == "read_only":  # the authorizer refused it
                        error = SqlError("not_allowed", "statement not allowed through this tool "
                                         "(ATTACH, DETACH and pragma assignments are refused)", i)
                    raise error from None
            conn.execute("COMMIT")
            return results
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()

    async def execute(self, sql: str, max_rows: int) -> list[StatementResult]:
        return await self._run(self._execute, sql, max_rows)

    # -- schema -------------------------------------------------------------------
    def _catalog(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        return conn

    def _list_tables(self) -> list[dict[str, Any]]:
        conn = self._catalog()
        try:
            out = []
            for name, kind in conn.execute(
                "SELECT name, type FROM sqlite_master WHERE type IN ('table','view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ).fetchall():
                cols = [r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))]
                out.append({"name": name, "kind": kind, "columns": cols})
            return sorted(out, key=lambda t: t["name"])
        finally:
            conn.close()

    async def list_tables(self) -> list[dict[str, Any]]:
        return await self._run(self._list_tables)

    def _describe(self, table: str) -> TableDescription:
        conn = self._catalog()
        try:
            row = conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table','view') AND name = ? "
                               "AND name NOT LIKE 'sqlite_%'", (table,)).fetchone()
            if row is None:
                raise SqlError("undefined_table", f"no such table: {table}")
            name, kind = row
            columns = [
                Column(name=c[1], type=normalize.type_name(c[2]), nullable=not c[3] and not c[5],
                       default=c[4], primary_key=bool(c[5]))
                for c in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))
            ]
            fks: dict[int, dict[str, Any]] = {}
            for fk in conn.execute("SELECT * FROM pragma_foreign_key_list(?)", (name,)):
                entry = fks.setdefault(fk[0], {"columns": [], "references": fk[2], "referenced_columns": []})
                entry["columns"].append(fk[3])
                entry["referenced_columns"].append(fk[4])
            indexes = []
            for ix in conn.execute("SELECT * FROM pragma_index_list(?)", (name,)):
                if ix[3] == "pk":
                    continue
                cols = [c[2] for c in conn.execute("SELECT * FROM pragma_index_info(?)", (ix[1],))]
                indexes.append({"name": ix[1], "columns": cols, "unique": bool(ix[2])})
            return TableDescription(
                name=name, kind=kind, columns=columns,
                foreign_keys=sorted(fks.values(), key=lambda f: (f["columns"], f["references"])),
                indexes=sorted(indexes, key=lambda i: i["name"]),
            )
        finally:
            conn.close()

    async def describe_table(self, table: str) -> TableDescription:
        return await self._run(self._describe, table)
