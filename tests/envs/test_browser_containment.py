"""Containment of the browser world: no request leaves the sandbox, whatever starts it.

A listener on the host's loopback (IPv4 and IPv6) counts connections while an episode tries to reach
it every way the agent can: browser navigation, every request a page can make (fetch, images,
frames, forms, WebSocket, EventSource, beacons, new windows), and raw sockets from code run in the
Playwright server's own process. Inside the sandbox those addresses are its own, empty loopback: the
host listener sees nothing. A control with the sandbox's network switched to the host's shows the
same attempts do arrive when the wall is missing (so the test can fail).
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from openenv_mcp.core.environment import Environment
from openenv_mcp.definitions.spec import load_env_file

from support.browser_world import ENV_DIR, call, need_browser, result_of, text_of


class Listener:
    """TCP listeners on 127.0.0.1:PORT and [::1]:PORT that count who connects."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.socks = []
        v4 = socket.create_server(("127.0.0.1", 0))
        self.port = v4.getsockname()[1]
        self.socks.append(v4)
        try:
            self.socks.append(socket.create_server(("::1", self.port), family=socket.AF_INET6))
        except OSError:
            pass
        for s in self.socks:
            s.settimeout(0.2)
            threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        self.stopped = False

    def _accept(self, sock: socket.socket) -> None:
        while not getattr(self, "stopped", False):
            try:
                conn, peer = sock.accept()
            except (TimeoutError, OSError):
                continue
            self.hits.append(str(peer))
            conn.close()

    def close(self) -> None:
        self.stopped = True
        for s in self.socks:
            s.close()


def page_requests(port: int) -> str:
    targets = [f"http://127.0.0.1:{port}/", f"http://localhost:{port}/", f"http://[::1]:{port}/"]
    return """async () => {
  const targets = TARGETS, out = [];
  for (const url of targets) {
    try { await fetch(url, {mode: 'no-cors'}); out.push('fetch ok ' + url); } catch (e) { out.push('fetch refused ' + url); }
    new Image().src = url + 'img.png';
    const frame = document.createElement('iframe'); frame.src = url; document.body.appendChild(frame);
    try { new WebSocket(url.replace('http', 'ws')); } catch (e) {}
    try { new EventSource(url + 'events'); } catch (e) {}
    try { navigator.sendBeacon(url + 'beacon', 'x'); } catch (e) {}
    const link = document.createElement('link'); link.rel = 'prefetch'; link.href = url + 'prefetch'; document.head.appendChild(link);
    try { window.open(url); } catch (e) {}
    const form = document.createElement('form'); form.method = 'post'; form.action = url + 'form'; form.target = 'sink';
    document.body.appendChild(form);
  }
  await new Promise(r => setTimeout(r, 1500));
  return out.join('\\n');
}""".replace("TARGETS", json.dumps(targets))


def node_sockets(port: int) -> str:
    return """async (page) => {
  const p = page.constructor.constructor('return process')(); const net = p.mainModule.require('net');
  const out = [];
  for (const host of ['127.0.0.1', '::1', 'localhost']) {
    await new Promise(done => { const s = net.connect(PORT, host);
      s.on('connect', () => { out.push('connected ' + host); s.destroy(); done(); });
      s.on('error', e => { out.push('refused ' + host + ' ' + e.code); done(); });
      setTimeout(() => { out.push('timeout ' + host); s.destroy(); done(); }, 2000); });
  }
  return out.join('\\n');
}""".replace("PORT", str(port))


def environment(network: str = "none", extra_origin: str | None = None) -> Environment:
    spec = load_env_file(ENV_DIR)
    servers = []
    for server in spec.tool_servers:
        if server.name == "browser":
            command = list(server.command or [])
            if extra_origin:
                command += ["--origin", extra_origin]
            server = server.model_copy(update={"network": network, "command": command})
        servers.append(server)
    return Environment(spec.model_copy(update={"tool_servers": servers}))


async def attempt(env: Environment, port: int) -> list[str]:
    episode = await env.new_episode(seed=0, task_id="wiki-team-lead")
    try:
        texts = []
        for url in (f"http://127.0.0.1:{port}/", f"http://localhost:{port}/", f"http://[::1]:{port}/"):
            texts.append(text_of(await call(episode, "browser_navigate", url=url)))
        await call(episode, "browser_navigate", url="http://wiki.localhost:8000/")
        texts.append(text_of(await call(episode, "browser_evaluate", function=page_requests(port))))
        texts.append(text_of(await call(episode, "browser_run_code_unsafe", code=node_sockets(port))))
        return texts
    finally:
        await episode.close()
        await env.aclose()


@pytest.mark.anyio
@pytest.mark.browser
@pytest.mark.sandbox
async def test_no_request_leaves_the_sandbox():
    need_browser()
    listener = Listener()
    try:
        texts = await attempt(environment(), listener.port)
    finally:
        listener.close()
    assert listener.hits == [], f"connections reached the host: {listener.hits}"
    sockets = result_of(texts[-1])
    assert "connected" not in sockets and "refused 127.0.0.1 ECONNREFUSED" in sockets, sockets
    assert all("ERR_" in t or "Error" in t for t in texts[:3]), texts[:3]


@pytest.mark.anyio
@pytest.mark.browser
@pytest.mark.sandbox
async def test_the_same_attempts_arrive_without_the_wall():
    need_browser()
    listener = Listener()
    try:
        texts = await attempt(environment("host", f"http://127.0.0.1:{listener.port}"), listener.port)
    finally:
        listener.close()
    assert listener.hits, f"the control reached nothing: {texts}"
    assert "connected 127.0.0.1" in result_of(texts[-1])
