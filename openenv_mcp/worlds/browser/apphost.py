"""The app host: every application of an episode in one process, inside the episode's sandbox.

``python -m openenv_mcp.worlds.browser.apphost --apps-dir DIR --app shop --app mail --control FOLDER``
loads ``DIR/<name>.py`` (each defines ``App``, a :class:`~.webapp.WebApp`), serves them all on
``127.0.0.1:PORT`` of the sandbox's own loopback, each at its own origin (``http://<name>.localhost:PORT``,
chosen by the ``Host`` header; anything else is a 421), and answers the grader on the state socket
(:mod:`.control`). Until the grader has seeded them, the applications answer 503.

The process makes itself non-dumpable first: processes of the same uid (the browser side) can then
neither trace it nor read its memory or descriptors through ``/proc``; its data lives in memory only.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import importlib.util
import os
import sys
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from openenv_mcp.worlds.browser import CONTROL_SOCKET
from openenv_mcp.worlds.browser.control import serve_control
from openenv_mcp.worlds.browser.webapp import WebApp

__all__ = ["AppHost", "main"]

PR_SET_DUMPABLE = 4


def load_app(apps_dir: str, name: str) -> WebApp:
    path = os.path.join(apps_dir, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"openenv_browser_apps.{name}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"apphost: no application {name!r} at {path}")
    if apps_dir not in sys.path:
        sys.path.insert(0, apps_dir)  # the apps share helpers beside them
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.App()
    if not isinstance(app, WebApp):
        raise SystemExit(f"apphost: {path} defines App, but it is not a WebApp")
    return app


def asgi_of(app: WebApp) -> Starlette:
    """One application's Starlette app: its routes, its script, and a 503 until it is seeded."""

    async def script(request: Request) -> Response:
        return Response(app.SCRIPT, media_type="text/javascript")

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [Route("/static/app.js", script), Route("/favicon.ico", no_icon), *app.routes()]
    inner = Starlette(routes=routes)

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not app.ready:
            await PlainTextResponse("This application is starting.", status_code=503)(scope, receive, send)
            return
        await inner(scope, receive, send)

    return guarded  # type: ignore[return-value]


class AppHost:
    """The applications of one episode and the grader's requests on them."""

    def __init__(self, apps: dict[str, WebApp], port: int) -> None:
        self.apps = apps
        self.port = port
        self.asgi = {f"{name}.localhost:{port}": asgi_of(app) for name, app in apps.items()}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
        target = self.asgi.get(host)
        if target is None:
            await PlainTextResponse(f"No application is served at {host!r}.", status_code=421)(scope, receive, send)
            return
        await target(scope, receive, send)

    async def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {"ok": True}
        if op == "seed":
            data = request.get("data")
            if not isinstance(data, dict) or set(data) - set(self.apps):
                return {"error": f"seed data must be an object keyed by application ({', '.join(self.apps)})"}
            for name, app in self.apps.items():
                app.load(data.get(name, {}))
            return {"ok": True}
        if op == "state":
            return {"state": {name: app.export() for name, app in self.apps.items()}}
        return {"error": f"unknown op {op!r}"}


async def serve(host: AppHost, control_dir: str) -> None:
    config = uvicorn.Config(
        host, host="127.0.0.1", port=host.port, log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # the grader's first answer means the pages are served too
        if task.done():
            task.result()
            raise SystemExit("apphost: the HTTP server stopped while starting")
        await asyncio.sleep(0.005)
    control = await serve_control(os.path.join(control_dir, CONTROL_SOCKET), host.handle)
    async with control:
        await task


def main(argv: list[str] | None = None) -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    p = argparse.ArgumentParser(prog="openenv_mcp.worlds.browser.apphost", allow_abbrev=False)
    p.add_argument("--apps-dir", required=True)
    p.add_argument("--app", action="append", required=True)
    p.add_argument("--control", required=True, help="folder of the state socket")
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args(argv)
    host = AppHost({name: load_app(args.apps_dir, name) for name in args.app}, args.port)
    asyncio.run(serve(host, args.control))


if __name__ == "__main__":
    main()
