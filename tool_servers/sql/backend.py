"""The backend interface of the ``sql`` tool server, and what both backends share.

A :class:`Backend` runs SQL against one database. Two implement it, one module
each: :mod:`.sqlite` (simulation, the embedded default) and :mod:`.postgres`
(production). Both return the same plain structures, already normalised by
:mod:`.normalize`, so the tool layer (:mod:`.server`) never knows which engine
answered.

Rules both backends follow:

- ``query`` runs exactly ONE statement, read-only *for real* (SQLite: a
  read-only connection, ``query_only`` and an authorizer; PostgreSQL: a
  ``READ ONLY`` transaction, single statement enforced by the protocol) and
  always rolls back.
- ``execute`` runs one or more statements in ONE transaction: all or nothing.
  Transaction control (``BEGIN``/``COMMIT``/``ROLLBACK``...) is refused, since
  every call is its own transaction; so are ``ATTACH``/``DETACH`` and ``VACUUM``.
- Each call opens its own connection and closes it: no state leaks between
  calls or episodes, and nothing needs cleaning up.
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass, field
from typing import Any

from . import normalize

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "EXPRESSION",
    "MAX_SQL_CHARS",
    "Backend",
    "Column",
    "ResultCollector",
    "RowSet",
    "SqlError",
    "StatementResult",
    "TableDescription",
    "check_sql_size",
    "split_statements",
    "statement_command",
    "value_size",
]

EXPRESSION = "(expression)"
"""The column name an index on an expression reports."""

MAX_SQL_CHARS = 1_000_000
"""Characters of SQL text one call may send."""

DEFAULT_MAX_RESULT_BYTES = 1_000_000
"""Bytes of values one result may carry (``SQL_MAX_RESULT_BYTES``), counted while rows are fetched."""


class SqlError(Exception):
    """A statement failed or was refused; becomes an error result for the agent."""

    def __init__(self, kind: str, message: str, statement: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.statement = statement


@dataclass
class RowSet:
    """Rows of one statement, capped at ``max_rows`` (``truncated`` tells)."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False


@dataclass
class StatementResult:
    """What one statement of an ``execute`` call did."""

    command: str
    """First keyword(s) of the statement, upper case (``UPDATE``, ``CREATE TABLE``...)."""
    rowcount: int | None = None
    """Rows inserted/updated/deleted (or returned); ``None`` for DDL."""
    rows: RowSet | None = None
    """Rows the statement returned (``SELECT``, ``RETURNING``), if any."""


@dataclass
class Column:
    name: str
    type: str
    nullable: bool
    default: str | None
    primary_key: bool


@dataclass
class TableDescription:
    name: str
    kind: str
    """``table`` or ``view``."""
    columns: list[Column]
    foreign_keys: list[dict[str, Any]] = field(default_factory=list)
    """``{"columns": [...], "references": "table", "referenced_columns": [...]}``."""
    indexes: list[dict[str, Any]] = field(default_factory=list)
    """``{"name": ..., "columns": [...], "unique": bool, "partial": bool}``, primary-key indexes left out
    (``partial``: it covers only the rows of a ``WHERE``; an expression shows as :data:`EXPRESSION`)."""


def value_size(v: Any) -> int:
    """Bytes a driver value takes in a result (a blob counts as its ``\\x<hex>`` text)."""
    if v is None or isinstance(v, (bool, int, float)):
        return 8
    if isinstance(v, (bytes, bytearray, memoryview)):
        return 2 * len(v) + 2
    return len(v) if isinstance(v, str) else len(str(v))


class ResultCollector:
    """Keeps the first ``max_rows`` rows of a result, refusing once they carry more than ``max_bytes``.

    Each row is sized as it arrives, before it is normalised or kept, so a huge
    result is refused after one oversized row, never after all of them are in memory."""

    def __init__(self, columns: list[str], max_rows: int, max_bytes: int) -> None:
        self.rowset = RowSet(columns, [])
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.size = 0

    def add(self, row: Any) -> bool:
        """Keep ``row``; ``False`` (and ``truncated``) once ``max_rows`` are kept. Raise ``too_large``."""
        if len(self.rowset.rows) >= self.max_rows:
            self.rowset.truncated = True
            return False
        self.size += sum(value_size(v) for v in row)
        if self.size > self.max_bytes:
            raise SqlError(
                "too_large",
                f"the result is larger than {self.max_bytes} bytes, the limit of one "
                "result: select fewer or shorter columns, aggregate, or add LIMIT",
            )
        self.rowset.rows.append([normalize.value(v) for v in row])
        return True


class Backend(abc.ABC):
    """One database reachable by the ``sql`` tools."""

    engine: str = ""
    """``sqlite`` or ``postgres``."""

    @abc.abstractmethod
    async def query(self, sql: str, max_rows: int) -> RowSet:
        """Run one read-only statement; raise :class:`SqlError`."""

    @abc.abstractmethod
    async def execute(self, sql: str, max_rows: int) -> list[StatementResult]:
        """Run statements in one transaction (all or nothing); raise :class:`SqlError`."""

    @abc.abstractmethod
    async def list_tables(self) -> list[dict[str, Any]]:
        """``[{"name", "kind", "columns": [names]}]`` sorted by name."""

    @abc.abstractmethod
    async def describe_table(self, table: str) -> TableDescription:
        """Columns, keys and indexes of ``table``; :class:`SqlError` ``undefined_table`` if absent."""

    async def close(self) -> None:  # noqa: B027  (an optional hook: nothing by default)
        """Release what the backend holds (nothing by default)."""


