"""The sql tool server on both backends: every tool, read-only enforcement, errors, caps, factory, stdio.

Each test runs against SQLite and against a real PostgreSQL server (started by
the ``postgres_server`` session fixture) through a real MCP client, and expects
the very same results from both.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import uuid

import psycopg
import pytest
from fastmcp import Client

from openenv_mcp.isolation.base import ServerContext
from openenv_mcp.tool_servers.sql import build_server, create_server
from openenv_mcp.tool_servers.sql.backend import SqlError, split_statements, statement_command
from openenv_mcp.tool_servers.sql.postgres import PostgresBackend, drop_database, episode_database_name
from openenv_mcp.tool_servers.sql.sqlite import SQLiteBackend

from support import ROOT

SCHEMA = (
    "CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
    "CREATE TABLE books (id INTEGER PRIMARY KEY, author_id INTEGER NOT NULL REFERENCES authors(id),"
    " title TEXT NOT NULL, price NUMERIC(6,2), published DATE, status TEXT NOT NULL DEFAULT 'draft');"
    "CREATE UNIQUE INDEX ux_books_title ON books(title);"
    "INSERT INTO authors VALUES (1, 'Ursula'), (2, 'Stanislaw');"
    "INSERT INTO books VALUES (1, 1, 'Earthsea', 12.5, '1968-11-01', 'out'), (2, 1, 'Dispossessed', 14.25,"
    " '1974-05-01', 'out'), (3, 2, 'Solaris', 9.99, '1961-01-01', 'out'), (4, 2, 'Cyberiad', 20.00, NULL, 'draft')"
)


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request, tmp_path):
    if request.param == "sqlite":
        b = SQLiteBackend(tmp_path / "t.db", timeout=1.0)
        await b.execute(SCHEMA, 10)
        yield b
        return
    pg = request.getfixturevalue("postgres_server")
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    b = PostgresBackend(pg.url_for(name), timeout=1.0)
    await b.execute(SCHEMA, 10)
    try:
        yield b
    finally:
        await drop_database(pg.url, name)


async def call(server, tool, **args):
    async with Client(server) as client:
        result = await client.call_tool(tool, args, raise_on_error=False)
    return result.is_error, result.content[0].text, result.structured_content


async def count_books(b):
    return (await b.query("SELECT COUNT(*) FROM books", 10)).rows[0][0]


@pytest.mark.anyio
async def test_tool_list_is_the_same_on_both_backends(backend):
    async with Client(build_server(backend)) as client:
        tools = {t.name: t for t in await client.list_tools()}
    assert sorted(tools) == ["describe_table", "execute", "list_tables", "query"]
    assert tools["query"].input_schema["required"] == ["sql"]
    assert tools["query"].annotations.read_only_hint is True
    assert tools["describe_table"].input_schema["required"] == ["table"]


@pytest.mark.anyio
async def test_query_returns_rows_as_structured_content_and_text_table(backend):
    err, text, data = await call(
        build_server(backend), "query", sql="SELECT id, title, price, published FROM books ORDER BY id"
    )
    assert not err
    assert data == {
        "columns": ["id", "title", "price", "published"],
        "row_count": 4,
        "truncated": False,
        "rows": [
            [1, "Earthsea", 12.5, "1968-11-01"],
            [2, "Dispossessed", 14.25, "1974-05-01"],
            [3, "Solaris", 9.99, "1961-01-01"],
            [4, "Cyberiad", 20, None],
        ],
    }
    assert text == (
        "id | title        | price | published\n"
        "---+--------------+-------+-----------\n"
        "1  | Earthsea     | 12.5  | 1968-11-01\n"
        "2  | Dispossessed | 14.25 | 1974-05-01\n"
        "3  | Solaris      | 9.99  | 1961-01-01\n"
        "4  | Cyberiad     | 20    | NULL\n"
        "(4 rows)"
    )


@pytest.mark.anyio
async def test_aggregates_agree_across_engines(backend):
    err, _, data = await call(
        build_server(backend),
        "query",
        sql="SELECT ROUND(AVG(price), 2), SUM(price), COUNT(*), MAX(published) FROM books",
    )
    assert not err
    assert data["rows"] == [[14.19, 56.74, 4, "1974-05-01"]]


@pytest.mark.anyio
async def test_row_cap_marks_the_cut(backend):
    server = build_server(backend, max_rows=2)
    err, text, data = await call(server, "query", sql="SELECT id FROM books ORDER BY id")
    assert not err
    assert data == {"columns": ["id"], "rows": [[1], [2]], "row_count": 2, "truncated": True}
    assert text.endswith(
        "[truncated: showing the first 2 rows; more rows exist. "
        "Aggregate, or narrow the query with WHERE/LIMIT/OFFSET.]"
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM books",
        "UPDATE books SET price = 0",
        "INSERT INTO authors VALUES (3, 'Octavia')",
        "DROP TABLE books",
        "CREATE TABLE x (a INTEGER)",
        "WITH gone AS (DELETE FROM books RETURNING id) SELECT COUNT(*) FROM gone",
    ],
)
async def test_query_is_read_only_for_real(backend, sql):
    err, text, data = await call(build_server(backend), "query", sql=sql)
    assert err
    assert data["error"]["kind"] in ("read_only", "syntax")  # SQLite rejects a DELETE inside WITH as syntax
    assert text.startswith(f"SQL error ({data['error']['kind']}): ")
    assert await count_books(backend) == 4
    assert [t["name"] for t in await backend.list_tables()] == ["authors", "books"]
    assert (await backend.query("SELECT SUM(price) FROM books", 10)).rows == [[56.74]]


@pytest.mark.anyio
async def test_query_refuses_a_second_statement(backend):
    err, text, data = await call(build_server(backend), "query", sql="SELECT 1; DELETE FROM books")
    assert err and data["error"]["kind"] == "not_allowed"
    assert text == "SQL error (not_allowed): query runs exactly one statement; got 2"
    assert await count_books(backend) == 4


@pytest.mark.anyio
async def test_read_only_error_points_to_execute(backend):
    err, text, _ = await call(build_server(backend), "query", sql="DELETE FROM books")
    assert err and text.endswith("(query is read-only: use the execute tool to change data or schema)")


@pytest.mark.anyio
async def test_execute_runs_statements_in_one_transaction(backend):
    server = build_server(backend)
    err, text, data = await call(
        server,
        "execute",
        sql=(
            "INSERT INTO authors (id, name) VALUES (3, 'Octavia'); "
            "UPDATE books SET status = 'out' WHERE status = 'draft'; "
            "CREATE INDEX ix_books_author ON books(author_id); "
            "DELETE FROM books WHERE id = 4 RETURNING id, title"
        ),
    )
    assert not err, text
    assert data == {
        "rowcount": 3,
        "statements": [
            {"statement": 1, "command": "INSERT", "rowcount": 1},
            {"statement": 2, "command": "UPDATE", "rowcount": 1},
            {"statement": 3, "command": "CREATE INDEX", "rowcount": None},
            {
                "statement": 4,
                "command": "DELETE",
                "rowcount": 1,
                "columns": ["id", "title"],
                "rows": [[4, "Cyberiad"]],
                "truncated": False,
            },
        ],
    }
    assert text.splitlines()[:3] == [
        "statement 1: INSERT 1 row(s) affected",
        "statement 2: UPDATE 1 row(s) affected",
        "statement 3: CREATE INDEX done",
    ]
    assert text.endswith("Committed (4 statements).")
    assert await count_books(backend) == 3


@pytest.mark.anyio
async def test_execute_is_all_or_nothing(backend):
    err, text, data = await call(
        build_server(backend),
        "execute",
        sql="DELETE FROM books WHERE id = 1; INSERT INTO books (id, author_id, title) VALUES (9, 1, 'Solaris')",
    )
    assert err
    assert data["error"]["kind"] == "constraint" and data["error"]["statement"] == 2
    assert text.startswith("SQL error (constraint): statement 2: ")
    assert text.endswith("(the whole call was rolled back; nothing changed)")
    assert await count_books(backend) == 4


@pytest.mark.anyio
async def test_foreign_keys_are_enforced_on_both(backend):
    err, _, data = await call(build_server(backend), "execute", sql="DELETE FROM authors WHERE id = 1")
    assert err and data["error"]["kind"] == "constraint"
    assert (await backend.query("SELECT COUNT(*) FROM authors", 10)).rows == [[2]]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "sql, first",
    [
        ("BEGIN; DELETE FROM books; COMMIT", "BEGIN"),
        ("DELETE FROM books; ROLLBACK", "ROLLBACK"),
        ("ATTACH DATABASE 'x.db' AS x", "ATTACH"),
        ("VACUUM", "VACUUM"),
    ],
)
async def test_execute_refuses_transaction_control_and_attach(backend, sql, first):
    err, text, data = await call(build_server(backend), "execute", sql=sql)
    assert err and data["error"]["kind"] == "not_allowed"
    assert first in text
    assert await count_books(backend) == 4


@pytest.mark.anyio
@pytest.mark.parametrize(
    "tool, args, kind",
    [
        ("query", {"sql": "SELEC * FROM books"}, "syntax"),
        ("query", {"sql": "SELECT * FROM nope"}, "undefined_table"),
        ("query", {"sql": "SELECT nope FROM books"}, "undefined_column"),
        ("execute", {"sql": "UPDATE nope SET a = 1"}, "undefined_table"),
        ("execute", {"sql": "CREATE TABLE books (a INTEGER)"}, "already_exists"),
        ("execute", {"sql": "INSERT INTO books (id, author_id) VALUES (7, 1)"}, "constraint"),
        ("execute", {"sql": "   ;  "}, "syntax"),
        ("describe_table", {"table": "nope"}, "undefined_table"),
    ],
)
async def test_bad_sql_is_a_clean_error_result_of_the_same_kind(backend, tool, args, kind):
    err, text, data = await call(build_server(backend), tool, **args)
    assert err
    assert data["error"]["kind"] == kind
    assert text.startswith(f"SQL error ({kind}): ")


@pytest.mark.anyio
async def test_long_statements_are_cancelled(backend):
    err, text, data = await call(
        build_server(backend),
        "query",
        sql=("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"),
    )
    assert err and data["error"]["kind"] == "timeout"
    assert text == "SQL error (timeout): statement cancelled: it ran longer than the time limit"


@pytest.mark.anyio
async def test_list_tables(backend):
    err, text, data = await call(build_server(backend), "list_tables")
    assert not err
    assert data == {
        "tables": [
            {"name": "authors", "kind": "table", "columns": ["id", "name"]},
            {"name": "books", "kind": "table", "columns": ["id", "author_id", "title", "price", "published", "status"]},
        ]
    }
    assert text == "authors: id, name\nbooks: id, author_id, title, price, published, status"


@pytest.mark.anyio
async def test_describe_table(backend):
    err, text, data = await call(build_server(backend), "describe_table", table="books")
    assert not err
    assert data == {
        "name": "books",
        "kind": "table",
        "columns": [
            {"name": "id", "type": "INTEGER", "nullable": False, "default": None, "primary_key": True},
            {"name": "author_id", "type": "INTEGER", "nullable": False, "default": None, "primary_key": False},
            {"name": "title", "type": "TEXT", "nullable": False, "default": None, "primary_key": False},
            {"name": "price", "type": "NUMERIC(6,2)", "nullable": True, "default": None, "primary_key": False},
            {"name": "published", "type": "DATE", "nullable": True, "default": None, "primary_key": False},
            {"name": "status", "type": "TEXT", "nullable": False, "default": "'draft'", "primary_key": False},
        ],
        "foreign_keys": [{"columns": ["author_id"], "references": "authors", "referenced_columns": ["id"]}],
        "indexes": [{"name": "ux_books_title", "columns": ["title"], "unique": True, "partial": False}],
    }
    assert text == (
        "table books\n  id INTEGER PRIMARY KEY\n  author_id INTEGER NOT NULL\n  title TEXT NOT NULL\n"
        "  price NUMERIC(6,2)\n  published DATE\n  status TEXT NOT NULL DEFAULT 'draft'\n"
        "  FOREIGN KEY (author_id) REFERENCES authors (id)\n  UNIQUE INDEX ux_books_title (title)"
    )


@pytest.mark.anyio
async def test_sqlite_schema_pragmas_read_but_pragma_assignments_are_refused(tmp_path):
    b = SQLiteBackend(tmp_path / "t.db")
    await b.execute(SCHEMA, 10)
    server = build_server(b)
    err, _, data = await call(server, "query", sql="SELECT name FROM pragma_table_info('authors')")
    assert not err and data["rows"] == [["id"], ["name"]]
    err, _, data = await call(server, "query", sql="PRAGMA foreign_keys")
    assert not err and data["rows"] == [[0]]  # this read-only connection never needs them
    for sql in ("PRAGMA foreign_keys = OFF", "PRAGMA writable_schema = ON"):
        err, _, data = await call(server, "execute", sql=sql)
        assert err and data["error"]["kind"] == "not_allowed", sql
        err, _, data = await call(server, "query", sql=sql)
        assert err and data["error"]["kind"] == "read_only", sql


def test_statement_splitting_respects_quotes_comments_triggers_and_dollar_bodies():
    assert split_statements("SELECT ';'; -- a ; comment\nSELECT 2;") == ["SELECT ';';", "-- a ; comment\nSELECT 2;"]
    trigger = "CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET x = 1; DELETE FROM c; END;"
    assert split_statements(trigger + " SELECT 1") == [trigger, "SELECT 1"]
    body = "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;"
    assert split_statements(body + "SELECT 2") == [body, "SELECT 2"]
    assert split_statements(" ; /* x */ ;") == []
    assert statement_command("WITH x AS (SELECT 1) UPDATE t SET a = 1") == "UPDATE"
    assert statement_command("create unique index u on t(a)") == "CREATE INDEX"


@pytest.mark.anyio
async def test_create_server_sqlite_uses_the_episode_workspace_copy(tmp_path):
    (tmp_path / "shop.db").write_bytes((ROOT / "envs/sql/workspace/shop.db").read_bytes())
    ctx = ServerContext(episode_id="e1", workspace=tmp_path, env={"SQL_BACKEND": "sqlite", "SQLITE_PATH": "shop.db"})
    server = await create_server(ctx)
    err, _, data = await call(server, "query", sql="SELECT COUNT(*) FROM departments")
    assert not err and data["rows"] == [[6]]
    assert server.sql_backend.path == tmp_path / "shop.db"


@pytest.mark.anyio
async def test_create_server_postgres_needs_database_url(tmp_path):
    ctx = ServerContext(episode_id="e1", workspace=tmp_path, env={"SQL_BACKEND": "postgres"})
    with pytest.raises(ValueError, match="SQL_BACKEND=postgres needs DATABASE_URL"):
        await create_server(ctx)


@pytest.mark.anyio
async def test_create_server_postgres_episode_database_from_template(tmp_path, postgres_server):
    template = "tpl_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {template}")
    with psycopg.connect(postgres_server.url_for(template)) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
        conn.execute("INSERT INTO t VALUES (1), (2)")
    episode = uuid.uuid4().hex
    ctx = ServerContext(
        episode_id=episode,
        workspace=tmp_path,
        env={"SQL_BACKEND": "postgres", "DATABASE_URL": postgres_server.url, "SQL_PG_TEMPLATE": template},
    )
    try:
        server = await create_server(ctx)
        assert server.sql_backend.episode_database == episode_database_name(episode)
        err, _, _ = await call(server, "execute", sql="DELETE FROM t")
        assert not err
        err, _, data = await call(server, "query", sql="SELECT COUNT(*) FROM t")
        assert data["rows"] == [[0]]
        with psycopg.connect(postgres_server.url_for(template)) as conn:  # the template is untouched
            assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (2,)
        await server.openenv_close()  # what the in-process boundary calls when the episode closes
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            assert conn.execute(
                "SELECT COUNT(*) FROM pg_database WHERE datname = %s", (episode_database_name(episode),)
            ).fetchone() == (0,)
    finally:
        await drop_database(postgres_server.url, episode_database_name(episode))
        await drop_database(postgres_server.url, template)


def test_help_runs():
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "openenv_mcp.tool_servers.sql", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0 and "--database-url" in out.stdout and "--sqlite" in out.stdout


@pytest.mark.anyio
async def test_standalone_stdio_with_the_official_client(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    db = tmp_path / "x.db"
    await SQLiteBackend(db).execute(SCHEMA, 10)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "openenv_mcp.tool_servers.sql", "--sqlite", str(db)],
        cwd=str(ROOT),
        env={"PATH": os.environ.get("PATH", "")},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await asyncio.wait_for(session.initialize(), 60)
        names = sorted(t.name for t in (await session.list_tools()).tools)
        assert names == ["describe_table", "execute", "list_tables", "query"]
        result = await session.call_tool("query", {"sql": "SELECT name FROM authors ORDER BY id"})
        assert not result.is_error
        assert result.structured_content["rows"] == [["Ursula"], ["Stanislaw"]]


@pytest.mark.anyio
async def test_standalone_http_on_postgres_with_the_official_client(postgres_server):
    """``--transport http`` with ``DATABASE_URL`` from the environment: the production shape."""
    from mcp.client.client import Client as SdkClient

    from openenv_mcp.testing import http_tool_server

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    await PostgresBackend(postgres_server.url_for(name)).execute(SCHEMA, 10)
    env = {"PATH": os.environ.get("PATH", ""), "DATABASE_URL": postgres_server.url_for(name)}
    try:
        async with http_tool_server("sql", env=env) as url, SdkClient(url) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == ["describe_table", "execute", "list_tables", "query"]
            result = await client.call_tool("query", {"sql": "SELECT title FROM books WHERE id = 3"})
            assert not result.is_error and result.structured_content["rows"] == [["Solaris"]]
            result = await client.call_tool("query", {"sql": "DELETE FROM books"})
            assert result.is_error and result.structured_content["error"]["kind"] == "read_only"
    finally:
        await drop_database(postgres_server.url, name)


# -- hardening (issue 10): what the agent's SQL may do, and how much ---------------------------------

DOUBLING = (
    "WITH RECURSIVE s(x, n) AS (SELECT CAST('aaaaaaaaaa' AS TEXT), 0 UNION ALL "
    "SELECT x || x, n + 1 FROM s WHERE n < 16) SELECT x FROM s"
)
"""17 rows, the last 655 KB: together over the 1 MB result cap, each under SQLite's 1 MB value limit."""

