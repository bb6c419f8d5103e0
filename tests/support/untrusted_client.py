"""A client that is not the trainer: stdlib only, so any uid's system Python runs it (also inside a sandbox).

``python3 untrusted_client.py URL PROBES_JSON`` runs each probe in order and prints one JSON list of
results. A probe is ``{"do": KIND, ...}``:

* ``http``: ``method``, ``path``, optional ``body`` (JSON) and ``headers`` -> ``{"status", "body"}``;
* ``ws``: a WebSocket handshake on ``path`` -> ``{"status"}`` (101 means it was let in);
* ``init``: an MCP ``initialize`` on ``path`` -> ``{"status", "session", "body"}``;
* ``list``: ``tools/list`` on ``path`` in the session of the ``init`` probe number ``of`` -> ``{"status", "body"}``;
* ``end``: DELETE the session of the ``init`` probe number ``of`` -> ``{"status"}``.

Tests run it as another uid (``setpriv``) or in a bubblewrap sandbox sharing the network: see
``tests/serve/test_credentials.py``. Its source is passed with ``-c``, so file permissions don't matter.
"""

from __future__ import annotations

import base64
import http.client
import json
import sys
from urllib.parse import urlsplit

PROTOCOL = "2025-11-25"


def _conn(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)


def _json(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def request(url, method, path, body=None, headers=None):
    conn = _conn(url)
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=sent)
    response = conn.getresponse()
    out = {"status": response.status, "body": _json(response.read()), "session": response.getheader("mcp-session-id")}
    conn.close()
    return out


def websocket(url, path):
    conn = _conn(url)
    key = base64.b64encode(b"0123456789abcdef").decode()
    conn.request(
        "GET",
        path,
        headers={
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
        },
    )
    status = conn.getresponse().status
    conn.close()
    return {"status": status}


def initialize(url, path):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "untrusted", "version": "1"},
        },
    }
    out = request(url, "POST", path, body)
    if out["session"]:
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        request(url, "POST", path, note, {"Mcp-Session-Id": out["session"], "MCP-Protocol-Version": PROTOCOL})
    return out


def main() -> None:
    url, probes = sys.argv[1], json.loads(sys.argv[2])
    results: list[dict] = []
    for probe in probes:
        kind = probe["do"]
        if kind == "http":
            results.append(request(url, probe["method"], probe["path"], probe.get("body"), probe.get("headers")))
        elif kind == "ws":
            results.append(websocket(url, probe["path"]))
        elif kind == "init":
            results.append(initialize(url, probe["path"]))
        else:
            session = results[probe["of"]]["session"]
            headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": PROTOCOL}
            if kind == "list":
                body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
                results.append(request(url, "POST", probe["path"], body, headers))
            else:
                results.append(request(url, "DELETE", probe["path"], None, headers))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
