"""The sql tool server against its raw drivers, and the sql env's episode start, on SQLite and PostgreSQL.

* **query**: median ``step(CallTool("query"))`` of a small aggregate on the
  ``sql`` env's shop database, against the same statement through the raw
  driver (``sqlite3`` / ``psycopg`` on one open connection): the tool layer's
  price (read-only enforcement, normalisation, text table, MCP result).
* **start**: median ``Environment.new_episode()`` of the ``sql`` env (SQLite:
  copy the 540 kB seed; PostgreSQL: ``CREATE DATABASE ... TEMPLATE``), scored
  initial state included.

PostgreSQL runs on a throw-away local server (``tests/support/pgserver.py``); without
its binaries those rows are skipped. Target: the SQLite query tool within 2 ms
of the raw driver.
"""

from __future__ import annotations

import sqlite3
import statistics
import sys
import time
import uuid
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from openenv_mcp.client.registry import load_environment
from openenv_mcp.core.environment import Environment
from openenv_mcp.definitions.spec import load_module

ROOT = Path(__file__).resolve().parent.parent
SQL = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY status"
CALLS = 200
STARTS = 10
TARGET_OVERHEAD_MS = 2.0


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def _tool_query(environment: Environment) -> float:
    episode = await environment.new_episode(seed=0, task_id="q01-customer-count")
    try:
        samples = []
        for _ in range(CALLS):
            t = time.perf_counter()
            await episode.call_tool("query", {"sql": SQL})
            samples.append(time.perf_counter() - t)
        return _median_ms(samples)
    finally:
        await episode.close()


async def _starts(environment: Environment) -> float:
    samples = []
    for _ in range(STARTS):
        t = time.perf_counter()
        episode = await environment.new_episode(seed=0, task_id="m04-negative-quantities")
        samples.append(time.perf_counter() - t)
        await episode.close()  # on PostgreSQL: drops the episode's database
    return _median_ms(samples)


def _raw_sqlite(path: Path) -> float:
    conn = sqlite3.connect(path)
    samples = []
    for _ in range(CALLS):
        t = time.perf_counter()
        conn.execute(SQL).fetchall()
        samples.append(time.perf_counter() - t)
    conn.close()
    return _median_ms(samples)


def _raw_psycopg(url: str) -> float:
    import psycopg

    samples = []
    with psycopg.connect(url) as conn:
        for _ in range(CALLS):
            t = time.perf_counter()
            conn.execute(SQL).fetchall()
            samples.append(time.perf_counter() - t)
    return _median_ms(samples)


async def measure() -> list[dict]:
    env = load_environment("sql")
    rows = [
        {
            "name": "sqlite",
            "tool": await _tool_query(env),
            "raw": _raw_sqlite(env.spec.path("workspace/shop.db")),
            "start": await _starts(env),
        }
    ]
    sys.path.insert(0, str(ROOT / "tests"))
    from pgserver import TempPostgres, find_bindir

    if find_bindir() is None:
        rows.append({"name": "postgres", "error": "PostgreSQL server binaries not found (apt-get install postgresql)"})
        return rows
    import psycopg

    with TempPostgres() as pg:
        template = "bench_" + uuid.uuid4().hex[:8]
        with psycopg.connect(pg.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {template}")
        with psycopg.connect(pg.url_for(template)) as conn:
            load_module("seed", env.spec.base_dir).load_postgres(conn)
        servers = [
            s.model_copy(
                update={"env": {"SQL_BACKEND": "postgres", "DATABASE_URL": pg.url, "SQL_PG_TEMPLATE": template}}
            )
            if s.name == "sql"
            else s
            for s in env.spec.tool_servers
        ]
        pg_env = Environment(env.spec.model_copy(update={"tool_servers": servers}))

        rows.append(
            {
                "name": "postgres",
                "tool": await _tool_query(pg_env),
                "raw": _raw_psycopg(pg.url_for(template)),
                "start": await _starts(pg_env),
            }
        )
    return rows


def main() -> None:
    rows = anyio.run(measure)
    table = Table(title=f"sql: median query tool call vs raw driver ({CALLS} calls), median episode start ({STARTS})")
    for col in ("backend", "query tool ms", "raw driver ms", "ratio", "overhead ms", "episode start ms", "verdict"):
        table.add_column(col, justify="left" if col in ("backend", "verdict") else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["name"], "-", "-", "-", "-", "-", f"[yellow]skipped[/yellow] {r['error']}")
            continue
        overhead = r["tool"] - r["raw"]
        verdict = ""
        if r["name"] == "sqlite":
            ok = overhead <= TARGET_OVERHEAD_MS
            verdict = "[green]meets target[/green]" if ok else "[red]misses target[/red]"
        table.add_row(
            r["name"],
            f"{r['tool']:.3f}",
            f"{r['raw']:.3f}",
            f"{r['tool'] / r['raw']:.1f}x",
            f"{overhead:+.3f}",
            f"{r['start']:.1f}",
            verdict,
        )
    table.caption = (
        f"target: SQLite query tool within {TARGET_OVERHEAD_MS:g} ms of the raw driver. The tool opens "
        "a read-only connection per call (PostgreSQL reuses one idle read connection); the raw driver "
        "keeps one connection open."
    )
    Console().print(table)


if __name__ == "__main__":
    main()