CAP_TEXT = (
    "the result is larger than 1000000 bytes, the limit of one result: select fewer or shorter columns, "
    "aggregate, or add LIMIT"
)


@pytest.mark.anyio
async def test_a_result_over_the_byte_cap_is_refused_on_both_backends(backend):
    err, text, data = await call(build_server(backend), "query", sql=DOUBLING)
    assert err and data["error"] == {"kind": "too_large", "message": CAP_TEXT, "statement": None}
    assert text == f"SQL error (too_large): {CAP_TEXT}"
    err, text, data = await call(build_server(backend), "execute", sql="UPDATE books SET price = 1; " + DOUBLING)
    assert err and data["error"] == {"kind": "too_large", "message": CAP_TEXT, "statement": 2}
    assert await count_books(backend) == 4
    assert (await backend.query("SELECT SUM(price) FROM books", 10)).rows == [[56.74]]


@pytest.mark.anyio
async def test_rows_past_max_rows_are_counted_not_kept_and_writing_ctes_still_run(backend):
    many = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000) SELECT x FROM c"
    [result] = await backend.execute(many, 3)
    assert result.rowcount == 5000 and result.rows.rows == [[1], [2], [3]] and result.rows.truncated
    rows = await backend.query(many, 3)
    assert rows.rows == [[1], [2], [3]] and rows.truncated
    if backend.engine == "postgres":  # a data-modifying WITH cannot go through a server-side cursor
        [result] = await backend.execute(
            "WITH gone AS (DELETE FROM books WHERE id = 4 RETURNING id) SELECT COUNT(*) AS n FROM gone", 10
        )
        assert result.rows.rows == [[1]] and await count_books(backend) == 3


