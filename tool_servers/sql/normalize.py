"""The ONE place where SQLite and PostgreSQL are made to look the same.

Both backends return their raw driver values, type names and errors; this
module turns them into the shared result format, so the ``sql`` tools answer
byte for byte alike whichever backend runs behind them. Everything that
genuinely differs between the two engines is decided here, and only here:

Values (:func:`value`)
    Numbers in their shortest form: an integral ``float`` or ``Decimal`` becomes
    an ``int`` (SQLite stores ``20.00`` in a ``NUMERIC`` column as the integer
    20, PostgreSQL returns ``Decimal('20.00')``; both report ``20``), any other
    ``Decimal`` (PostgreSQL ``numeric``) a ``float``; ``date`` -> ``"YYYY-MM-DD"``;
    ``datetime`` -> ``"YYYY-MM-DD HH:MM:SS[.ffffff]"`` (SQLite's text form);
    ``time``/``timedelta``/``UUID`` -> ``str``; ``bytes`` -> ``"\\x<hex>"``;
    non-finite floats -> ``"NaN"``/``"Infinity"``/``"-Infinity"``. ``bool`` stays
    ``bool`` (SQLite has no boolean values; PostgreSQL's are kept for
    production fidelity, so portable schemas avoid ``BOOLEAN``).

Type names (:func:`type_name`)
    Declared SQLite types and PostgreSQL ``information_schema`` types map to one
    upper-case spelling: ``INTEGER``, ``BIGINT``, ``SMALLINT``, ``NUMERIC(p,s)``,
    ``REAL``, ``DOUBLE PRECISION``, ``TEXT``, ``VARCHAR(n)``, ``CHAR(n)``,
    ``DATE``, ``TIMESTAMP``, ``BOOLEAN``, ``BLOB``...

Defaults (:func:`default_expr`)
    PostgreSQL's ``'x'::text`` casts are dropped, so both show ``'x'``.

Errors (:func:`error_kind`)
    Driver errors become :class:`~openenv_mcp.tool_servers.sql.backend.SqlError` with a
    portable ``kind`` (``syntax``, ``undefined_table``, ``undefined_column``,
    ``undefined_function``, ``already_exists``, ``constraint``, ``data``,
    ``read_only``, ``not_allowed``, ``timeout``, ``too_large``, ``other``) and the engine's own
    message. The *kind* is part of the contract; the message wording is not.

Not normalised (documented in the README): the label of an unaliased
expression column (``COUNT(*)`` vs ``count``; alias it), the types of a view's
computed columns, float rounding in the last digits, and dialect differences.

Comparison (:func:`comparable`)
    The differential test compares tool results through this function: a
    success result is compared whole; an error result by ``isError`` and its
    ``kind`` (the engine's wording is the one thing dropped).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import uuid
from decimal import Decimal
from typing import Any

__all__ = ["ERROR_KINDS", "comparable", "default_expr", "error_kind", "type_name", "value"]

ERROR_KINDS = (
    "syntax",
    "undefined_table",
    "undefined_column",
    "undefined_function",
    "already_exists",
    "constraint",
    "data",
    "read_only",
    "not_allowed",
    "timeout",
    "too_large",
    "other",
)


def value(v: Any) -> Any:
    """A driver value as the JSON value both backends report."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        if v.is_integer() and abs(v) < 2**53:
            return int(v)
        return v
    if isinstance(v, Decimal):
        if v.is_finite() and v == v.to_integral_value() and abs(v) < 2**53:
            return int(v)
        return value(float(v))
    if isinstance(v, _dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, (_dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(v).hex()
    if isinstance(v, (_dt.timedelta, uuid.UUID)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): value(x) for k, x in v.items()}
    return str(v)


_SYNONYMS = {
    "INT": "INTEGER",
    "INT4": "INTEGER",
    "INT8": "BIGINT",
    "INT2": "SMALLINT",
    "BOOL": "BOOLEAN",
    "FLOAT8": "DOUBLE PRECISION",
    "FLOAT4": "REAL",
    "FLOAT": "DOUBLE PRECISION",
    "DOUBLE": "DOUBLE PRECISION",
    "DECIMAL": "NUMERIC",
    "CHARACTER VARYING": "VARCHAR",
    "CHARACTER": "CHAR",
    "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ",
    "TIME WITHOUT TIME ZONE": "TIME",
    "BYTEA": "BLOB",
}


def type_name(
    declared: str | None, *, length: int | None = None, precision: int | None = None, scale: int | None = None
) -> str:
    """One spelling for a column type: SQLite's declared type or PostgreSQL's
    ``data_type`` (with its length/precision/scale)."""
    text = re.sub(r"\s+", " ", (declared or "").strip().upper())
    text = re.sub(r"\s*\(\s*", "(", text)
    text = re.sub(r"\s*,\s*", ",", text)
    text = re.sub(r"\s*\)", ")", text)
    base, _, args = text.partition("(")
    base = _SYNONYMS.get(base.strip(), base.strip())
    if args:
        return f"{base}({args}"
    if base in ("VARCHAR", "CHAR") and length is not None:
        return f"{base}({length})"
    if base == "NUMERIC" and precision is not None:
        return f"NUMERIC({precision},{scale or 0})"
    return base


def default_expr(expr: str | None) -> str | None:
    """A column default as written, without PostgreSQL's ``::type`` casts."""
    if expr is None:
        return None
    return re.sub(r"::[a-z ]+(\([0-9, ]+\))?(\[\])?", "", expr).strip()


_SQLITE_KINDS = [
    (re.compile(r"syntax error|incomplete input|unrecognized token"), "syntax"),
    (re.compile(r"no such table|no such view"), "undefined_table"),
    (re.compile(r"no such column|has no column named"), "undefined_column"),
    (re.compile(r"no such function|wrong number of arguments"), "undefined_function"),
    (re.compile(r"already exists"), "already_exists"),
    (re.compile(r"constraint failed"), "constraint"),
    (re.compile(r"datatype mismatch|integer overflow"), "data"),
    (re.compile(r"readonly database|not authorized|query_only"), "read_only"),
    (re.compile(r"interrupted"), "timeout"),
    (re.compile(r"too big|too many columns|database or disk is full|out of memory"), "too_large"),
]

_PG_KINDS = {
    "42601": "syntax",
    "42P01": "undefined_table",
    "42703": "undefined_column",
    "42883": "undefined_function",
    "42P07": "already_exists",
    "42710": "already_exists",
    "42701": "already_exists",
    "25006": "read_only",
    "57014": "timeout",
    "42501": "not_allowed",
    "54000": "too_large",
    "54001": "too_large",
    "54011": "too_large",
    "53100": "too_large",
    "53200": "too_large",
}


def error_kind(engine: str, message: str, sqlstate: str | None = None) -> str:
    """The portable kind of an engine error (see :data:`ERROR_KINDS`)."""
    if engine == "postgres":
        if sqlstate in _PG_KINDS:
            return _PG_KINDS[sqlstate]
        if sqlstate and sqlstate.startswith("23"):
            return "constraint"
        if sqlstate and sqlstate.startswith("22"):
            return "data"
        if sqlstate and sqlstate.startswith("42"):
            return "syntax" if sqlstate == "42000" else "other"
        return "other"
    low = message.lower()
    for pattern, kind in _SQLITE_KINDS:
        if pattern.search(low):
            return kind
    return "other"


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result (wire JSON) as the differential test compares it."""
    if not result.get("isError"):
        return result
    error = (result.get("structuredContent") or {}).get("error") or {}
    return {"isError": True, "kind": error.get("kind"), "statement": error.get("statement")}
