"""The playground's landing page: every environment installed where the server runs (``/environments``).

The same catalog as ``openenv-mcp discover`` (name, description, task count, boundary, cached conformance
verdict; tools are not listed here, since that would start every environment's tool servers). The served
environment links to its playground; the others show the command that serves them.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["LANDING_PAGE", "landing_routes"]

LANDING_PAGE = "/static/playground/environments.html"
"""The page (a public static asset: it holds no data); it reads ``/environments.json``, which keeps the token."""


def landing_routes(environment: Any, headers: dict[str, str]) -> list[BaseRoute]:
    """``/environments`` (redirects to the page) and ``/environments.json`` (the catalog)."""
    from starlette.responses import RedirectResponse

    served = environment.spec.name

    async def page(request: Request) -> Response:
        return RedirectResponse(LANDING_PAGE, status_code=307)

    async def listing(request: Request) -> Response:
        from openenv_mcp.client.catalog import catalog

        entries = await catalog(tools=False)
        for e in entries:
            e["served"] = e["name"] == served
            e["play"] = "/" if e["served"] else f"openenv-mcp serve {e['name']}"
        return JSONResponse(entries, headers={"Cache-Control": "no-cache", **headers})

    return [
        Route("/environments", page, methods=["GET", "HEAD"], name="environments"),
        Route("/environments.json", listing, methods=["GET"], name="environments-json"),
    ]