@pytest.mark.anyio
async def test_sqlite_value_limit_refuses_amplification_inside_the_engine(tmp_path):
    b = SQLiteBackend(tmp_path / "t.db", max_value_bytes=1000)
    await b.execute(SCHEMA, 10)
    for sql in (
        "SELECT zeroblob(1001)",
        "SELECT length(replace(hex(zeroblob(400)), '0', 'aa'))",
        "SELECT randomblob(5000)",
    ):
        with pytest.raises(SqlError) as e:
            await b.query(sql, 10)
        assert (e.value.kind, e.value.message) == ("too_large", "string or blob too big"), sql
    assert (await b.query("SELECT length(zeroblob(1000))", 10)).rows == [[1000]]


@pytest.mark.anyio
async def test_sqlite_database_file_cannot_grow_past_its_cap(tmp_path):
    b = SQLiteBackend(tmp_path / "t.db", max_db_bytes=200_000)
    await b.execute("CREATE TABLE t (v BLOB)", 10)
    with pytest.raises(SqlError) as e:
        await b.execute("INSERT INTO t SELECT zeroblob(100000) FROM (VALUES (1), (2), (3))", 10)
    assert (e.value.kind, e.value.statement) == ("too_large", 1)
    assert (await b.query("SELECT COUNT(*) FROM t", 10)).rows == [[0]]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "tool, sql, message",
    [
        ("query", "SELECT fts3_tokenizer('simple')", "the function fts3_tokenizer() is not allowed through this tool"),
        (
            "execute",
            "SELECT fts3_tokenizer('x', x'4141414141414141')",
            "the function fts3_tokenizer() is not allowed through this tool",
        ),
        ("query", "SELECT load_extension('x')", "the function load_extension() is not allowed through this tool"),
        (
            "query",
            "SELECT sqlite_compileoption_get(0)",
            "the function sqlite_compileoption_get() is not allowed through this tool",
        ),
        ("query", "SELECT name FROM dbstat", "reading the internal table dbstat is not allowed through this tool"),
        (
            "query",
            "SELECT sql FROM sqlite_stmt",
            "reading the internal table sqlite_stmt is not allowed through this tool",
        ),
        ("execute", "CREATE VIRTUAL TABLE ft USING fts5(a)", "CREATE VIRTUAL TABLE is not allowed through this tool"),
        ("query", "PRAGMA database_list", "PRAGMA database_list is not allowed through this tool"),
        ("execute", "PRAGMA journal_mode = OFF", "setting PRAGMA journal_mode is not allowed through this tool"),
        ("query", "ATTACH DATABASE ':memory:' AS m", "ATTACH is not allowed through this tool"),
    ],
)
async def test_sqlite_authorizer_refuses_what_no_task_needs(tmp_path, tool, sql, message):
    b = SQLiteBackend(tmp_path / "t.db")
    await b.execute(SCHEMA, 10)
    err, text, data = await call(build_server(b), tool, sql=sql)
    assert err and data["error"]["kind"] == "not_allowed" and data["error"]["message"] == message
    assert text.startswith(f"SQL error (not_allowed): {'statement 1: ' if tool == 'execute' else ''}{message}")


