"""PostgreSQL backend (production): psycopg 3, async, connections opened per call.

The connection string comes from the environment (``DATABASE_URL``).
Read-only calls reuse one idle connection; ``execute`` always gets a fresh one
(closed afterwards). ``query`` runs in a ``READ ONLY`` transaction that is always rolled back, and
is sent as a prepared statement, so the server itself refuses a second
statement smuggled after a ``;``. ``execute`` runs its statements in one
transaction. Every statement is bounded by ``statement_timeout``.

For simulation tests, :meth:`PostgresBackend.for_episode` creates a private
database per episode from a template database (``CREATE DATABASE ...
TEMPLATE ...``); :meth:`close` (called when the episode closes) drops it.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import secrets
from collections.abc import Iterator
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

__all__ = ["PostgresBackend", "drop_database", "episode_database_name"]


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as e:  # pragma: no cover - depends on the install
        raise RuntimeError("the PostgreSQL backend needs psycopg: pip install 'openenv-mcp[postgres]'") from e
    return psycopg


def _error(e: Exception, statement: int | None = None) -> SqlError:
    sqlstate = getattr(e, "sqlstate", None)
    diag = getattr(e, "diag", None)
    message = (diag.message_primary if diag is not None and diag.message_primary else str(e)).strip()
    kind = normalize.error_kind("postgres", message, sqlstate)
    if kind == "timeout":
        message = "statement cancelled: it ran longer than the time limit"
    return SqlError(kind, message, statement)


_BATCH = 8
"""Rows one ``FETCH`` brings (the result cap is checked row by row as each batch arrives)."""
_names = itertools.count()

_GRACE = 1.0
"""Seconds past ``statement_timeout`` before the call's own deadline cancels the statement."""

_CURSOR_COMMANDS = {"SELECT", "VALUES", "TABLE"}
"""Commands run through a server-side cursor (``DECLARE``), so rows arrive one at a time."""


_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE|INTO)\b", re.I)
"""Words that keep a statement off a server-side cursor (``DECLARE`` refuses data-modifying ``WITH`` and
``SELECT INTO``): it runs as before, buffered by the driver."""


def _cursor_statement(statement: str) -> bool:
    return statement_command(statement) in _CURSOR_COMMANDS and not _WRITES.search(statement)


async def _run_rows(
    conn: Any,
    statement: str,
    max_rows: int,
    max_bytes: int,
    opened: list[Any],
    *,
    prepare: bool = False,
    count_rest: bool = True,
) -> tuple[Any, RowSet | None, int]:
    """Run ``statement``; ``(cursor, rows or None, total rows)``.

    A row-returning statement runs through a server-side cursor and is fetched
    :data:`_BATCH` rows at a time, each row sized by :class:`ResultCollector`
    before it is kept (the same result cap as SQLite); the rows past
    ``max_rows`` are counted by the server (``MOVE``), never sent. The cursor
    ends with the call's transaction; it is added to ``opened`` for
    :func:`_close_all` (free once the transaction is over)."""
    if _cursor_statement(statement):
        cursor = conn.cursor(name=f"openenv_{next(_names)}")
        opened.append(cursor)
        await cursor.execute(statement)
        collector = ResultCollector([d.name for d in cursor.description], max_rows, max_bytes)
        total, more = 0, True
        while more:
            batch = await cursor.fetchmany(min(_BATCH, max_rows + 1 - total))
            more = len(batch) == min(_BATCH, max_rows + 1 - total) and total + len(batch) <= max_rows
            for row in batch:
                total += 1
                collector.add(row)
        if collector.rowset.truncated and count_rest:
            moved = await conn.execute(f'MOVE FORWARD ALL IN "{cursor.name}"')
            total += int((moved.statusmessage or "MOVE 0").split()[-1])
        return cursor, collector.rowset, total
    cursor = conn.cursor()
    await cursor.execute(statement, prepare=prepare)
    if cursor.description is None:
        return cursor, None, 0
    collector = ResultCollector([d.name for d in cursor.description], max_rows, max_bytes)
    while (row := await cursor.fetchone()) is not None:
        if not collector.add(row):
            break
    return cursor, collector.rowset, cursor.rowcount


