"""The ``sql`` MCP tools over a :class:`~openenv_mcp.tool_servers.sql.backend.Backend`.

Four tools, the same names, schemas and result format on every backend:

``query(sql)``
    One read-only statement. Result: ``{"columns", "rows", "row_count",
    "truncated"}`` as structured content and a readable text table; at most
    ``max_rows`` rows, with a visible marker when more exist.
``execute(sql)``
    One or more statements in one transaction (all or nothing). Result:
    ``{"statements": [{"statement", "command", "rowcount"[, "columns", "rows",
    "truncated"]}], "rowcount"}`` (``rowcount``: rows changed in total).
``list_tables()``
    ``{"tables": [{"name", "kind", "columns"[, "error"]}]}``: an object the engine cannot read
    (a SQLite view over something gone or refused, in a file written by other means) is listed with
    ``"columns": []`` and ``"error"`` saying why, never failing the whole list. ``execute`` refuses a
    statement that would leave a view unreadable.
``describe_table(table)``
    ``{"name", "kind", "columns": [{"name", "type", "nullable", "default",
    "primary_key"}], "foreign_keys", "indexes"}``.

A failure is an error result (``isError``) whose text says what went wrong
and whose structured content is ``{"error": {"kind", "message", "statement"}}``
(kinds in :data:`~openenv_mcp.tool_servers.sql.normalize.ERROR_KINDS`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent
from pydantic import Field

from ..lean import hints
from .backend import Backend, RowSet, SqlError, StatementResult, TableDescription, check_sql_size

__all__ = ["ANNOTATIONS", "DEFAULT_MAX_ROWS", "build_server", "create_server", "render_table"]

DEFAULT_MAX_ROWS = 100
"""Rows a result shows before the cut marker (``SQL_MAX_ROWS`` / ``--max-rows``)."""
MAX_CELL_CHARS = 200
"""Characters of one value shown in the text table (structured content keeps all)."""

INSTRUCTIONS = (
    "SQL database tools. Use `list_tables` and `describe_table` to learn the schema, `query` for read-only "
    "SELECTs (one statement), and `execute` to change data or schema (statements separated by ';' run "
    "in one transaction: all succeed or nothing changes). Results show at most {max_rows} rows; "
    "aggregate or add LIMIT/WHERE for more. Engine: {engine}."
)
ANNOTATIONS: dict[str, dict[str, Any]] = {
    "query": hints("Query (read-only)", read_only=True, destructive=False, idempotent=True, open_world=False),
    "execute": hints("Execute SQL", read_only=False, destructive=True, idempotent=False, open_world=False),
    "list_tables": hints("List tables", read_only=True, destructive=False, idempotent=True, open_world=False),
    "describe_table": hints("Describe a table", read_only=True, destructive=False, idempotent=True, open_world=False),
}
"""Each tool's MCP annotations: the database is the tools' whole world; only ``execute`` changes it."""


def _cell(v: Any) -> str:
    if v is None:
        text = "NULL"
    elif isinstance(v, bool):
        text = "true" if v else "false"
    else:
        text = str(v)
    text = text.replace("\n", "\\n")
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return text


def render_table(rows: RowSet, max_rows: int) -> str:
    """A plain-text table of ``rows``, with the cap marker when cut."""
    if not rows.columns:
        return "(statement returned no columns)"
    cells = [[_cell(v) for v in row] for row in rows.rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(rows.columns)]

    def line(values: list[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(rows.columns), "-+-".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    n = len(rows.rows)
    if rows.truncated:
        out.append(
            f"[truncated: showing the first {max_rows} rows; more rows exist. "
            "Aggregate, or narrow the query with WHERE/LIMIT/OFFSET.]"
        )
    else:
        out.append(f"({n} row{'' if n == 1 else 's'})")
    return "\n".join(out)


def _rows_dict(rows: RowSet) -> dict[str, Any]:
    return {"columns": rows.columns, "rows": rows.rows, "row_count": len(rows.rows), "truncated": rows.truncated}


def _error(e: SqlError) -> ToolResult:
    where = f"statement {e.statement}: " if e.statement else ""
    tail = " (the whole call was rolled back; nothing changed)" if e.statement else ""
    text = f"SQL error ({e.kind}): {where}{e.message}{tail}"
    return ToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"error": {"kind": e.kind, "message": e.message, "statement": e.statement}},
        is_error=True,
    )


def _ok(text: str, structured: dict[str, Any]) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _executed(results: list[StatementResult], max_rows: int) -> ToolResult:
    """``execute``'s answer: one line (and table, for rows) per statement, then the commit; the rows
    changed by INSERT, UPDATE and DELETE summed."""
    statements, lines, changed = [], [], 0
    for i, r in enumerate(results, 1):
        entry: dict[str, Any] = {"statement": i, "command": r.command, "rowcount": r.rowcount}
        if r.rows is not None:
            entry.update({"columns": r.rows.columns, "rows": r.rows.rows, "truncated": r.rows.truncated})
            lines.append(f"statement {i}: {r.command} returned {r.rowcount} row(s)\n" + render_table(r.rows, max_rows))
        else:
            what = "done" if r.rowcount is None else f"{r.rowcount} row(s) affected"
            lines.append(f"statement {i}: {r.command} {what}")
        if r.command in ("INSERT", "UPDATE", "DELETE") and r.rowcount:
            changed += r.rowcount
        statements.append(entry)
    lines.append(f"Committed ({len(results)} statement{'' if len(results) == 1 else 's'}).")
    return _ok("\n".join(lines), {"statements": statements, "rowcount": changed})


def _tables_text(tables: list[dict[str, Any]]) -> str:
    """``list_tables``' text: a line per table or view with its columns (or why it cannot be read)."""
    if not tables:
        return "(no tables)"
    return "\n".join(
        f"{t['name']}{' (view)' if t['kind'] == 'view' else ''}: "
        + (f"cannot be read: {t['error']}" if "error" in t else ", ".join(t["columns"]))
        for t in tables
    )