@pytest.mark.anyio
async def test_sqlite_authorizer_allows_ordinary_functions_views_triggers_and_alter_table(tmp_path):
    b = SQLiteBackend(tmp_path / "t.db")
    await b.execute(SCHEMA, 10)
    rows = await b.query(
        "SELECT upper(title) AS t, round(price, 1) AS p, strftime('%Y', published) AS y, "
        "rank() OVER (ORDER BY price DESC) AS r, json_extract(json_object('a', id), '$.a') AS j, "
        "printf('%05.1f', sqrt(price)) AS s, coalesce(nullif(status, 'out'), '-') AS st FROM books ORDER BY id",
        10,
    )
    assert rows.rows[0] == ["EARTHSEA", 12.5, "1968", 3, 1, "003.5", "-"]
    await b.execute(
        "ALTER TABLE books RENAME COLUMN status TO state; ALTER TABLE authors RENAME TO writers; "
        "ALTER TABLE books ADD COLUMN note TEXT; ALTER TABLE books DROP COLUMN note; "
        "CREATE VIEW cheap AS SELECT title FROM books WHERE price < 13; "
        "CREATE TRIGGER up AFTER UPDATE OF price ON books BEGIN "
        "UPDATE books SET state = lower(state) WHERE id = new.id; END; "
        "CREATE INDEX ix ON books(price); ANALYZE; UPDATE books SET price = price WHERE id = 1",
        10,
    )
    assert (await b.query("SELECT COUNT(*) FROM cheap", 10)).rows == [[2]]
    with pytest.raises(SqlError) as e:  # ALTER TABLE's helpers are not callable from SQL
        await b.execute("SELECT sqlite_rename_table('main', 'table', 'x', 'CREATE TABLE x(a)', 'x', 'y', 0)", 10)
    assert e.value.kind == "undefined_function"


