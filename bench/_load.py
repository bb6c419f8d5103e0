"""Load generator for ``bench_serve`` (runs in its own process; prints one JSON object).

``python -m bench._load MODE URL [options]``:

- ``ws-latency KIND URL N``: one WebSocket, one episode, N ``echo`` steps (after warm-up);
  KIND is ``openenv-mcp`` or ``openenv``. Prints per-step latencies' p50/p99.
- ``http-latency URL N``: one MCP session over streamable HTTP (2025-11-25 handshake), N
  ``tools/call echo`` posts with the same minimal HTTP/1.1 client for every server.
- ``sweep KIND URL N``: N simultaneous episodes, each reset + 3 ``sleep(1)`` tool calls;
  KIND is ``openenv-mcp`` (one WebSocket per episode), ``openenv-mcp-shared`` (episodes
  multiplexed over 16 WebSockets), ``openenv`` (one WebSocket per episode) or ``fastmcp``
  (one MCP session over HTTP per episode). Prints success count, p50/p99 of the tool calls.

The openenv-mcp control-plane wire form (``{"id", "op", ...}`` -> ``{"id", "ok", "result"}``,
``docs/protocol.md``) lives in ``ControlPlane`` below. An openenv-mcp episode's ``create``
answers with its first observation: it is the reset of a new episode.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import websockets

SLEEP_S = 1.0
DEADLINE_S = 120.0
PROTOCOL = "2025-11-25"


def pct(samples: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of ``samples`` in ms; NaN when empty."""
    if not samples:
        return float("nan")
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s))) - 1))] * 1e3


# --------------------------------------------------------------------------- minimal HTTP/1.1 client