def _description_text(d: TableDescription) -> str:
    """``describe_table``'s text: the table, then its columns, foreign keys and indexes, one a line."""
    lines = [f"{d.kind} {d.name}"]
    for c in d.columns:
        flags = [c.type]
        if c.primary_key:
            flags.append("PRIMARY KEY")
        if not c.nullable and not c.primary_key:
            flags.append("NOT NULL")
        if c.default is not None:
            flags.append(f"DEFAULT {c.default}")
        lines.append(f"  {c.name} {' '.join(flags)}")
    for fk in d.foreign_keys:
        lines.append(
            f"  FOREIGN KEY ({', '.join(fk['columns'])}) REFERENCES "
            f"{fk['references']} ({', '.join(fk['referenced_columns'])})"
        )
    for ix in d.indexes:
        lines.append(
            f"  {'PARTIAL ' if ix['partial'] else ''}{'UNIQUE ' if ix['unique'] else ''}INDEX "
            f"{ix['name']} ({', '.join(ix['columns'])})"
        )
    return "\n".join(lines)


def build_server(backend: Backend, *, max_rows: int = DEFAULT_MAX_ROWS, name: str = "sql") -> FastMCP:
    """A FastMCP server exposing ``query``, ``execute``, ``list_tables``, ``describe_table`` on ``backend``."""
    server = FastMCP(name, instructions=INSTRUCTIONS.format(max_rows=max_rows, engine=backend.engine))
    server.sql_backend = backend  # type: ignore[attr-defined]  # for callers that own the backend
    server.openenv_close = backend.close  # type: ignore[attr-defined]  # called when the episode closes
    if hasattr(backend, "snapshot"):  # the fork hook (docs/fork.md): the database through the backup API
        server.openenv_snapshot = backend.snapshot  # type: ignore[attr-defined]
        server.openenv_restore = backend.restore  # type: ignore[attr-defined]

    @server.tool(title=ANNOTATIONS["query"]["title"], annotations=ANNOTATIONS["query"])
    async def query(
        sql: Annotated[str, Field(description="One read-only SQL statement (SELECT/WITH/VALUES).")],
    ) -> ToolResult:
        """Run one read-only SQL statement and return its rows (capped, with a marker when cut).
        Writes are refused: use execute to change data or schema."""
        try:
            check_sql_size(sql)
            rows = await backend.query(sql, max_rows)
        except SqlError as e:
            if e.kind == "read_only":
                e.message += " (query is read-only: use the execute tool to change data or schema)"
            return _error(e)
        return _ok(render_table(rows, max_rows), _rows_dict(rows))

    @server.tool(title=ANNOTATIONS["execute"]["title"], annotations=ANNOTATIONS["execute"])
    async def execute(
        sql: Annotated[str, Field(description="One or more SQL statements separated by ';', run in one transaction.")],
    ) -> ToolResult:
        """Run SQL statements that change data or schema (INSERT, UPDATE, DELETE, CREATE, ALTER, DROP...).
        All statements run in one transaction: committed if all succeed, otherwise nothing changes."""
        try:
            check_sql_size(sql)
            results = await backend.execute(sql, max_rows)
        except SqlError as e:
            return _error(e)
        return _executed(results, max_rows)

    @server.tool(title=ANNOTATIONS["list_tables"]["title"], annotations=ANNOTATIONS["list_tables"])
    async def list_tables() -> ToolResult:
        """List the tables and views of the database with their column names."""
        try:
            tables = await backend.list_tables()
        except SqlError as e:
            return _error(e)
        return _ok(_tables_text(tables), {"tables": tables})

    @server.tool(title=ANNOTATIONS["describe_table"]["title"], annotations=ANNOTATIONS["describe_table"])
    async def describe_table(
        table: Annotated[str, Field(description="Table or view name, as list_tables shows it.")],
    ) -> ToolResult:
        """Describe a table: columns (type, nullable, default, primary key), foreign keys and indexes."""
        try:
            d = await backend.describe_table(table)
        except SqlError as e:
            return _error(e)
        return _ok(_description_text(d), asdict(d))

    return server