# -- statements ------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<sq>'(?:[^']|'')*'?)|(?P<dq>"(?:[^"]|"")*"?)|(?P<line>--[^\n]*)|(?P<block>/\*.*?(?:\*/|$))"""
    r"""|(?P<dollar>\$(?P<tag>[A-Za-z_][A-Za-z_0-9]*)?\$)|(?P<semi>;)""",
    re.S,
)


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?(?:\*/|$)", " ", sql, flags=re.S).strip()


def check_sql_size(sql: str) -> None:
    """Refuse SQL text longer than :data:`MAX_SQL_CHARS` before anything parses it."""
    if len(sql) > MAX_SQL_CHARS:
        raise SqlError("too_large", f"the SQL text is {len(sql)} characters long; the limit is {MAX_SQL_CHARS}")


def split_statements(sql: str) -> list[str]:
    """Split a script into statements at top-level semicolons.

    Quotes, comments and PostgreSQL dollar-quoted bodies are respected; the
    pieces of a SQLite ``CREATE TRIGGER ... BEGIN ...; END;`` are merged until an
    ``END;`` right after a ``;`` (the rule of ``sqlite3_complete``). Empty
    statements (only whitespace/comments) are dropped. Linear in the input: an
    agent's script of many ``;`` never costs quadratic time.
    """
    pieces: list[str] = []
    start = pos = 0
    while True:
        m = _TOKEN.search(sql, pos)
        if m is None:
            break
        if m.group("dollar"):
            close = sql.find(m.group("dollar"), m.end())
            pos = len(sql) if close < 0 else close + len(m.group("dollar"))
            continue
        pos = m.end()
        if m.group("semi"):
            pieces.append(sql[start:pos])
            start = pos
    if sql[start:].strip():
        pieces.append(sql[start:])
    statements: list[str] = []
    parts: list[str] = []
    in_trigger = False
    for piece in pieces:
        body = _strip_comments(piece)
        if not parts:
            in_trigger = bool(_TRIGGER_START.match(body))
        elif in_trigger and _TRIGGER_END.fullmatch(body):
            in_trigger = False  # "END;" right after a ";" closes the body (sqlite3_complete's rule)
        parts.append(piece)
        if in_trigger and piece.rstrip().endswith(";"):
            continue  # inside a trigger body: keep collecting
        _flush(parts, statements)
    _flush(parts, statements)
    return statements


_TRIGGER_START = re.compile(r"\s*CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TRIGGER\b", re.I)
_TRIGGER_END = re.compile(r"\s*END\s*;\s*", re.I)


def _flush(parts: list[str], statements: list[str]) -> None:
    text = "".join(parts)
    parts.clear()
    if _strip_comments(text).strip(" ;\n\t"):
        statements.append(text.strip())


_OBJECTS = ("TABLE", "INDEX", "VIEW", "TRIGGER", "SCHEMA", "SEQUENCE", "FUNCTION", "TYPE", "COLUMN")


def statement_command(statement: str) -> str:
    """The command of a statement: ``SELECT``, ``UPDATE``, ``CREATE TABLE``, ``CREATE INDEX``..."""
    words = re.findall(r"[A-Za-z_]+", _strip_comments(statement).upper())
    if not words:
        return ""
    if words[0] in ("CREATE", "DROP", "ALTER"):
        for w in words[1:4]:
            if w in _OBJECTS:
                return f"{words[0]} {w}"
    if words[0] == "WITH":  # the main statement after the CTEs
        depth = 0
        for tok in re.findall(r"\(|\)|[A-Za-z_]+", _strip_comments(statement).upper()):
            if tok == "(":
                depth += 1
            elif tok == ")":
                depth -= 1
            elif depth == 0 and tok in ("SELECT", "INSERT", "UPDATE", "DELETE", "VALUES"):
                return tok
        return "SELECT"
    return words[0]


_TRANSACTION = {"BEGIN", "COMMIT", "END", "ABORT", "START", "SAVEPOINT", "RELEASE"}
_REFUSED = {"ATTACH", "DETACH", "VACUUM"}


def check_execute_statement(statement: str, index: int) -> None:
    """Refuse statements that would break the one-transaction-per-call rule."""
    words = re.findall(r"[A-Za-z_]+", _strip_comments(statement).upper())
    first = words[0] if words else ""
    if first in _TRANSACTION or (first == "ROLLBACK"):
        raise SqlError(
            "not_allowed",
            f"{first} is not allowed: each execute call already runs in its own "
            "transaction (committed if every statement succeeds, rolled back otherwise); "
            "send the statements without transaction control",
            index,
        )
    if first in _REFUSED:
        raise SqlError("not_allowed", f"{first} is not available through this tool", index)
