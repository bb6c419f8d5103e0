"""What the browser world's web applications are made of: an in-memory SQLite store, a session per
browser, CSRF-checked forms, and HTML helpers (no template engine, no CDN, nothing fetched).

An application is a :class:`WebApp` subclass in the environment's ``apps/`` folder: its ``SCHEMA``
(SQL), its ``routes()`` (Starlette routes whose endpoints take ``(app, request)``), and optionally
``seeded()`` (derived data after the rows are in). The app host (:mod:`.apphost`) loads the rows the
grader sends (``{table: [row, ...]}`` plus ``meta``), serves the routes on the app's origin, and
exports every table back to the grader (:meth:`WebApp.export`).
"""

from __future__ import annotations

import html
import secrets
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

__all__ = ["Page", "WebApp", "esc", "form_value", "page_links", "query_string"]

Endpoint = Callable[["WebApp", Request], Awaitable[Response]]

SESSION_COOKIE = "session"


def esc(value: Any) -> str:
    """``value`` as HTML text (``None`` is empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def query_string(params: dict[str, Any]) -> str:
    """``?a=1&b=2`` of the non-empty ``params`` (``""`` when none)."""
    kept = {k: v for k, v in params.items() if v not in (None, "", [])}
    return "?" + urlencode(kept, doseq=True) if kept else ""


def page_links(base: str, params: dict[str, Any], page: int, pages: int) -> str:
    """A pagination bar: Previous, ``Page N of M``, Next (links keep the other ``params``)."""
    if pages <= 1:
        return ""
    parts = []
    if page > 1:
        parts.append(f'<a href="{esc(base + query_string(params | {"page": page - 1}))}">Previous page</a>')
    parts.append(f"<span>Page {page} of {pages}</span>")
    if page < pages:
        parts.append(f'<a href="{esc(base + query_string(params | {"page": page + 1}))}">Next page</a>')
    return f'<nav class="pages" aria-label="Pagination">{" ".join(parts)}</nav>'


async def form_value(request: Request) -> dict[str, str]:
    """The submitted form's fields (the last value of each name), as strings."""
    form = await request.form()
    return {k: str(v) for k, v in form.items()}


class Page:
    """One HTML page of an application: title, body, flash messages; rendered with its layout."""

    def __init__(self, title: str, body: str, *, status: int = 200, flash: str = "", error: str = "") -> None:
        self.title, self.body, self.status, self.flash, self.error = title, body, status, flash, error


