"""SQLite backend: a database file, one connection per call (simulation default).

Every connection is hardened by :func:`.sqlite_guard.harden` before the
agent's SQL runs: an authorizer that allows only the actions and functions a
statement needs (no ``fts3_tokenizer``, ``load_extension``, ``ATTACH``, pragma
assignments...), a size limit on every value, a cap on the database file, and
a deadline enforced by a progress handler. Read-only ``query`` is enforced
three ways: the file is opened with ``mode=ro``, ``PRAGMA query_only`` is on,
and the authorizer refuses every change. ``execute`` runs in one explicit
transaction with foreign keys ON (as PostgreSQL always has them). Rows are
sized while they are fetched (:class:`~.backend.ResultCollector`), so an
oversized result is refused before it is materialised.

Each call runs in a worker thread that opens, uses and closes its own
connection (a connection never crosses threads), so the event loop and
``/health`` stay responsive; the deadline makes the thread really stop.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio

from . import normalize
from .backend import (
    DEFAULT_MAX_RESULT_BYTES,
    EXPRESSION,
    Backend,
    Column,
    ResultCollector,
    RowSet,
    SqlError,
    StatementResult,
    TableDescription,
    check_execute_statement,
    split_statements,
    statement_command,
)
from .sqlite_guard import Authorizer, harden

__all__ = ["DEFAULT_MAX_DB_BYTES", "DEFAULT_MAX_VALUE_BYTES", "SQLiteBackend"]

DEFAULT_MAX_VALUE_BYTES = 1_000_000
"""Bytes of one string or blob (``SQLITE_LIMIT_LENGTH``; ``SQL_MAX_VALUE_BYTES``)."""
DEFAULT_MAX_DB_BYTES = 256 * 1024 * 1024
"""Bytes the database file may grow to (``max_page_count``; ``SQL_MAX_DB_BYTES``)."""


def _error(e: sqlite3.Error, statement: int | None = None, authorizer: Authorizer | None = None) -> SqlError:
    if authorizer is not None and authorizer.denied is not None:
        kind, what = authorizer.denied
        if kind == "read_only":
            return SqlError(kind, f"{what} is refused: this connection is read-only", statement)
        return SqlError(kind, f"{what} is not allowed through this tool", statement)
    message = str(e)
    kind = normalize.error_kind("sqlite", message)
    if kind == "timeout":
        message = "statement cancelled: it ran longer than the time limit"
    return SqlError(kind, message, statement)


_SCHEMA_CHANGES = ("DROP", "ALTER")
"""Commands after which every view is read again (one may read what they removed or renamed)."""
_VIEWS = "SELECT name FROM sqlite_master WHERE type = 'view' AND name NOT LIKE 'sqlite_%' ORDER BY name"


def _columns(conn: sqlite3.Connection, name: str) -> list[str]:
    """The column names of a table or view: reading a view compiles its ``SELECT``."""
    return [r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))]


def _unreadable(conn: sqlite3.Connection, name: str, authorizer: Authorizer) -> SqlError | None:
    """Why the catalog tools cannot read the table or view ``name`` (``None``: they can)."""
    authorizer.denied = None
    try:
        _columns(conn, name)
    except sqlite3.Error as e:
        error = _error(e, authorizer=authorizer)
        if "unsafe use of" in error.message:  # trusted_schema is off: schema objects call innocuous functions only
            error.kind = "not_allowed"
            error.message += " (a view may use only the functions and tables SQLite marks innocuous)"
        return error
    finally:
        authorizer.denied = None
    return None


def _check_views(
    conn: sqlite3.Connection, authorizer: Authorizer, command: str, before: set[str], index: int
) -> set[str]:
    """Refuse a statement that leaves a view unreadable (so ``list_tables`` and ``describe_table`` always
    read the whole catalog); returns the views now there. A new view is read after ``CREATE VIEW``, every
    view after ``DROP`` and ``ALTER``; a view that cannot be read is refused as PostgreSQL refuses dropping
    what a view reads."""
    conn.set_authorizer(None)
    views = {r[0] for r in conn.execute(_VIEWS)}
    conn.set_authorizer(authorizer)
    for name in sorted(views if command.startswith(_SCHEMA_CHANGES) else views - before):
        problem = _unreadable(conn, name, authorizer)
        if problem is None:
            continue
        if name in before:
            problem.message = (
                f"this statement would leave the view {name!r} unreadable ({problem.message}); "
                "drop or replace the view first"
            )
            problem.kind = "other"  # PostgreSQL's kind for dropping what a view depends on
        else:
            problem.message = (
                f"the view {name!r} cannot be read: {problem.message}; a view must be readable "
                "(list_tables and describe_table show its columns)"
            )
        problem.statement = index
        raise problem
    return views


def _collect(cursor: sqlite3.Cursor, max_rows: int, max_bytes: int) -> tuple[RowSet, int]:
    """The capped rows of ``cursor`` and how many rows it returned in all (the rest counted, not kept)."""
    collector = ResultCollector([d[0] for d in cursor.description], max_rows, max_bytes)
    total = 0
    for row in cursor:
        total += 1
        collector.add(row)
    return collector.rowset, total


class SQLiteBackend(Backend):
    """A SQLite database file."""

    engine = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        timeout: float = 10.0,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        max_db_bytes: int = DEFAULT_MAX_DB_BYTES,
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.max_value_bytes = max_value_bytes
        self.max_result_bytes = max_result_bytes
        self.max_db_bytes = max_db_bytes
        self._limiter = anyio.CapacityLimiter(1)

    def _connect(self, read_only: bool) -> tuple[sqlite3.Connection, Authorizer]:
        deadline = time.monotonic() + self.timeout
        if read_only:
            if not self.path.exists():
                raise SqlError("undefined_table", f"the database file {self.path.name!r} does not exist yet")
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
            conn.execute("PRAGMA query_only = ON")
        else:
            conn = sqlite3.connect(self.path, isolation_level=None)
            conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA trusted_schema = OFF")  # views and triggers call only innocuous functions
        authorizer = harden(
            conn,
            writable=not read_only,
            deadline=deadline,
            max_value_bytes=self.max_value_bytes,
            max_db_bytes=self.max_db_bytes,
        )
        return conn, authorizer

    async def _run(self, fn: Any, *args: Any) -> Any:
        # one worker thread per database at a time: an episode's runaway statements queue behind each
        # other instead of taking every worker of the process from the other episodes
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    # -- query -----------------------------------------------------------------
    def _query(self, sql: str, max_rows: int) -> RowSet:
        statements = split_statements(sql)
        if len(statements) != 1:
            raise SqlError("not_allowed", f"query runs exactly one statement; got {len(statements)}")
        conn, authorizer = self._connect(read_only=True)
        try:
            cursor = conn.execute(statements[0])
            if cursor.description is None:
                return RowSet([], [])
            collector = ResultCollector([d[0] for d in cursor.description], max_rows, self.max_result_bytes)
            while (row := cursor.fetchone()) is not None and collector.add(row):
                pass
            return collector.rowset
        except sqlite3.Error as e:
            raise _error(e, authorizer=authorizer) from None
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
        conn, authorizer = self._connect(read_only=False)
        results: list[StatementResult] = []
        try:
            conn.set_authorizer(None)
            conn.execute("BEGIN")
            views = {r[0] for r in conn.execute(_VIEWS)}
            conn.set_authorizer(authorizer)
            for i, statement in enumerate(statements, 1):
                authorizer.denied = None
                try:
                    cursor = conn.execute(statement)
                    command = statement_command(statement)
                    if cursor.description is not None:
                        rows, total = _collect(cursor, max_rows, self.max_result_bytes)
                        results.append(StatementResult(command, total, rows))
                    else:
                        count = cursor.rowcount
                        results.append(StatementResult(command, count if count >= 0 else None))
                    if command == "CREATE VIEW" or command.startswith(_SCHEMA_CHANGES):
                        views = _check_views(conn, authorizer, command, views, i)
                except sqlite3.Error as e:
                    raise _error(e, i, authorizer) from None
                except SqlError as e:
                    e.statement = i
                    raise
            conn.set_authorizer(None)
            conn.execute("COMMIT")
            return results
        except BaseException:
            if conn.in_transaction:
                conn.set_authorizer(None)
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()

    async def execute(self, sql: str, max_rows: int) -> list[StatementResult]:
        return await self._run(self._execute, sql, max_rows)

    # -- schema -------------------------------------------------------------------
    def _list_tables(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        conn, authorizer = self._connect(read_only=True)
        try:
            out = []
            for name, kind in conn.execute(
                "SELECT name, type FROM sqlite_master WHERE type IN ('table','view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ).fetchall():
                entry: dict[str, Any] = {"name": name, "kind": kind, "columns": []}
                problem = _unreadable(conn, name, authorizer)
                if problem is None:
                    entry["columns"] = _columns(conn, name)
                else:  # one unreadable object (e.g. a database file written by other means) is reported alone
                    entry["error"] = problem.message
                out.append(entry)
            return sorted(out, key=lambda t: t["name"])
        finally:
            conn.close()

    async def list_tables(self) -> list[dict[str, Any]]:
        return await self._run(self._list_tables)

    def _describe(self, table: str) -> TableDescription:
        if not self.path.exists():
            raise SqlError("undefined_table", f"no such table: {table}")
        conn, authorizer = self._connect(read_only=True)
        try:
            row = conn.execute(
                "SELECT name, type FROM sqlite_master WHERE type IN ('table','view') AND name = ? "
                "AND name NOT LIKE 'sqlite_%'",
                (table,),
            ).fetchone()
            if row is None:
                raise SqlError("undefined_table", f"no such table: {table}")
            name, kind = row
            problem = _unreadable(conn, name, authorizer)
            if problem is not None:
                problem.message = f"the {kind} {name!r} cannot be read: {problem.message}"
                raise problem
            columns = [
                Column(
                    name=c[1],
                    type=normalize.type_name(c[2]),
                    nullable=not c[3] and not c[5],
                    default=c[4],
                    primary_key=bool(c[5]),
                )
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
                cols = [
                    c[2] if c[2] is not None else EXPRESSION
                    for c in conn.execute("SELECT * FROM pragma_index_info(?)", (ix[1],))
                ]
                indexes.append({"name": ix[1], "columns": cols, "unique": bool(ix[2]), "partial": bool(ix[4])})
            return TableDescription(
                name=name,
                kind=kind,
                columns=columns,
                foreign_keys=sorted(fks.values(), key=lambda f: (f["columns"], f["references"])),
                indexes=sorted(indexes, key=lambda i: i["name"]),
            )
        finally:
            conn.close()

    async def describe_table(self, table: str) -> TableDescription:
        return await self._run(self._describe, table)

    # -- forks: the database through SQLite's backup API ------------------------------
    def _snapshot(self) -> bytes | None:
        if not self.path.exists():
            return None
        src = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        mem = sqlite3.connect(":memory:")
        try:
            src.backup(mem)  # a consistent copy, whatever journal mode the agent set
            return mem.serialize()
        finally:
            mem.close()
            src.close()

    async def snapshot(self) -> bytes | None:
        """The whole database, copied with the backup API (for a fork; ``None``: no file yet)."""
        return await self._run(self._snapshot)

    def _restore(self, image: bytes | None) -> None:
        if image is None:
            self.path.unlink(missing_ok=True)
            return
        mem = sqlite3.connect(":memory:")
        dest = sqlite3.connect(self.path)
        try:
            mem.deserialize(image)
            mem.backup(dest)
        finally:
            dest.close()
            mem.close()

    async def restore(self, image: bytes | None) -> None:
        """Make this database what :meth:`snapshot` copied (a fork's fresh copy of the workspace file)."""
        await self._run(self._restore, image)