def _setting(ctx: Any, key: str, default: str | None = None) -> str | None:
    # only the tool server's declared env (spec ``env`` + ``pass_env``): nothing leaks in from the host
    env = getattr(ctx, "env", None) or {}
    return env.get(key, default)


async def create_server(ctx: Any) -> FastMCP:
    """Factory for in-process use in ``env.toml`` (``object = "openenv_mcp.tool_servers.sql:create_server"``).

    Reads the tool server's ``env``:

    - ``SQL_BACKEND``: ``sqlite`` (default) or ``postgres``;
    - ``SQLITE_PATH``: database file relative to the episode workspace (default ``db.sqlite``);
      the env's workspace seed puts each episode's own copy there;
    - ``DATABASE_URL``: PostgreSQL connection string (``pass_env = ["DATABASE_URL"]`` in production);
    - ``SQL_PG_TEMPLATE``: with ``postgres``, create a private database per episode from this
      template on the ``DATABASE_URL`` server (simulation against PostgreSQL);
    - ``SQL_MAX_ROWS`` (default 100), ``SQL_TIMEOUT`` seconds per call (default 10);
    - ``SQL_MAX_RESULT_BYTES``: bytes of values one result may carry (default 1,000,000);
    - SQLite only: ``SQL_MAX_VALUE_BYTES`` (one string or blob, default 1,000,000) and
      ``SQL_MAX_DB_BYTES`` (the database file, default 256 MiB).
    """
    from .backend import DEFAULT_MAX_RESULT_BYTES

    kind = (_setting(ctx, "SQL_BACKEND", "sqlite") or "sqlite").lower()
    max_rows = int(_setting(ctx, "SQL_MAX_ROWS", str(DEFAULT_MAX_ROWS)) or DEFAULT_MAX_ROWS)
    timeout = float(_setting(ctx, "SQL_TIMEOUT", "10") or 10)
    max_result = int(_setting(ctx, "SQL_MAX_RESULT_BYTES") or DEFAULT_MAX_RESULT_BYTES)
    if kind == "sqlite":
        from .sqlite import DEFAULT_MAX_DB_BYTES, DEFAULT_MAX_VALUE_BYTES, SQLiteBackend

        path = Path(_setting(ctx, "SQLITE_PATH", "db.sqlite") or "db.sqlite")
        if not path.is_absolute():
            path = Path(ctx.workspace) / path
        backend: Backend = SQLiteBackend(
            path,
            timeout=timeout,
            max_result_bytes=max_result,
            max_value_bytes=int(_setting(ctx, "SQL_MAX_VALUE_BYTES") or DEFAULT_MAX_VALUE_BYTES),
            max_db_bytes=int(_setting(ctx, "SQL_MAX_DB_BYTES") or DEFAULT_MAX_DB_BYTES),
        )
    elif kind == "postgres":
        from .postgres import PostgresBackend

        url = _setting(ctx, "DATABASE_URL")
        if not url:
            raise ValueError(
                "SQL_BACKEND=postgres needs DATABASE_URL (a libpq URL such as "
                'postgresql://user@host:5432/dbname); pass it with pass_env = ["DATABASE_URL"]'
            )
        template = _setting(ctx, "SQL_PG_TEMPLATE")
        if template:
            backend = await PostgresBackend.for_episode(
                url, template, ctx.episode_id, timeout=timeout, max_result_bytes=max_result
            )
        else:
            backend = PostgresBackend(url, timeout=timeout, max_result_bytes=max_result)
    else:
        raise ValueError(f"SQL_BACKEND must be 'sqlite' or 'postgres', got {kind!r}")
    return build_server(backend, max_rows=max_rows)
