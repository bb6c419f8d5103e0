"""Run the sql tool server standalone: ``python -m openenv_mcp.tool_servers.sql --sqlite shop.db``.

stdio (the default) is what IDE ``mcpServers`` configs start; ``--transport http``
serves streamable HTTP at ``http://HOST:PORT/mcp``. Without ``--sqlite`` the
PostgreSQL backend is used with ``--database-url`` or ``$DATABASE_URL``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .._standalone import parser as base_parser
from .._standalone import serve
from .backend import DEFAULT_MAX_RESULT_BYTES
from .server import DEFAULT_MAX_ROWS, build_server


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(
        "sql",
        "MCP SQL tool server: query (read-only), execute, list_tables, describe_table; "
        "SQLite file or PostgreSQL database.",
        port=8766,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--sqlite", type=Path, metavar="FILE", help="SQLite database file (created if missing)")
    where.add_argument(
        "--database-url",
        metavar="URL",
        help="PostgreSQL URL, e.g. postgresql://user@localhost:5432/db (default: $DATABASE_URL)",
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=DEFAULT_MAX_ROWS,
        help="rows a result shows before the cut marker (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds one call may run before it is cancelled (default %(default)s)",
    )
    parser.add_argument(
        "--max-result-bytes",
        type=int,
        default=DEFAULT_MAX_RESULT_BYTES,
        help="bytes of values one result may carry before it is refused (default %(default)s)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.sqlite is not None:
        from .sqlite import SQLiteBackend

        if not args.sqlite.expanduser().parent.is_dir():
            print(f"error: folder of --sqlite {str(args.sqlite)!r} does not exist", file=sys.stderr)
            return 2
        backend = SQLiteBackend(args.sqlite.expanduser(), timeout=args.timeout, max_result_bytes=args.max_result_bytes)
        where = str(args.sqlite)
    else:
        url = args.database_url or os.environ.get("DATABASE_URL")
        if not url:
            print("error: give --sqlite FILE, or --database-url URL / $DATABASE_URL for PostgreSQL", file=sys.stderr)
            return 2
        from .postgres import PostgresBackend

        backend = PostgresBackend(url, timeout=args.timeout, max_result_bytes=args.max_result_bytes)
        where = "PostgreSQL"
    return serve(build_server(backend, max_rows=args.max_rows), args, f"sql MCP server ({where})")


if __name__ == "__main__":
    sys.exit(main())
