"""What a SQLite connection of the ``sql`` tools may do: authorizers, limits and a deadline.

The agent writes the SQL, so every connection the backend opens is hardened
before the agent's first statement runs:

- an **authorizer** that allows only the actions a query (or a change) needs
  and only the functions in :data:`FUNCTIONS` (the ordinary scalar, aggregate,
  window, date, math and JSON functions). Everything else is refused when the
  statement is *prepared*, before anything runs: ``fts3_tokenizer`` (its
  two-argument form installs a tokenizer from a raw pointer; its one-argument
  form leaks a heap address), ``load_extension``, full-text and R-tree helpers,
  ``ATTACH``/``DETACH`` (another file, another episode's database, ``/etc``),
  virtual tables, transaction control, pragma assignments, pragmas that are not
  plain schema reads, and reads of the engine's internal tables (``dbstat``,
  ``sqlite_stmt``, ``sqlite_dbpage``);
- **limits** (``sqlite3_limit``): one string or blob at most ``max_value_bytes``
  (``zeroblob(200000000)``, ``printf('%.*c', ...)``, ``replace`` and
  ``randomblob`` amplification fail inside SQLite, before Python sees a byte),
  at most :data:`MAX_COLUMNS` result columns, statement text at most
  :data:`MAX_SQL_BYTES`, no attached databases;
- a **progress handler** that interrupts the statement at the call's deadline
  (a runaway recursive CTE ends with a timeout error, and its worker thread
  really stops);
- ``max_page_count`` on writable connections: the database file cannot grow past
  ``max_db_bytes``.

:func:`harden` applies all of it; :class:`Authorizer` is the policy itself.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

__all__ = ["FUNCTIONS", "MAX_COLUMNS", "MAX_SQL_BYTES", "Authorizer", "harden"]

FUNCTIONS = frozenset(
    {
        # core scalar
        "abs",
        "changes",
        "char",
        "coalesce",
        "format",
        "glob",
        "hex",
        "ifnull",
        "iif",
        "instr",
        "last_insert_rowid",
        "length",
        "like",
        "likelihood",
        "likely",
        "lower",
        "ltrim",
        "max",
        "min",
        "nullif",
        "printf",
        "quote",
        "random",
        "randomblob",
        "replace",
        "round",
        "rtrim",
        "sign",
        "soundex",
        "sqlite_source_id",
        "sqlite_version",
        "substr",
        "substring",
        "total_changes",
        "trim",
        "typeof",
        "unicode",
        "unlikely",
        "upper",
        "zeroblob",
        # date and time
        "current_date",
        "current_time",
        "current_timestamp",
        "date",
        "datetime",
        "julianday",
        "strftime",
        "time",
        "unixepoch",
        # aggregate
        "avg",
        "count",
        "group_concat",
        "sum",
        "total",
        "json_group_array",
        "json_group_object",
        # window
        "cume_dist",
        "dense_rank",
        "first_value",
        "lag",
        "last_value",
        "lead",
        "nth_value",
        "ntile",
        "percent_rank",
        "rank",
        "row_number",
        # math
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "ceil",
        "ceiling",
        "cos",
        "cosh",
        "degrees",
        "exp",
        "floor",
        "ln",
        "log",
        "log10",
        "log2",
        "mod",
        "pi",
        "pow",
        "power",
        "radians",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "trunc",
        # JSON
        "->",
        "->>",
        "json",
        "json_array",
        "json_array_length",
        "json_extract",
        "json_insert",
        "json_object",
        "json_patch",
        "json_quote",
        "json_remove",
        "json_replace",
        "json_set",
        "json_type",
        "json_valid",
    }
)
"""Functions a statement may call (SQLite reports them lower-case). Everything else is refused."""

ALTER_FUNCTIONS = frozenset(
    {
        "sqlite_rename_column",
        "sqlite_rename_table",
        "sqlite_rename_test",
        "sqlite_drop_column",
        "sqlite_rename_quotefix",
    }
)
"""SQLite's internal helpers of ``ALTER TABLE``: the authorizer is asked about them, but user SQL cannot call
them (SQLite answers "no such function"), so allowing them admits ``ALTER TABLE`` and nothing else."""

SCHEMA_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"})
"""Pragmas that only read the schema (``PRAGMA table_info(t)``, ``pragma_table_info('t')``)."""

READ_PRAGMAS = frozenset(
    {"foreign_keys", "user_version", "page_size", "page_count", "encoding", "collation_list", "table_list"}
)
"""Pragmas that may be read without an argument (nothing that names a file, checkpoints or optimizes)."""

INTERNAL_TABLES = frozenset({"dbstat", "sqlite_dbpage", "sqlite_stmt"})
"""Engine internals no task needs: page dumps, the connection's own statements."""

