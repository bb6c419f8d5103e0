"""Handbook: the company wiki. Spaces of pages (a small markup: ``## heading``, ``- item``,
``| table | row |``), full-text search, editing with a required edit summary, page history."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openenv_mcp.worlds.browser.webapp import Page, WebApp, esc, page_links, query_string

PER_PAGE = 10


def render_markup(text: str) -> str:
    """The wiki's markup as HTML (everything escaped)."""
    out: list[str] = []
    rows: list[list[str]] = []
    items: list[str] = []

    def flush() -> None:
        if rows:
            head = "".join(f"<th scope='col'>{esc(c)}</th>" for c in rows[0])
            body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            rows.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in text.splitlines():
        line = line.rstrip()
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
            continue
        if line.startswith("- "):
            items.append(line[2:])
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2>{esc(line[3:])}</h2>")
        elif line:
            out.append(f"<p>{esc(line)}</p>")
    flush()
    return "".join(out)


class App(WebApp):
    NAME = "wiki"
    TITLE = "Handbook"
    NAV = (("Home", "/"), ("Search", "/search"), ("Recent changes", "/recent"))
    SCHEMA = """
    CREATE TABLE spaces (key TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL);
    CREATE TABLE pages (
        id INTEGER PRIMARY KEY, slug TEXT UNIQUE NOT NULL, space TEXT NOT NULL REFERENCES spaces(key),
        title TEXT NOT NULL, body TEXT NOT NULL, updated TEXT NOT NULL, author TEXT NOT NULL);
    CREATE TABLE revisions (
        id INTEGER PRIMARY KEY, page_id INTEGER NOT NULL REFERENCES pages(id), body TEXT NOT NULL,
        summary TEXT NOT NULL, author TEXT NOT NULL, at TEXT NOT NULL);
    """
    SCRIPT = """
document.querySelectorAll('textarea[data-count]').forEach(function (area) {
  var out = document.getElementById(area.dataset.count);
  var show = function () { out.textContent = area.value.length + ' characters'; };
  area.addEventListener('input', show); show();
});
"""

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home),
            Route("/search", self.search),
            Route("/recent", self.recent),
            Route("/spaces/{key}", self.space),
            Route("/pages/{slug}", self.page),
            Route("/pages/{slug}/edit", self.edit, methods=["GET", "POST"]),
            Route("/pages/{slug}/history", self.history),
        ]

    @property
    def user(self) -> str:
        return str(self.meta.get("user", "you"))

    def header_extra(self, request: Request) -> str:
        return f"Signed in as {esc(self.user)}"

    async def home(self, request: Request) -> Response:
        spaces = self.rows(
            "SELECT s.*, COUNT(p.id) AS n FROM spaces s LEFT JOIN pages p ON p.space = s.key GROUP BY s.key ORDER BY s.name"
        )
        items = "".join(
            f"<li><a href='/spaces/{esc(s['key'])}'>{esc(s['name'])}</a> <span class='muted'>({s['n']} pages)</span>"
            f" - {esc(s['description'])}</li>"
            for s in spaces
        )
        form = "<form action='/search' role='search'><label for='q'>Search the handbook</label><input id='q' name='q'> <button>Search</button></form>"
        return self.render(request, Page("Handbook", f"{form}<h2>Spaces</h2><ul>{items}</ul>"))

    async def search(self, request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        form = f"<form action='/search' role='search'><label for='q'>Search the handbook</label><input id='q' name='q' value='{esc(q)}'> <button>Search</button></form>"
        if not q:
            return self.render(request, Page("Search", form))
        like = f"%{q.lower()}%"
        found = self.rows(
            "SELECT * FROM pages WHERE lower(title) LIKE ? OR lower(body) LIKE ? ORDER BY lower(title) LIKE ? DESC, title",
            like,
            like,
            like,
        )
        page = (
            max(1, int(request.query_params.get("page", "1") or 1))
            if request.query_params.get("page", "1").isdigit()
            else 1
        )
        pages = max(1, -(-len(found) // PER_PAGE))
        shown = found[(page - 1) * PER_PAGE : page * PER_PAGE]
        items = "".join(
            f"<li><a href='/pages/{esc(p['slug'])}'>{esc(p['title'])}</a> <span class='muted'>in {esc(p['space'])}</span></li>"
            for p in shown
        )
        body = f"{form}<p>{len(found)} results for “{esc(q)}”</p><ol>{items}</ol>{page_links('/search', {'q': q}, page, pages)}"
        return self.render(request, Page("Search", body))

    async def recent(self, request: Request) -> Response:
        revs = self.rows(
            "SELECT r.*, p.slug, p.title FROM revisions r JOIN pages p ON p.id = r.page_id ORDER BY r.id DESC LIMIT 20"
        )
        items = "".join(
            f"<li><a href='/pages/{esc(r['slug'])}'>{esc(r['title'])}</a>: {esc(r['summary'])} "
            f"<span class='muted'>by {esc(r['author'])}, {esc(r['at'])}</span></li>"
            for r in revs
        )
        return self.render(request, Page("Recent changes", f"<ul>{items}</ul>" if items else "<p>No changes yet.</p>"))

    async def space(self, request: Request) -> Response:
        space = self.row("SELECT * FROM spaces WHERE key = ?", request.path_params["key"])
        if space is None:
            return self.not_found(request, "space")
        pages = self.rows("SELECT * FROM pages WHERE space = ? ORDER BY title", space["key"])
        items = "".join(f"<li><a href='/pages/{esc(p['slug'])}'>{esc(p['title'])}</a></li>" for p in pages)
        return self.render(request, Page(space["name"], f"<p>{esc(space['description'])}</p><ul>{items}</ul>"))

    async def page(self, request: Request) -> Response:
        page = self.row("SELECT * FROM pages WHERE slug = ?", request.path_params["slug"])
        if page is None:
            return self.not_found(request)
        slug = esc(page["slug"])
        body = (
            f"<p class='muted'>Space <a href='/spaces/{esc(page['space'])}'>{esc(page['space'])}</a> · "
            f"last edited {esc(page['updated'])} by {esc(page['author'])} · "
            f"<a href='/pages/{slug}/edit'>Edit this page</a> · <a href='/pages/{slug}/history'>History</a></p>"
            f"<article>{render_markup(page['body'])}</article>"
        )
        return self.render(
            request, Page(page["title"], body, flash=request.query_params.get("saved") and "Page saved." or "")
        )

    async def history(self, request: Request) -> Response:
        page = self.row("SELECT * FROM pages WHERE slug = ?", request.path_params["slug"])
        if page is None:
            return self.not_found(request)
        revs = self.rows("SELECT * FROM revisions WHERE page_id = ? ORDER BY id DESC", page["id"])
        items = "".join(f"<li>{esc(r['at'])} {esc(r['author'])}: {esc(r['summary'])}</li>" for r in revs)
        return self.render(
            request, Page(f"History of {page['title']}", f"<ul>{items or '<li>No edits since import.</li>'}</ul>")
        )

    async def edit(self, request: Request) -> Response:
        page = self.row("SELECT * FROM pages WHERE slug = ?", request.path_params["slug"])
        if page is None:
            return self.not_found(request)
        error, text, summary = "", page["body"], ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            text, summary = form.get("body", "").replace("\r\n", "\n"), form.get("summary", "").strip()
            if not text.strip():
                error = "The page cannot be empty."
            elif not summary:
                error = "Please describe your change in the edit summary."
            elif len(text) > 20000:
                error = "The page is too long (20000 characters at most)."
            else:
                now = str(self.meta.get("now", ""))
                with self.transaction():
                    self.execute(
                        "UPDATE pages SET body = ?, updated = ?, author = ? WHERE id = ?",
                        text,
                        now,
                        self.user,
                        page["id"],
                    )
                    self.execute(
                        "INSERT INTO revisions (page_id, body, summary, author, at) VALUES (?, ?, ?, ?, ?)",
                        page["id"],
                        text,
                        summary,
                        self.user,
                        now,
                    )
                return self.redirect(request, f"/pages/{page['slug']}{query_string({'saved': 1})}")
        body = (
            f"<form method='post'>{self.csrf_field(request)}"
            f"<label for='body'>Page text</label><textarea id='body' name='body' rows='14' data-count='count'>{esc(text)}</textarea>"
            "<p id='count' class='muted'></p>"
            f"<label for='summary'>Edit summary</label><input id='summary' name='summary' size='60' value='{esc(summary)}'>"
            "<div><button type='submit'>Save page</button></div></form>"
        )
        return self.render(request, Page(f"Edit {page['title']}", body, error=error, status=400 if error else 200))