@pytest.mark.anyio
async def test_sqlite_catalog_tools_never_create_the_database_file(tmp_path):
    server = build_server(SQLiteBackend(tmp_path / "missing.db"))
    assert (await call(server, "list_tables"))[2] == {"tables": []}
    err, _, data = await call(server, "describe_table", table="books")
    assert err and data["error"]["kind"] == "undefined_table"
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.anyio
async def test_sqlite_runaway_statement_runs_off_the_event_loop_and_really_stops(tmp_path):
    import threading

    b = SQLiteBackend(tmp_path / "t.db", timeout=1.5)
    await b.execute(SCHEMA, 10)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    before = threading.active_count()
    task = asyncio.create_task(ticker())
    start = asyncio.get_running_loop().time()
    with pytest.raises(SqlError) as e:
        await b.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c", 10)
    elapsed = asyncio.get_running_loop().time() - start
    task.cancel()
    assert e.value.kind == "timeout" and 1.4 < elapsed < 5
    assert ticks >= 0.5 * elapsed / 0.05  # the loop kept running while the statement did
    assert threading.active_count() <= before + 1  # the worker is idle again, not still computing


@pytest.mark.anyio
async def test_describe_table_shows_partial_and_expression_indexes_alike_on_both_backends(backend):
    await backend.execute(
        "CREATE INDEX ix_cheap ON books(price) WHERE price < 10; CREATE INDEX ix_lower ON books(lower(title))", 10
    )
    err, text, data = await call(build_server(backend), "describe_table", table="books")
    assert not err
    assert data["indexes"] == [
        {"name": "ix_cheap", "columns": ["price"], "unique": False, "partial": True},
        {"name": "ix_lower", "columns": ["(expression)"], "unique": False, "partial": False},
        {"name": "ux_books_title", "columns": ["title"], "unique": True, "partial": False},
    ]
    assert "  PARTIAL INDEX ix_cheap (price)\n  INDEX ix_lower ((expression))\n" in text


