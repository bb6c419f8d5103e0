"""Wire rules: robustness over real HTTP (malformed JSON-RPC, wrong types, oversized arguments,
unknown methods get clean errors, and the server keeps answering)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from openenv_mcp.conformance.argsgen import violations
from openenv_mcp.conformance.base import Context, Failed, fail_if, rule

LATEST = HANDSHAKE_PROTOCOL_VERSIONS[-1]
OVERSIZED_BYTES = 8 * 1024 * 1024
"""Size of the oversized-arguments probe (larger than any sane request cap)."""
HTTP_TIMEOUT = 20.0


def _parse_body(response: httpx.Response) -> list[dict[str, Any]]:
    """JSON-RPC messages in a streamable-HTTP answer (JSON or SSE)."""
    ctype = response.headers.get("content-type", "")
    text = response.text
    messages: list[Any] = []
    if "text/event-stream" in ctype:
        for line in text.splitlines():
            if line.startswith("data:"):
                data = line[5:].strip()
                if data:
                    try:
                        messages.append(json.loads(data))
                    except json.JSONDecodeError:
                        messages.append({"unparsable": data[:80]})
    elif text.strip():
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return [{"unparsable": text[:80]}]
        messages.extend(parsed if isinstance(parsed, list) else [parsed])
    return [m for m in messages if isinstance(m, dict)]


class _Wire:
    """A raw streamable-HTTP client: bytes in, status and JSON-RPC messages out."""

    def __init__(self, client: httpx.AsyncClient, url: str, extra: dict[str, str] | None = None) -> None:
        self.client, self.url, self.extra = client, url, extra or {}
        self.session: str | None = None
        self.next_id = 100

    def headers(self) -> dict[str, str]:
        h = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": LATEST,
            **self.extra,
        }
        if self.session:
            h["Mcp-Session-Id"] = self.session
        return h

    async def post(self, body: bytes) -> tuple[int, list[dict[str, Any]]]:
        response = await self.client.post(self.url, content=body, headers=self.headers())
        return response.status_code, _parse_body(response)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, list[dict[str, Any]]]:
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        return await self.post(json.dumps(msg).encode())

    async def initialize(self) -> None:
        self.session = None
        params = {
            "protocolVersion": LATEST,
            "capabilities": {},
            "clientInfo": {"name": "openenv-mcp-conformance", "version": "1"},
        }
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "initialize", "params": params})
        response = await self.client.post(self.url, content=body.encode(), headers=self.headers())
        if response.status_code != 200:
            raise Failed(f"POST initialize answered HTTP {response.status_code}: {response.text[:200]!r}")
        self.session = response.headers.get("mcp-session-id")
        await self.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    async def ping(self) -> str | None:
        """None when ping is answered with a result, else what happened."""
        try:
            status, messages = await self.request("ping")
        except httpx.HTTPError as e:
            return f"ping got no answer ({type(e).__name__}: {e})"
        if status != 200 or not any("result" in m or "error" in m for m in messages):
            return f"ping answered HTTP {status} {messages[:1]}"
        return None  # a result, or a JSON-RPC error: either way the server answers


def _verdict(
    status: int, messages: list[dict[str, Any]], *, want_error: bool = True, want_code: int | None = None
) -> str | None:
    """None when the answer is a clean error (4xx, a JSON-RPC error or an isError result)."""
    if status >= 500:
        return f"answered HTTP {status} (a server error, expected a 4xx or a JSON-RPC error)"
    if 400 <= status < 500:
        return None
    errors = [m["error"] for m in messages if isinstance(m.get("error"), dict)]
    results = [m["result"] for m in messages if "result" in m]
    if errors:
        code = errors[0].get("code")
        if want_code is not None and code != want_code:
            return f"answered JSON-RPC error code {code}, expected {want_code}"
        return None
    if results and isinstance(results[0], dict) and results[0].get("isError"):
        return None
    if not want_error and (results or status in (200, 202)):
        return None
    return f"answered HTTP {status} with {json.dumps(messages[:1])[:160]}, expected an error"


def _violable(tools: list[Any]) -> tuple[Any, str, dict[str, Any]] | None:
    """The first tool with a typed parameter, what is wrong, and arguments giving it a value of the
    wrong type (a tool without typed parameters may rightly accept anything)."""
    for tool in tools:
        for what, args in violations(tool):
            if what.startswith("property "):
                return tool, what, args
    return None


@rule(
    "wire.robustness",
    "error",
    "malformed JSON-RPC, wrong types, oversized arguments and unknown methods get "
    "clean errors over HTTP, and the server still answers",
    needs=("http",),
    timeout=120,
)
async def check_robustness(ctx: Context) -> None:
    tools = await ctx.tools()
    target = _violable(tools)
    first = target[0] if target else tools[0] if tools else None
    props = list(((first.input_schema or {}).get("properties") or {}).keys()) if first else []
    big_key = props[0] if props else "data"
    if target is None:
        ctx.note(
            "no tool declares a typed parameter, so no call could violate a schema: the wrong-type probe "
            "was not run (the other probes were)"
        )
    probes: list[tuple[str, bytes, dict[str, Any]]] = [
        ("a malformed JSON body", b'{"jsonrpc": "2.0", "id": 1, "method": ', {"want_code": None}),
        ("a JSON value that is not JSON-RPC", b'{"hello": "world"}', {}),
        (
            "an unknown method 'openenv/no_such_method'",
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "openenv/no_such_method", "params": {}}).encode(),
            {"want_code": -32601},
        ),
        (
            "tools/call with name=42 and arguments='oops'",
            json.dumps(
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 42, "arguments": "oops"}}
            ).encode(),
            {},
        ),
    ]
    if target is not None:
        tool, what, args = target
        probes.append(
            (
                f"tools/call {tool.name!r} with {what}",
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 4,
                        "method": "tools/call",
                        "params": {"name": tool.name, "arguments": args},
                    }
                ).encode(),
                {},
            )
        )
    if first is not None:
        probes.append(
            (
                f"tools/call {first.name!r} with an {OVERSIZED_BYTES // 2**20} MiB argument",
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 5,
                        "method": "tools/call",
                        "params": {"name": first.name, "arguments": {big_key: "x" * OVERSIZED_BYTES}},
                    }
                ).encode(),
                {"want_error": False},
            )
        )
    problems: list[str] = []
    async with ctx.subject.http() as url, httpx.AsyncClient(timeout=HTTP_TIMEOUT) as client:
        wire = _Wire(client, url, getattr(ctx.subject, "headers", None))
        await wire.initialize()
        for what, body, expect in probes:
            try:
                status, messages = await wire.post(body)
                bad = _verdict(status, messages, **expect)
            except httpx.HTTPError as e:
                bad = f"got no answer ({type(e).__name__}: {e or 'connection closed'})"
            if bad:
                problems.append(f"POST {what}: {bad}")
            alive = await wire.ping()
            if alive is not None:
                problems.append(f"after POST {what}: {alive}: the server stopped answering")
                break
        else:
            try:
                await wire.initialize()
            except (Failed, httpx.HTTPError) as e:
                problems.append(f"a new initialize after the probes failed: {e}")
    fail_if(problems)