MAX_COLUMNS = 128
"""Columns of one result or table (SQLite's default is 2000: 2000 x a 1 MB value is a 2 GB row)."""
MAX_SQL_BYTES = 1_000_000
"""Bytes of one statement's text."""

_OK, _DENY = sqlite3.SQLITE_OK, sqlite3.SQLITE_DENY
_A = sqlite3
_READ = {_A.SQLITE_SELECT, _A.SQLITE_READ, getattr(_A, "SQLITE_RECURSIVE", 33)}
_WRITE = _READ | {
    _A.SQLITE_INSERT,
    _A.SQLITE_UPDATE,
    _A.SQLITE_DELETE,
    _A.SQLITE_ALTER_TABLE,
    _A.SQLITE_REINDEX,
    _A.SQLITE_ANALYZE,
    _A.SQLITE_CREATE_TABLE,
    _A.SQLITE_CREATE_INDEX,
    _A.SQLITE_CREATE_VIEW,
    _A.SQLITE_CREATE_TRIGGER,
    _A.SQLITE_CREATE_TEMP_TABLE,
    _A.SQLITE_CREATE_TEMP_INDEX,
    _A.SQLITE_CREATE_TEMP_VIEW,
    _A.SQLITE_CREATE_TEMP_TRIGGER,
    _A.SQLITE_DROP_TABLE,
    _A.SQLITE_DROP_INDEX,
    _A.SQLITE_DROP_VIEW,
    _A.SQLITE_DROP_TRIGGER,
    _A.SQLITE_DROP_TEMP_TABLE,
    _A.SQLITE_DROP_TEMP_INDEX,
    _A.SQLITE_DROP_TEMP_VIEW,
    _A.SQLITE_DROP_TEMP_TRIGGER,
}
"""Actions of a change: data, tables, indexes, views, triggers. Not: ATTACH/DETACH, virtual tables,
transaction control (every call is its own transaction), pragma assignments."""


class Authorizer:
    """The ``set_authorizer`` callback of one connection.

    After a refused statement, ``denied`` is ``(kind, what)``: kind ``read_only``
    for a change attempted on a read-only connection, else ``not_allowed``."""

    def __init__(self, *, writable: bool) -> None:
        self.writable = writable
        self.denied: tuple[str, str] | None = None

    def __call__(self, action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
        if action == _A.SQLITE_FUNCTION:
            if str(arg2).lower() in FUNCTIONS or (self.writable and str(arg2).lower() in ALTER_FUNCTIONS):
                return _OK
            return self._deny("not_allowed", f"the function {arg2}()")
        if action == _A.SQLITE_READ and str(arg1).lower() in INTERNAL_TABLES:
            return self._deny("not_allowed", f"reading the internal table {arg1}")
        if action in _READ or (self.writable and action in _WRITE):
            return _OK
        if action == _A.SQLITE_PRAGMA:
            name = str(arg1).lower()
            if name in SCHEMA_PRAGMAS or (arg2 is None and name in READ_PRAGMAS):
                return _OK
            if arg2 is not None:
                return self._deny("not_allowed" if self.writable else "read_only", f"setting PRAGMA {arg1}")
            return self._deny("not_allowed", f"PRAGMA {arg1}")
        if action == _A.SQLITE_UPDATE and arg1 in ("sqlite_master", "sqlite_temp_master"):
            return _OK  # SQLite asks this while it reads the schema for pragma_*() functions
        if action in _WRITE:
            return self._deny("read_only", "changing data or schema")
        return self._deny("not_allowed", _ACTION_NAMES.get(action, f"the SQLite action {action}"))

    def _deny(self, kind: str, what: str) -> int:
        self.denied = (kind, what)
        return _DENY


_ACTION_NAMES = {
    _A.SQLITE_ATTACH: "ATTACH",
    _A.SQLITE_DETACH: "DETACH",
    _A.SQLITE_TRANSACTION: "transaction control",
    _A.SQLITE_SAVEPOINT: "SAVEPOINT",
    _A.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE",
    _A.SQLITE_DROP_VTABLE: "dropping a virtual table",
}


def harden(
    conn: sqlite3.Connection, *, writable: bool, deadline: float, max_value_bytes: int, max_db_bytes: int | None = None
) -> Authorizer:
    """Apply limits, the deadline and the authorizer to ``conn``; returns the authorizer.

    Call after the backend's own setup statements (they run unchecked) and before any agent SQL."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    if writable and max_db_bytes is not None:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {max(1, max_db_bytes // page_size)}")
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1_000)
    authorizer = Authorizer(writable=writable)
    conn.set_authorizer(authorizer)
    return authorizer