@pytest.mark.anyio
async def test_postgres_statement_timeout_turned_off_by_the_agent_still_ends_at_the_call_deadline(postgres_server):
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    b = PostgresBackend(postgres_server.url_for(name), timeout=1.0)
    try:
        start = asyncio.get_running_loop().time()
        with pytest.raises(SqlError) as e:
            await b.execute("SET statement_timeout = 0; SELECT pg_sleep(30) AS s", 10)
        assert (e.value.kind, e.value.statement) == ("timeout", 2)
        assert e.value.message == "statement cancelled: it ran longer than the time limit"
        assert asyncio.get_running_loop().time() - start < 6
        with pytest.raises(SqlError) as e:
            await b.execute("SELECT set_config('statement_timeout', '0', false) AS s; SELECT pg_sleep(30) AS s", 10)
        assert (e.value.kind, e.value.statement) == ("timeout", 2)
        assert (await b.query("SELECT 1 AS one", 10)).rows == [[1]]  # the backend still answers
    finally:
        await b.close()
        await drop_database(postgres_server.url, name)


@pytest.mark.anyio
async def test_postgres_episode_database_is_used_through_an_unprivileged_role(tmp_path, postgres_server):
    template = "tpl_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {template}")
    with psycopg.connect(postgres_server.url_for(template)) as conn:
        conn.execute("CREATE TABLE t (id SERIAL PRIMARY KEY, a INTEGER)")
        conn.execute("CREATE VIEW v AS SELECT a FROM t")
        conn.execute("INSERT INTO t (a) VALUES (1), (2)")
    episode = uuid.uuid4().hex
    marker = tmp_path / "pwned"
    b = await PostgresBackend.for_episode(postgres_server.url, template, episode)
    try:
        for tool, sql in [
            ("query", "SELECT pg_read_file('/etc/hostname') AS f"),
            ("execute", f"COPY (SELECT 1) TO PROGRAM 'touch {marker}'"),
            ("execute", "ALTER ROLE CURRENT_USER SUPERUSER"),
        ]:
            with pytest.raises(SqlError) as e:
                await (b.query(sql, 10) if tool == "query" else b.execute(sql, 10))
            assert e.value.kind == "not_allowed", (sql, e.value.message)
        assert not marker.exists()
        # what the tasks need still works: data, DDL on the copied tables, indexes, views
        await b.execute(
            "INSERT INTO t (a) VALUES (3); ALTER TABLE t RENAME COLUMN a TO b; CREATE INDEX ix ON t(b); "
            "DROP VIEW v; CREATE VIEW v AS SELECT b FROM t; CREATE TABLE u (x INTEGER)",
            10,
        )
        assert (await b.query("SELECT COUNT(*) AS n, MAX(id) AS m FROM t", 10)).rows == [[3, 3]]
        await b.close()
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            name = episode_database_name(episode)
            assert conn.execute("SELECT COUNT(*) FROM pg_roles WHERE rolname = %s", (name,)).fetchone() == (0,)
    finally:
        await drop_database(postgres_server.url, episode_database_name(episode), role=episode_database_name(episode))
        await drop_database(postgres_server.url, template)