class WebApp:
    """Base of the browser world's applications (subclass per app; one instance per episode)."""

    NAME = "app"
    """The app's name: its origin is ``http://NAME.localhost:8000``."""
    TITLE = "App"
    """Shown in the header and the page titles."""
    SCHEMA = ""
    """SQL creating the app's tables."""
    NAV: tuple[tuple[str, str], ...] = ()
    """Header links: ``(label, path)``."""
    STYLE = ""
    """Extra CSS of this app."""
    SCRIPT = ""
    """JavaScript served at ``/static/app.js`` (loaded by every page)."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.executescript(self.SCHEMA)
        self.meta: dict[str, Any] = {}
        self.sessions: dict[str, str] = {}
        """Session id -> CSRF token (one per browser; the profile is fresh each episode)."""
        self.ready = False

    # -- data ------------------------------------------------------------------------------------
    def tables(self) -> list[str]:
        rows = self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [r[0] for r in rows if not r[0].startswith("sqlite_")]

    def load(self, data: dict[str, Any]) -> None:
        """Insert the grader's rows (``{table: [row, ...]}``, ``meta`` aside), once."""
        if self.ready:
            raise RuntimeError(f"{self.NAME} is already seeded")
        self.meta = dict(data.get("meta", {}))
        known = set(self.tables())
        with self.transaction():
            for table, rows in data.items():
                if table == "meta":
                    continue
                if table not in known:
                    raise ValueError(f"{self.NAME} has no table {table!r}")
                for row in rows:
                    cols = list(row)
                    self.db.execute(
                        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [row[c] for c in cols],
                    )
        self.seeded()
        self.ready = True

    def seeded(self) -> None:
        """Called once the rows are in (derive what the app computes from them)."""

    def export(self) -> dict[str, list[dict[str, Any]]]:
        """Every table, every row, ordered by rowid: the state the grader reads."""
        return {t: [dict(r) for r in self.db.execute(f"SELECT * FROM {t} ORDER BY rowid")] for t in self.tables()}

    def transaction(self) -> Any:
        """``with app.transaction():`` — one atomic change (the connection autocommits otherwise)."""
        return _Transaction(self.db)

    def rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        return list(self.db.execute(sql, args))

    def row(self, sql: str, *args: Any) -> sqlite3.Row | None:
        return self.db.execute(sql, args).fetchone()

    def execute(self, sql: str, *args: Any) -> int:
        """Run one statement; the new row's id (for an INSERT)."""
        return self.db.execute(sql, args).lastrowid or 0

    # -- sessions and forms -----------------------------------------------------------------------
    def session(self, request: Request) -> str:
        """This browser's session id (made on its first request)."""
        made = getattr(request.state, "new_session", None)
        if made is not None:  # made earlier in this request (its cookie is not sent back yet)
            return made
        sid = request.cookies.get(SESSION_COOKIE, "")
        if sid not in self.sessions:
            sid = secrets.token_hex(16)
            self.sessions[sid] = secrets.token_hex(16)
            request.state.new_session = sid
        return sid

    def csrf_field(self, request: Request) -> str:
        """The hidden field every form carries."""
        token = self.sessions[self.session(request)]
        return f'<input type="hidden" name="csrf" value="{token}">'

    async def checked_form(self, request: Request) -> dict[str, str] | None:
        """The submitted form if its CSRF token is this session's, else ``None``."""
        form = await form_value(request)
        token = self.sessions.get(request.cookies.get(SESSION_COOKIE, ""))
        if token is None or not secrets.compare_digest(form.get("csrf", ""), token):
            return None
        return form

    # -- pages ------------------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        """The app's routes (override)."""
        return []

    def header_extra(self, request: Request) -> str:
        """HTML at the right of the header (a cart count, the signed-in user...)."""
        return ""

    def render(self, request: Request, page: Page) -> HTMLResponse:
        nav = " ".join(f'<a href="{esc(path)}">{esc(label)}</a>' for label, path in self.NAV)
        notes = ""
        if page.flash:
            notes += f'<div class="flash" role="status">{esc(page.flash)}</div>'
        if page.error:
            notes += f'<div class="error" role="alert">{esc(page.error)}</div>'
        body = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{esc(page.title)} - {esc(self.TITLE)}</title>"
            f"<style>{BASE_STYLE}{self.STYLE}</style></head><body>"
            f"<header><strong class='brand'>{esc(self.TITLE)}</strong><nav aria-label='Main'>{nav}</nav>"
            f"<span class='who'>{self.header_extra(request)}</span></header>"
            f"<main><h1>{esc(page.title)}</h1>{notes}{page.body}</main>"
            "<script src='/static/app.js'></script></body></html>"
        )
        response = HTMLResponse(body, status_code=page.status)
        sid = getattr(request.state, "new_session", None)
        if sid:
            response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="lax")
        return response

    def redirect(self, request: Request, path: str) -> RedirectResponse:
        response = RedirectResponse(path, status_code=303)
        sid = getattr(request.state, "new_session", None)
        if sid:
            response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="lax")
        return response

    def not_found(self, request: Request, what: str = "page") -> HTMLResponse:
        return self.render(request, Page("Not found", f"<p>No such {esc(what)}.</p>", status=404))

    def forbidden(self, request: Request) -> HTMLResponse:
        return self.render(
            request, Page("Forbidden", "<p>You do not have permission to open this page.</p>", status=403)
        )


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, kind: Any, *_: Any) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], caption: str = "") -> str:
    """An HTML table; cells are HTML already (escape values with :func:`esc`)."""
    head = "".join(f"<th scope='col'>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


BASE_STYLE = """
body{font-family:DejaVu Sans,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{display:flex;gap:1.5rem;align-items:center;padding:.7rem 1.2rem;background:#23395d;color:#fff}
header a{color:#fff;margin-right:1rem}.brand{font-size:1.15rem}.who{margin-left:auto}
main{max-width:60rem;margin:1rem auto;padding:0 1rem 2rem;background:#fff;border-radius:6px}
h1{font-size:1.4rem;padding-top:1rem}table{border-collapse:collapse;width:100%;margin:.6rem 0}
th,td{border-bottom:1px solid #dde;padding:.35rem .5rem;text-align:left;vertical-align:top}
form.inline{display:inline}label{display:block;margin:.45rem 0 .15rem}
input,select,textarea{font:inherit;padding:.25rem}textarea{width:100%;min-height:6rem}
button{font:inherit;padding:.3rem .8rem;margin:.3rem .2rem .3rem 0}
.flash{background:#e3f4e6;border:1px solid #8c8;padding:.5rem;margin:.5rem 0}
.error{background:#fbe9e9;border:1px solid #d88;padding:.5rem;margin:.5rem 0}
.pages{margin:.8rem 0}.pages a,.pages span{margin-right:1rem}.muted{color:#667}
.card{border:1px solid #dde;border-radius:5px;padding:.6rem;margin:.5rem 0}
"""
