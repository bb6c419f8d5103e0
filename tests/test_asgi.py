"""openenv_mcp.asgi.serving: an ASGI app on a free loopback port, in this event loop."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from openenv_mcp.asgi import serving


def _app() -> Starlette:
    return Starlette(routes=[Route("/", lambda request: PlainTextResponse("up"))])


@pytest.mark.anyio
async def test_serving_answers_on_the_url_it_yields():
    async with serving(_app()) as url, httpx.AsyncClient(timeout=5) as client:
        assert (await client.get(url + "/")).text == "up"


@pytest.mark.anyio
async def test_a_block_that_raised_left_no_stale_socket_so_the_next_server_still_accepts():
    """Regression: when the block raised, the task group cancelled uvicorn midway and the listening
    socket was closed while the event loop still watched its number; the next server's socket, given
    that number, was never watched, so its requests hung (a conformance rule raising inside
    ``subject.http()`` made every later HTTP rule time out)."""
    for _ in range(3):
        with pytest.raises(RuntimeError, match="inside the block"):
            async with serving(_app()):
                raise RuntimeError("inside the block")
        async with serving(_app()) as url, httpx.AsyncClient(timeout=5) as client:
            assert (await client.get(url + "/")).text == "up"