def test_statement_splitting_is_linear_in_a_script_of_many_semicolons():
    import time

    script = "CREATE TRIGGER t AFTER INSERT ON a BEGIN " + "SELECT 1; " * 100_000  # 1 MB, never closed
    start = time.process_time()
    assert len(split_statements(script)) == 1
    assert time.process_time() - start < 5  # was quadratic: about 200 s


@pytest.mark.anyio
async def test_sql_text_over_the_limit_is_refused_before_parsing(backend):
    for tool in ("query", "execute"):
        err, text, data = await call(build_server(backend), tool, sql="SELECT 1; " + " " * 1_000_000)
        assert err and data["error"] == {
            "kind": "too_large",
            "statement": None,
            "message": "the SQL text is 1000010 characters long; the limit is 1000000",
        }


@pytest.mark.anyio
async def test_sqlite_runaway_calls_of_one_episode_queue_and_never_hold_up_another(tmp_path):
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    hog, other = SQLiteBackend(tmp_path / "a.db", timeout=1.0), SQLiteBackend(tmp_path / "b.db", timeout=1.0)
    await other.execute(SCHEMA, 10)
    await hog.execute(SCHEMA, 10)
    loop = asyncio.get_running_loop()

    async def timed_out() -> float:
        with pytest.raises(SqlError) as e:
            await hog.query(runaway, 10)
        assert e.value.kind == "timeout"
        return loop.time()

    start = loop.time()
    hogs = [asyncio.create_task(timed_out()) for _ in range(3)]
    await asyncio.sleep(0.2)
    t0 = loop.time()
    assert await count_books(other) == 4
    assert loop.time() - t0 < 0.5  # the other database answers at once
    ends = sorted([await h for h in hogs])
    assert ends[-1] - start > 2.5  # the hog's three calls ran one after the other (1 s each)


@pytest.mark.anyio
async def test_a_view_wrapping_fts3_tokenizer_is_refused_at_creation_and_list_tables_and_describe_table_keep_working(
    tmp_path,
):
    server = build_server(SQLiteBackend(tmp_path / "t.db", timeout=2.0))
    await call(server, "execute", sql=SCHEMA)
    is_error, text, data = await call(
        server, "execute", sql="CREATE TABLE notes (id INTEGER); CREATE VIEW p AS SELECT fts3_tokenizer('simple') AS x"
    )
    assert is_error and data["error"]["kind"] == "not_allowed" and data["error"]["statement"] == 2
    assert "the view 'p' cannot be read: unsafe use of fts3_tokenizer()" in text and "rolled back" in text
    is_error, _, data = await call(server, "list_tables")
    assert not is_error and [t["name"] for t in data["tables"]] == ["authors", "books"]
    is_error, _, data = await call(server, "describe_table", table="books")
    assert not is_error and data["name"] == "books"