async def _close_all(cursors: list[Any]) -> None:
    """Close server-side cursors after their transaction ended (no round trip then)."""
    for cursor in cursors:
        try:
            await cursor.close()
        except Exception:  # a broken connection: the cursor is gone with it
            pass


def episode_database_name(episode_id: str) -> str:
    """The per-episode database name (``openenv_`` + the id's safe characters)."""
    return "openenv_" + re.sub(r"[^a-z0-9_]", "_", episode_id.lower())[:50]


async def drop_database(admin_url: str, name: str, *, role: str | None = None) -> None:
    """Drop a database (``WITH (FORCE)``), if it exists, then ``role`` (the episode's), if given."""
    psycopg = _psycopg()
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as conn:
        await conn.execute(
            psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(psycopg.sql.Identifier(name))
        )
        if role is not None:
            await conn.execute(psycopg.sql.SQL("DROP ROLE IF EXISTS {}").format(psycopg.sql.Identifier(role)))


_OWNED = {"r": "TABLE", "p": "TABLE", "v": "VIEW", "m": "MATERIALIZED VIEW", "f": "FOREIGN TABLE", "S": "SEQUENCE"}


async def _hand_over(conn: Any, role: str) -> None:
    """Make ``role`` the owner of the ``public`` schema and of every relation in it (sequences that
    belong to a column follow their table)."""
    sql = _psycopg().sql
    rows = await (
        await conn.execute(
            "SELECT c.relkind, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = ANY(%s) AND NOT EXISTS (SELECT 1 FROM pg_depend d "
            "WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))",
            (list(_OWNED),),
        )
    ).fetchall()
    await conn.execute(sql.SQL("ALTER SCHEMA public OWNER TO {}").format(sql.Identifier(role)))
    for kind, rel in rows:
        await conn.execute(
            sql.SQL("ALTER {} public.{} OWNER TO {}").format(
                sql.SQL(_OWNED[kind]), sql.Identifier(rel), sql.Identifier(role)
            )
        )


