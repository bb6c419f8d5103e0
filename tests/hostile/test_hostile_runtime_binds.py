"""A tool server whose runtime lives in a home folder (a virtualenv or a Node package with a
``package.json`` in ``/home/NAME``): the agent, through the server's tools, tries to read the
home's keys and to change the bound runtime. The runtime is bound
read-only, nothing else of the home is visible, and the server runs as the episode's uid."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import EnvSpec, ToolServerSpec
from openenv_mcp.isolation.host.uids import UID_BASE
from openenv_mcp.testing import need

from support.containment import call

NODE_SERVER = r"""
const fs = require('fs');
const greet = require('greet');
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
const tools = ['whoami', 'read_file', 'write_file'].map((name) => ({
  name, inputSchema: { type: 'object', properties: { path: { type: 'string' }, text: { type: 'string' } } } }));
function run(name, args) {
  if (name === 'whoami') return JSON.stringify({ uid: process.getuid(), greeting: greet() });
  if (name === 'read_file') return fs.readFileSync(args.path, 'utf8');
  fs.writeFileSync(args.path, args.text); return 'written';
}
rl.on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  let result = {};
  if (msg.method === 'initialize') {
    result = { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} },
               serverInfo: { name: 'node-fixture', version: '1' } };
  } else if (msg.method === 'tools/list') {
    result = { tools };
  } else if (msg.method === 'tools/call') {
    try { result = { content: [{ type: 'text', text: run(msg.params.name, msg.params.arguments || {}) }], isError: false }; }
    catch (e) { result = { content: [{ type: 'text', text: e.code + ': ' + e.message }], isError: true }; }
  }
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }) + '\n');
});
"""


@pytest.fixture
def home():
    """A private home folder (``/home/NAME``, 0700) with a key and a home-level npm install."""
    need(os.geteuid() == 0 and os.path.isdir("/home"), "needs root and /home")
    folder = Path("/home") / f"openenv-mcp-test-{uuid.uuid4().hex[:12]}"
    folder.mkdir(mode=0o700)
    try:
        (folder / ".ssh").mkdir()
        (folder / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the home's owner")
        (folder / "package.json").write_text('{"name": "home", "private": true}')
        (folder / "node_modules" / "greet").mkdir(parents=True)
        (folder / "node_modules" / "greet" / "index.js").write_text("module.exports = () => 'hi';\n")
        (folder / "tools").mkdir()
        (folder / "tools" / "server.js").write_text(NODE_SERVER)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("isolation", ["process", "sandbox"])
def test_a_node_server_in_a_home_cannot_read_the_homes_keys_nor_change_its_modules(home, isolation, tmp_path):
    need(shutil.which("bwrap") is not None, "needs bubblewrap")
    node = shutil.which("node")
    need(node is not None and os.path.realpath(node).startswith("/usr/"), "needs a system node")
    server = ToolServerSpec(
        name="h", namespace="", command=["node", str(home / "tools" / "server.js")], isolation=isolation
    )
    env_dir = tmp_path / "env"
    env_dir.mkdir()
    with openenv_mcp.make(EnvSpec(name="home", max_steps=None, tool_servers=[server], base_dir=env_dir)) as env:
        env.reset(seed=0)
        me = json.loads(call(env, "whoami")[0])
        assert me == {"uid": me["uid"], "greeting": "hi"} and me["uid"] >= UID_BASE
        text, error = call(env, "read_file", path=str(home / ".ssh" / "id_ed25519"))
        assert error and text.startswith(("ENOENT", "EACCES")), text
        text, error = call(env, "read_file", path=str(home / "package.json"))
        assert error and text.startswith(("ENOENT", "EACCES")), text
        module = home / "node_modules" / "greet" / "index.js"
        text, error = call(env, "write_file", path=str(module), text="module.exports = () => 'pwned';")
        assert error and text.startswith(("EROFS", "EACCES", "ENOENT")), text
        assert call(env, "whoami")[1] is False  # still answering
    assert module.read_text() == "module.exports = () => 'hi';\n"
    assert (home / ".ssh" / "id_ed25519").read_text() == "PRIVATE KEY of the home's owner"