class Http:
    """One keep-alive HTTP/1.1 connection; enough for JSON and SSE answers (length or chunked)."""

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        self.host, self.port, self.path = u.hostname or "127.0.0.1", u.port or 80, u.path or "/"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self.writer:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass

    async def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            await self.connect()
        assert self.reader and self.writer
        head = [f"POST {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status_line = await self.reader.readuntil(b"\r\n")
        status = int(status_line.split()[1])
        hdrs: dict[str, str] = {}
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            k, _, v = line.decode("latin-1").partition(":")
            hdrs[k.strip().lower()] = v.strip()
        if "content-length" in hdrs:
            data = await self.reader.readexactly(int(hdrs["content-length"]))
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            data = b"".join(parts)
        elif status in (202, 204):
            data = b""
        else:
            data = await self.reader.read()
            await self.close()
            self.writer = None
        if hdrs.get("connection", "").lower() == "close":
            await self.close()
            self.writer = None
        return status, hdrs, data


def parse_rpc(hdrs: dict[str, str], data: bytes) -> dict[str, Any]:
    """The JSON-RPC response inside a JSON or SSE body."""
    if hdrs.get("content-type", "").startswith("text/event-stream"):
        for line in data.decode().splitlines():
            if line.startswith("data:"):
                msg = json.loads(line[5:].strip())
                if "id" in msg and ("result" in msg or "error" in msg):
                    return msg
        raise RuntimeError(f"no JSON-RPC response in SSE body: {data[:200]!r}")
    return json.loads(data)


class McpSession:
    """A 2025-11-25 MCP session over streamable HTTP with hand-built JSON-RPC posts."""

    def __init__(self, url: str) -> None:
        self.http = Http(url)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        self.ids = itertools.count(1)

    async def open(self) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
        status, hdrs, data = await self.http.post(json.dumps(body).encode(), self.headers)
        if status != 200:
            raise RuntimeError(f"initialize: HTTP {status}: {data[:200]!r}")
        parse_rpc(hdrs, data)
        if "mcp-session-id" in hdrs:
            self.headers["Mcp-Session-Id"] = hdrs["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = PROTOCOL
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        status, _, _ = await self.http.post(json.dumps(note).encode(), self.headers)
        if status not in (200, 202):
            raise RuntimeError(f"notifications/initialized: HTTP {status}")

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        status, hdrs, data = await self.http.post(json.dumps(body).encode(), self.headers)
        if status != 200:
            raise RuntimeError(f"tools/call: HTTP {status}: {data[:200]!r}")
        msg = parse_rpc(hdrs, data)
        if "error" in msg or msg["result"].get("isError"):
            raise RuntimeError(f"tools/call failed: {msg}")
        return msg["result"]

    async def close(self) -> None:
        await self.http.close()


# --------------------------------------------------------------------------- WebSocket clients


def _ws_url(url: str) -> str:
    return url.replace("http://", "ws://", 1).rstrip("/") + "/ws"


class OpenEnvWs:
    """OpenEnv 0.10's ``/ws``: one episode per connection; ``reset`` / ``step`` messages."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    @classmethod
    async def connect(cls, url: str) -> OpenEnvWs:
        return cls(await websockets.connect(_ws_url(url), max_size=None, open_timeout=DEADLINE_S, ping_interval=None))

    async def reset(self) -> None:
        await self.ws.send(json.dumps({"type": "reset", "data": {}}))
        msg = json.loads(await self.ws.recv())
        if msg.get("type") != "observation":
            raise RuntimeError(f"reset: {msg}")

    async def call(self, name: str, arguments: dict[str, Any]) -> None:
        await self.ws.send(
            json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": name, "arguments": arguments}})
        )
        msg = json.loads(await self.ws.recv())
        obs = msg.get("data", {}).get("observation", {})
        if msg.get("type") != "observation" or obs.get("error") or (obs.get("result") or {}).get("is_error"):
            raise RuntimeError(f"step: {msg}")

    async def close(self) -> None:
        await self.ws.close()


class ControlPlane:
    """openenv-mcp's ``/ws``: many episodes per connection, request ids, answers routed by id."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.waiting: dict[Any, asyncio.Future] = {}
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, url: str) -> ControlPlane:
        return cls(await websockets.connect(_ws_url(url), max_size=None, open_timeout=DEADLINE_S, ping_interval=None))

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                msg = json.loads(raw)
                fut = self.waiting.pop(msg.get("id"), None)
                if fut and not fut.done():
                    fut.set_result(msg)
        except Exception as e:  # connection lost: fail everyone waiting
            for fut in self.waiting.values():
                if not fut.done():
                    fut.set_exception(RuntimeError(f"connection lost: {e!r}"))
        finally:
            for fut in self.waiting.values():
                if not fut.done():
                    fut.set_exception(RuntimeError("connection closed"))

    async def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        rid = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        await self.ws.send(json.dumps({"id": rid, **msg}))
        answer = await fut
        if not answer.get("ok"):
            raise RuntimeError(f"{msg.get('op')}: {answer.get('error')}")
        return answer["result"]

    async def episode(self) -> CpEpisode:
        """``create``: a new episode, reset (its answer carries the first observation)."""
        answer = await self.request({"op": "create"})
        return CpEpisode(self, answer["episode_id"])

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()


class CpEpisode:
    """One openenv-mcp episode driven over a (possibly shared) control-plane connection."""

    def __init__(self, cp: ControlPlane, episode_id: str) -> None:
        self.cp, self.episode_id = cp, episode_id

    async def reset(self) -> None:
        await self.cp.request({"op": "reset", "episode_id": self.episode_id})

    async def call(self, name: str, arguments: dict[str, Any]) -> None:
        answer = await self.cp.request(
            {
                "op": "step",
                "episode_id": self.episode_id,
                "action": {"type": "call_tool", "name": name, "arguments": arguments},
            }
        )
        result = answer["observation"]["result"]
        if result.get("isError"):
            raise RuntimeError(f"step: {answer}")

    async def close(self) -> None:
        await self.cp.request({"op": "close", "episode_id": self.episode_id})


# --------------------------------------------------------------------------- modes


async def ws_latency(kind: str, url: str, n: int) -> dict[str, Any]:
    if kind == "openenv":
        ep: Any = await OpenEnvWs.connect(url)
        closer = ep
    else:
        cp = await ControlPlane.connect(url)
        ep = await cp.episode()
        closer = cp
    await ep.reset()  # both: an explicit reset before stepping
    for _ in range(max(50, n // 10)):
        await ep.call("echo", {"text": "hello"})
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await ep.call("echo", {"text": "hello"})
        samples.append(time.perf_counter() - t)
    await closer.close()
    return {"p50_ms": pct(samples, 50), "p99_ms": pct(samples, 99), "n": n, "samples": samples}


async def http_latency(url: str, n: int) -> dict[str, Any]:
    s = McpSession(url)
    await s.open()
    for _ in range(max(50, n // 10)):
        await s.call("echo", {"text": "hello"})
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await s.call("echo", {"text": "hello"})
        samples.append(time.perf_counter() - t)
    await s.close()
    return {"p50_ms": pct(samples, 50), "p99_ms": pct(samples, 99), "n": n, "samples": samples}


async def sweep_batch(url: str, n: int, chunk: int = 512) -> dict[str, Any]:
    """openenv-mcp's vectorized form: ``batch`` messages over one WebSocket (chunks of ``chunk``
    episodes sent at once): create (= reset) every episode, then 3 rounds of one step each.
    Each episode's call latency is the round trip of the batch that carried it."""
    cp = await ControlPlane.connect(url)
    calls: list[float] = []
    errors: dict[str, int] = {}
    ok = [True] * n
    chunks = [list(range(i, min(n, i + chunk))) for i in range(0, n, chunk)]
    ids: list[str | None] = [None] * n

    def note(i: int, err: Any) -> None:
        ok[i] = False
        key = str(err)[:120]
        errors[key] = errors.get(key, 0) + 1

    async def create(idx: list[int]) -> None:
        answer = await cp.request({"op": "batch", "items": [{"op": "create"} for _ in idx]})
        for i, r in zip(idx, answer["results"], strict=True):
            if r["ok"]:
                ids[i] = r["result"]["episode_id"]
            else:
                note(i, r["error"])

    async def step(idx: list[int]) -> None:
        live = [i for i in idx if ok[i]]
        items = [
            {"episode_id": ids[i], "action": {"type": "call_tool", "name": "sleep", "arguments": {"seconds": SLEEP_S}}}
            for i in live
        ]
        t = time.perf_counter()
        answer = await cp.request({"op": "batch", "items": items})
        took = time.perf_counter() - t
        for i, r in zip(live, answer["results"], strict=True):
            if r["ok"] and not r["result"]["observation"]["result"].get("isError"):
                calls.append(took)
            else:
                note(i, r.get("error") or r["result"])

    async def episode_chunk(idx: list[int]) -> None:
        await create(idx)
        for _ in range(3):
            await step(idx)
        await cp.request({"op": "batch", "items": [{"op": "close", "episode_id": ids[i]} for i in idx if ids[i]]})

    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.gather(*(episode_chunk(c) for c in chunks)), DEADLINE_S)
    except Exception as e:
        errors[f"{type(e).__name__}: {str(e)[:100]}"] = n - sum(ok)
        ok = [False] * n
    wall = time.perf_counter() - t0
    await cp.close()
    return {
        "n": n,
        "ok": sum(ok),
        "p50_ms": pct(calls, 50),
        "p99_ms": pct(calls, 99),
        "wall_s": wall,
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:3]),
    }


async def sweep(kind: str, url: str, n: int) -> dict[str, Any]:
    if kind == "openenv-mcp-batch":
        return await sweep_batch(url, n)
    calls: list[float] = []
    errors: dict[str, int] = {}
    shared: list[ControlPlane] = []
    start = asyncio.Event()

    async def one(i: int) -> bool:
        closer = None
        try:
            await start.wait()
            if kind == "fastmcp":
                ep: Any = McpSession(url + "/mcp")
                closer = ep
                await ep.open()  # a fresh MCP session is FastMCP's "reset"
            elif kind == "openenv":
                ep = await OpenEnvWs.connect(url)
                closer = ep
                await ep.reset()
            elif kind == "openenv-mcp":
                cp = await ControlPlane.connect(url)
                closer = cp
                ep = await cp.episode()  # create = a new episode, reset
            else:  # openenv-mcp-shared
                ep = await shared[i % len(shared)].episode()
            for _ in range(3):
                t = time.perf_counter()
                await ep.call("sleep", {"seconds": SLEEP_S})
                calls.append(time.perf_counter() - t)
            if kind == "openenv-mcp-shared":
                await ep.close()
            return True
        except Exception as e:
            key = f"{type(e).__name__}: {str(e)[:120]}"
            errors[key] = errors.get(key, 0) + 1
            return False
        finally:
            if closer is not None:
                try:
                    await closer.close()
                except Exception:
                    pass

    if kind == "openenv-mcp-shared":
        shared = [await ControlPlane.connect(url) for _ in range(16)]
    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    start.set()
    done, pending = await asyncio.wait(tasks, timeout=DEADLINE_S)
    for t in pending:
        t.cancel()
    wall = time.perf_counter() - t0
    ok = sum(1 for t in done if not t.cancelled() and t.result())
    if pending:
        errors["deadline"] = len(pending)
    for cp in shared:
        await cp.close()
    top = dict(sorted(errors.items(), key=lambda kv: -kv[1])[:3])
    return {"n": n, "ok": ok, "p50_ms": pct(calls, 50), "p99_ms": pct(calls, 99), "wall_s": wall, "errors": top}


def main(argv: list[str]) -> int:
    mode = argv[0]
    if mode == "ws-latency":
        out = asyncio.run(ws_latency(argv[1], argv[2], int(argv[3])))
    elif mode == "http-latency":
        out = asyncio.run(http_latency(argv[1], int(argv[2])))
    elif mode == "sweep":
        out = asyncio.run(sweep(argv[1], argv[2], int(argv[3])))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
