"""The web playground at ``/`` of ``openenv-mcp serve``: a person acts as the agent.

The page (``openenv_mcp/serve/static/``: one HTML file, one script, one style sheet,
served by the package; nothing from a CDN, nothing downloaded at run time)
talks to the same routes any client uses:

* simulation mode: the control plane (``POST /episodes``,
  ``POST /episodes/{id}/reset``, ``POST /episodes/{id}/step``,
  ``GET /episodes/{id}/state``, ``DELETE /episodes/{id}``): choose a task and a
  seed, reset, read the prompt, call tools through forms generated from their
  JSON Schemas, watch reward, done and truncated, export the trajectory;
* production mode: ``/mcp`` (initialize, ``tools/list``, ``tools/call``): a
  tool tester, without rewards or reset.

This module only adds three routes: the page (``/``), its assets
(``/static/playground/...``) and ``/playground/info`` (environment name,
mode, task list, whether a token is needed). The page and its assets hold no
data, so they are public paths of the server (no token, no Host/Origin
check); the page asks for the token and sends it on every API call.
``/playground/info`` and every API route keep the token and the
DNS-rebinding checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from openenv_mcp.serve.landing import landing_routes

__all__ = ["PUBLIC_PATHS", "STATIC_DIR", "is_public", "playground_routes"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
"""The page and its assets, shipped inside the package."""

PUBLIC_PATHS = ("/", "/static/playground/")
"""Paths served without the token (``create_app(public_paths=...)`` form: exact ``/``, prefix
``/static/playground/``): the page and its assets, no data behind them."""

SECURITY_HEADERS = {
    # Everything comes from this server: scripts, styles, API calls; images and audio from tool results.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data: blob:; media-src 'self' data:; object-src 'none'; "
        "base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def is_public(path: str) -> bool:
    """Whether ``path`` is the playground's page or one of its assets (no token needed)."""
    return path == "/" or path.startswith("/static/playground/")


class _Static(StaticFiles):
    async def get_response(self, path: str, scope: Any) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(SECURITY_HEADERS)
        return response


def playground_routes(environment: Any, mode: str | None = None, token: str | None = None) -> list[BaseRoute]:
    """The playground's routes for an app serving ``environment`` (an :class:`Environment`).

    Args:
        environment: the served environment (name, description, tasks).
        mode: ``sim`` or ``prod`` (default: ``environment.mode``).
        token: the server's bearer token, if any (the page then asks for it).
    """
    mode = mode or getattr(environment, "mode", "sim")
    spec = environment.spec
    tasks = [{"id": t.id, "prompt": t.prompt} for t in environment.tasks.tasks] if mode == "sim" else []
    info = {
        "env": spec.name,
        "description": spec.description,
        "mode": mode,
        "tasks": tasks,
        "max_steps": environment.max_steps if mode == "sim" else None,
        "auth": bool(token),
    }

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers=SECURITY_HEADERS)

    async def playground_info(request: Request) -> Response:
        return JSONResponse(info, headers={"Cache-Control": "no-cache"})

    return [
        Route("/", index, methods=["GET", "HEAD"], name="playground"),
        Route("/playground/info", playground_info, methods=["GET"], name="playground-info"),
        Mount("/static/playground", app=_Static(directory=STATIC_DIR), name="playground-static"),
        *landing_routes(environment, SECURITY_HEADERS),  # /environments: every installed environment
    ]