@pytest.mark.anyio
async def test_a_view_unreadable_in_a_database_written_by_other_means_is_one_entry_not_a_failed_catalog(tmp_path):
    backend = SQLiteBackend(tmp_path / "t.db", timeout=2.0)
    await backend.execute(SCHEMA, 10)
    raw = sqlite3.connect(tmp_path / "t.db")  # as a file copied in or a seed would bring it
    raw.execute("CREATE VIEW p AS SELECT fts3_tokenizer('simple') AS x")
    raw.commit()
    raw.close()
    server = build_server(backend)
    is_error, text, data = await call(server, "list_tables")
    assert not is_error, text
    assert [(t["name"], t["columns"]) for t in data["tables"]] == [
        ("authors", ["id", "name"]),
        ("books", ["id", "author_id", "title", "price", "published", "status"]),
        ("p", []),
    ]
    assert data["tables"][2]["error"].startswith("unsafe use of fts3_tokenizer()")
    assert "p (view): cannot be read: unsafe use of fts3_tokenizer()" in text
    is_error, text, data = await call(server, "describe_table", table="p")
    assert is_error and data["error"]["kind"] == "not_allowed"
    assert text.startswith("SQL error (not_allowed): the view 'p' cannot be read: unsafe use of fts3_tokenizer()")
    assert not (await call(server, "describe_table", table="authors"))[0]


@pytest.mark.anyio
async def test_dropping_what_a_view_reads_is_refused_and_a_view_failing_at_run_time_leaves_the_catalog_whole(backend):
    server = build_server(backend)
    is_error, text, _ = await call(
        server,
        "execute",
        sql="CREATE VIEW overflow AS SELECT abs(-9223372036854775807 - 1) AS p; "
        "CREATE TABLE scratch (a INTEGER); CREATE VIEW reads_scratch AS SELECT a FROM scratch",
    )
    assert not is_error, text
    assert (await call(server, "query", sql="SELECT p FROM overflow"))[0]  # fails when read, on both engines
    is_error, text, data = await call(server, "execute", sql="DROP TABLE scratch")
    assert is_error and data["error"]["kind"] == "other" and data["error"]["statement"] == 1, text
    is_error, _, data = await call(server, "list_tables")
    assert not is_error and [(t["name"], t["columns"]) for t in data["tables"]] == [
        ("authors", ["id", "name"]),
        ("books", ["id", "author_id", "title", "price", "published", "status"]),
        ("overflow", ["p"]),
        ("reads_scratch", ["a"]),
        ("scratch", ["a"]),
    ]
    assert all("error" not in t for t in data["tables"])
    for table in ("overflow", "reads_scratch"):
        is_error, text, data = await call(server, "describe_table", table=table)
        assert not is_error and data["kind"] == "view", text
    assert not (await call(server, "execute", sql="DROP VIEW reads_scratch; DROP TABLE scratch"))[0]


@pytest.mark.anyio
async def test_a_postgres_agent_setting_its_roles_search_path_or_making_a_schema_of_its_name_hides_no_table(
    postgres_server,
):
    template = "tpl_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {template}")
    with psycopg.connect(postgres_server.url_for(template)) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
        conn.execute("INSERT INTO t VALUES (1), (2)")
    episode = uuid.uuid4().hex
    b = await PostgresBackend.for_episode(postgres_server.url, template, episode)
    try:
        await b.execute(
            "ALTER ROLE CURRENT_USER SET search_path = nowhere; "
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = nowhere', current_database()); "
            "EXECUTE format('CREATE SCHEMA %I', current_user); "
            "EXECUTE format('CREATE TABLE %I.t (decoy TEXT)', current_user); END $$",
            10,
        )
        server = build_server(b)  # no connection is kept from before: every call below connects afresh
        is_error, text, data = await call(server, "list_tables")
        assert not is_error and data["tables"] == [{"name": "t", "kind": "table", "columns": ["a"]}], text
        is_error, text, data = await call(server, "describe_table", table="t")
        assert not is_error and [c["name"] for c in data["columns"]] == ["a"], text
        assert (await call(server, "query", sql="SELECT COUNT(*) AS n FROM t"))[2]["rows"] == [[2]]
    finally:
        name = episode_database_name(episode)
        await drop_database(postgres_server.url, name, role=name)
        await drop_database(postgres_server.url, template)