class PostgresBackend(Backend):
    """A PostgreSQL database given by a libpq connection string / URL."""

    engine = "postgres"

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        search_path: str | None = None,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.max_result_bytes = max_result_bytes
        self.search_path = search_path
        """Set on every connection when given (a connection's own options beat role and database settings)."""
        self._options: str | None = None
        self._idle: Any = None
        self._admin_url: str | None = None
        self.episode_database: str | None = None
        """Set by :meth:`for_episode`: the private database to drop afterwards."""

    @classmethod
    async def for_episode(cls, admin_url: str, template: str, episode_id: str, **kwargs: Any) -> PostgresBackend:
        """A fresh database copied from ``template`` for one episode, used through its own role.

        The admin URL (often a superuser: it must create databases) never runs the
        agent's SQL. The episode gets a login role without any privilege beyond owning
        its database and the relations copied into it, so ``pg_read_file()``,
        ``COPY ... TO PROGRAM`` and other episodes' databases stay out of reach. Every connection
        pins ``search_path`` to ``public``: what the agent sets for its role or database cannot
        hide the tables from the catalog tools, ``query`` and the reward."""
        psycopg = _psycopg()
        sql = psycopg.sql
        name = episode_database_name(episode_id)
        password = secrets.token_urlsafe(24)
        try:
            async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as conn:
                await conn.execute(
                    sql.SQL(
                        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION PASSWORD {}"
                    ).format(sql.Identifier(name), sql.Literal(password))
                )
                await conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE {}").format(
                        sql.Identifier(name), sql.Identifier(name), sql.Identifier(template)
                    )
                )
                await conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name)))
            info = psycopg.conninfo.conninfo_to_dict(admin_url)
            info["dbname"] = name
            async with await psycopg.AsyncConnection.connect(
                psycopg.conninfo.make_conninfo(**info), autocommit=True
            ) as conn:
                await _hand_over(conn, name)
        except BaseException:
            await drop_database(admin_url, name, role=name)
            raise
        info.update(user=name, password=password)
        # the tables are the template's, in public: ALTER ROLE/DATABASE ... SET search_path, or a schema named
        # after the role ("$user" comes first by default), would hide them from every later call and the reward
        backend = cls(psycopg.conninfo.make_conninfo(**info), **{"search_path": "public", **kwargs})
        backend.episode_database = name
        backend._admin_url = admin_url
        return backend

    async def _connect(self) -> Any:
        psycopg = _psycopg()
        if self._options is None:
            given = psycopg.conninfo.conninfo_to_dict(self.url).get("options") or ""
            pinned = f" -c search_path={self.search_path}" if self.search_path else ""
            self._options = f"{given} -c statement_timeout={int(self.timeout * 1000)}{pinned}".strip()
        try:
            return await psycopg.AsyncConnection.connect(self.url, options=self._options)
        except psycopg.OperationalError as e:
            raise SqlError("other", f"cannot connect to PostgreSQL: {str(e).strip()}") from None

    async def query(self, sql: str, max_rows: int) -> RowSet:
        psycopg = _psycopg()
        statements = await anyio.to_thread.run_sync(split_statements, sql)  # linear, but off the event loop
        if len(statements) != 1:
            raise SqlError("not_allowed", f"query runs exactly one statement; got {len(statements)}")
        conn = await self._reader()
        opened: list[Any] = []
        try:
            await conn.set_read_only(True)
            try:
                with self._deadline(None):
                    _, rows, _ = await _run_rows(
                        conn, statements[0], max_rows, self.max_result_bytes, opened, prepare=True, count_rest=False
                    )
                return rows if rows is not None else RowSet([], [])
            except psycopg.Error as e:
                raise _error(e) from None
        finally:
            await self._release(conn)
            await _close_all(opened)

    async def execute(self, sql: str, max_rows: int) -> list[StatementResult]:
        psycopg = _psycopg()
        statements = await anyio.to_thread.run_sync(split_statements, sql)  # linear, but off the event loop
        if not statements:
            raise SqlError("syntax", "no SQL statement given")
        for i, statement in enumerate(statements, 1):
            check_execute_statement(statement, i)
        conn = await self._connect()
        results: list[StatementResult] = []
        opened: list[Any] = []
        end = anyio.current_time() + self.timeout + _GRACE
        try:
            for i, statement in enumerate(statements, 1):
                try:
                    with self._deadline(i, end):
                        cursor, rows, total = await _run_rows(conn, statement, max_rows, self.max_result_bytes, opened)
                except psycopg.Error as e:
                    raise _error(e, i) from None
                except SqlError as e:
                    e.statement = i
                    raise
                command = statement_command(statement)
                if rows is not None:
                    results.append(StatementResult(command, total, rows))
                else:
                    count = cursor.rowcount
                    results.append(StatementResult(command, count if count >= 0 else None))
            try:
                await conn.commit()
            except psycopg.Error as e:
                raise _error(e, len(statements)) from None
            return results
        finally:
            if not conn.closed:
                await conn.rollback()
                await _close_all(opened)
                await conn.close()

    @contextlib.contextmanager
    def _deadline(self, statement: int | None, end: float | None = None) -> Iterator[None]:
        """The whole call's deadline, kept even if the agent's SQL turns ``statement_timeout`` off
        (``SET``, ``set_config``): at the deadline psycopg cancels the statement on the server."""
        delay = self.timeout + _GRACE if end is None else max(0.0, end - anyio.current_time())
        try:
            with anyio.fail_after(delay):
                yield
        except TimeoutError:
            raise SqlError("timeout", "statement cancelled: it ran longer than the time limit", statement) from None

    async def _reader(self) -> Any:
        """A connection for read-only work: the idle one kept from an earlier call, or a new one.

        Only calls that always roll back (query, list_tables, describe_table) reuse
        connections, so no session state set by ``execute`` can leak between calls."""
        conn, self._idle = self._idle, None
        if conn is not None and not conn.closed:
            return conn
        return await self._connect()

    async def _release(self, conn: Any) -> None:
        try:
            await conn.rollback()
            await conn.set_read_only(False)
        except Exception:
            await conn.close()
            return
        if self._idle is None and not conn.closed:
            self._idle = conn
        else:
            await conn.close()

    async def close(self) -> None:
        """Close the idle connection; drop the per-episode database if :meth:`for_episode` made one."""
        conn, self._idle = self._idle, None
        if conn is not None:
            await conn.close()
        if self.episode_database is not None and self._admin_url is not None:
            name, self.episode_database = self.episode_database, None
            await drop_database(self._admin_url, name, role=name)

    async def _catalog(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = await self._reader()
        try:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall()
        finally:
            await self._release(conn)

    async def list_tables(self) -> list[dict[str, Any]]:
        rows = await self._catalog(
            "SELECT t.table_name, t.table_type, c.column_name FROM information_schema.tables t "
            "JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name "
            "WHERE t.table_schema = current_schema() ORDER BY t.table_name, c.ordinal_position"
        )
        tables: dict[str, dict[str, Any]] = {}
        for name, kind, column in rows:
            entry = tables.setdefault(
                name, {"name": name, "kind": "view" if kind == "VIEW" else "table", "columns": []}
            )
            entry["columns"].append(column)
        return sorted(tables.values(), key=lambda t: t["name"])

    async def describe_table(self, table: str) -> TableDescription:
        conn = await self._reader()
        try:

            async def rows(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                return await (await conn.execute(sql, params)).fetchall()

            found = await rows(
                "SELECT table_type FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = %s",
                (table,),
            )
            if not found:
                raise SqlError("undefined_table", f'relation "{table}" does not exist')
            kind = "view" if found[0][0] == "VIEW" else "table"
            rel = "(quote_ident(current_schema()) || '.' || quote_ident(%s))::regclass"
            pk = {
                r[0]
                for r in await rows(
                    f"SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                    f"AND a.attnum = ANY(i.indkey) WHERE i.indrelid = {rel} AND i.indisprimary",
                    (table,),
                )
            }
            columns = []
            for name, dtype, udt, nullable, default, length, precision, scale in await rows(
                "SELECT column_name, data_type, udt_name, is_nullable, column_default, character_maximum_length, "
                "numeric_precision, numeric_scale FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
                (table,),
            ):
                declared = udt if dtype in ("USER-DEFINED", "ARRAY") else dtype
                columns.append(
                    Column(
                        name=name,
                        type=normalize.type_name(declared, length=length, precision=precision, scale=scale),
                        nullable=nullable == "YES" and name not in pk,
                        default=normalize.default_expr(default),
                        primary_key=name in pk,
                    )
                )
            fks = []
            for cols, refcols, reftable in await rows(
                "SELECT ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, o) "
                "  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o), "
                "ARRAY(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, o) "
                "  JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o), "
                f"cf.relname FROM pg_constraint c JOIN pg_class cf ON cf.oid = c.confrelid "
                f"WHERE c.contype = 'f' AND c.conrelid = {rel}",
                (table,),
            ):
                fks.append({"columns": list(cols), "references": reftable, "referenced_columns": list(refcols)})
            indexes = []
            for name, cols, unique, partial in await rows(
                "SELECT ic.relname, ARRAY(SELECT COALESCE(a.attname, %s) FROM unnest(i.indkey) WITH ORDINALITY k(n, o) "
                "  LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n AND k.n <> 0 ORDER BY k.o), "
                "i.indisunique, i.indpred IS NOT NULL "
                f"FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid "
                f"WHERE i.indrelid = {rel} AND NOT i.indisprimary",
                (EXPRESSION, table),
            ):
                indexes.append({"name": name, "columns": list(cols), "unique": bool(unique), "partial": bool(partial)})
            return TableDescription(
                name=table,
                kind=kind,
                columns=columns,
                foreign_keys=sorted(fks, key=lambda f: (f["columns"], f["references"])),
                indexes=sorted(indexes, key=lambda i: i["name"]),
            )
        finally:
            await self._release(conn)
