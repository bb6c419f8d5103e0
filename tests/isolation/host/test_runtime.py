"""Env files that work as documented, and a runtime in a private folder never makes a server run as root.

Placeholders expand everywhere (program path, arguments, ``env`` values, reward command) and a
command's runtime (its virtualenv, a script's Node package with its ``node_modules``) is reachable
behind ``process`` and ``sandbox``, also from a private folder (the server still runs as the
episode's unprivileged uid there, and sees nothing else of that folder).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.isolation.host.exposure import private_ancestor
from openenv_mcp.isolation.host.uids import UID_BASE
from openenv_mcp.testing import need

from support.containment import FIXTURE, IS_ROOT, call

BOUNDARIES = ["process", "sandbox"]


def need_engine(isolation: str) -> None:
    if isolation == "sandbox":
        need(shutil.which("bwrap") is not None, "bubblewrap not found (apt-get install bubblewrap)")


def make_env(base_dir: Path, isolation: str, command: list[str], **server) -> openenv_mcp.Env:
    spec = ToolServerSpec(name="h", namespace="", command=command, isolation=isolation, **server)
    return openenv_mcp.make(EnvSpec(name="runtime", max_steps=None, tool_servers=[spec], base_dir=base_dir))


def whoami(env: openenv_mcp.Env) -> dict:
    text, error = call(env, "whoami")
    assert not error, text
    return json.loads(text)


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A folder only root may enter (like ``/root``), holding the test's runtime."""
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    (folder / "secret.txt").write_text("root's secret")
    return folder


@pytest.fixture
def env_dir(tmp_path: Path) -> Path:
    """The environment's folder (beside the private one, not holding it)."""
    folder = tmp_path / "env"
    folder.mkdir(mode=0o755)
    return folder


def python_venv(where: Path, base: str) -> Path:
    """A virtualenv (made by ``base``) whose console script ``hostile`` runs the hostile server from
    the venv's own site-packages, importing a module only the venv has."""
    venv = where / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "only_in_the_venv.py").write_text("VALUE = 'from the venv'\n")
    shutil.copy(FIXTURE, site / "hostile_server_copy.py")
    script = venv / "bin" / "hostile"
    script.write_text(
        f"#!{venv}/bin/python\nimport runpy, only_in_the_venv\n"
        "runpy.run_module('hostile_server_copy', run_name='__main__')\n"
    )
    script.chmod(0o755)
    return venv


# -- placeholders ---------------------------------------------------------------------------------
@pytest.mark.parametrize("isolation", BOUNDARIES)
def test_env_dir_in_the_program_path_starts_the_documented_bin_server_recipe(tmp_path, isolation):
    need_engine(isolation)
    env_dir = tmp_path / "env"
    (env_dir / "bin").mkdir(parents=True)
    env_dir.chmod(0o755)
    tmp_path.chmod(0o755)
    shutil.copy(FIXTURE, env_dir / "bin" / "hostile.py")
    server = env_dir / "bin" / "server"
    server.write_text('#!/bin/sh\nexec /usr/bin/python3 "$(dirname "$0")/hostile.py" "$@"\n')
    server.chmod(0o755)
    with make_env(env_dir, isolation, ["{env_dir}/bin/server", "--root", "{workspace}"]) as env:
        env.reset(seed=0)
        me = whoami(env)
        if IS_ROOT:
            assert me["uid"] >= UID_BASE


@pytest.mark.parametrize("isolation", BOUNDARIES)
def test_workspace_and_env_dir_expand_in_env_values(tmp_path, isolation):
    need_engine(isolation)
    tmp_path.chmod(0o755)
    env_vars = {"DATA": "{workspace}/data", "HERE": "{env_dir}", "PLAIN": "no {placeholder} here"}
    with make_env(tmp_path, isolation, ["/usr/bin/python3", str(FIXTURE)], env=env_vars) as env:
        env.reset(seed=0)
        cwd = whoami(env)["cwd"]
        seen = json.loads(call(env, "environ")[0])
        assert (seen["DATA"], seen["HERE"], seen["PLAIN"]) == (f"{cwd}/data", str(tmp_path), "no {placeholder} here")


# -- runtimes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("isolation", BOUNDARIES)
@pytest.mark.parametrize("base", ["system", "private"])
def test_a_server_in_its_own_virtualenv_under_a_private_folder_runs_as_the_episode_uid(
    private, env_dir, isolation, base
):
    need_engine(isolation)
    need(
        IS_ROOT or isolation != "process",
        "the process boundary hides a private folder only by running the server as an episode uid: run as root",
    )
    interpreter = "/usr/bin/python3" if base == "system" else os.path.realpath(sys._base_executable)
    if base == "private" and private_ancestor(interpreter) is None:
        pytest.skip("not applicable: this machine's base Python is not under a private (0700) folder")
    if not os.path.exists(interpreter):
        need(False, f"{interpreter} not found (apt-get install python3)")
    venv = python_venv(private, interpreter)
    with make_env(env_dir, isolation, [str(venv / "bin" / "hostile")]) as env:
        env.reset(seed=0)
        me = whoami(env)
        if IS_ROOT:
            assert me["uid"] >= UID_BASE  # never silently root
        # the venv is bound, the rest of the private folder is not
        text, error = call(env, "read_file", path=str(private / "secret.txt"))
        assert error and ("No such file" in text or "Permission denied" in text), text
        text, error = call(env, "read_file", path=str(venv / "pyvenv.cfg"))
        assert not error and "home" in text


NODE_SERVER = r"""
const greet = require('greet');
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  let result;
  if (msg.method === 'initialize') {
    result = { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} },
               serverInfo: { name: 'node-fixture', version: '1' } };
  } else if (msg.method === 'tools/list') {
    result = { tools: [{ name: 'whoami', inputSchema: { type: 'object', properties: {} } }] };
  } else if (msg.method === 'tools/call') {
    const text = JSON.stringify({ uid: process.getuid(), pid: process.pid, cwd: process.cwd(), greeting: greet() });
    result = { content: [{ type: 'text', text }], isError: false };
  } else {
    result = {};
  }
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }) + '\n');
});
"""


@pytest.mark.parametrize("isolation", BOUNDARIES)
def test_a_node_server_finds_the_node_modules_beside_it(private, env_dir, isolation):
    need_engine(isolation)
    node = shutil.which("node")
    if node is None or private_ancestor(os.path.realpath(node)) is not None:
        need(False, "node not found in a world-readable place (apt-get install nodejs)")
    package = private / "srv"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text('{"name": "srv", "private": true}')
    (package / "node_modules" / "greet").mkdir(parents=True)
    (package / "node_modules" / "greet" / "index.js").write_text("module.exports = () => 'hello from node_modules';\n")
    (package / "dist" / "index.js").write_text(NODE_SERVER)
    with make_env(env_dir, isolation, ["node", str(package / "dist" / "index.js")]) as env:
        env.reset(seed=0)
        me = whoami(env)
        assert me["greeting"] == "hello from node_modules"
        if IS_ROOT:
            assert me["uid"] >= UID_BASE


def test_a_node_server_named_through_a_linked_runtime_folder_and_dotdot_starts_in_the_sandbox(tmp_path):
    # the corpus recipe: "{env_dir}/../runtime/node/bin/node" where runtime links to an install cache and
    # node/bin/node links to a Node elsewhere; the sandbox must bind those paths as the command names them
    need_engine("sandbox")
    node = shutil.which("node")
    if node is None or private_ancestor(os.path.realpath(node)) is not None:
        need(False, "node not found in a world-readable place (apt-get install nodejs)")
    cache = tmp_path / "cache"
    (cache / "node" / "bin").mkdir(parents=True)
    (cache / "node" / "bin" / "node").symlink_to(os.path.realpath(node))
    modules = cache / "npm" / "node_modules"
    (modules / "srv" / "dist").mkdir(parents=True)
    (modules / "srv" / "package.json").write_text('{"name": "srv", "private": true}')
    (modules / "srv" / "dist" / "index.js").write_text(NODE_SERVER)
    (modules / "greet").mkdir()
    (modules / "greet" / "index.js").write_text("module.exports = () => 'hello from node_modules';\n")
    env_dir = tmp_path / "corpus" / "srv" / "sandbox"
    env_dir.mkdir(parents=True)
    (tmp_path / "corpus" / "srv" / "runtime").symlink_to(cache)
    command = ["{env_dir}/../runtime/node/bin/node", "{env_dir}/../runtime/npm/node_modules/srv/dist/index.js"]
    with make_env(env_dir, "sandbox", command) as env:
        env.reset(seed=0)
        assert whoami(env)["greeting"] == "hello from node_modules"


def test_a_runtime_the_sandbox_cannot_see_fails_with_how_to_bind_it_and_ro_bind_fixes_it(tmp_path, env_dir):
    need_engine("sandbox")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helper_module.py").write_text("VALUE = 1\n")
    server = env_dir / "server.py"
    shutil.copy(FIXTURE, env_dir / "hostile.py")
    server.write_text(f"import helper_module\nexec(open({str(env_dir / 'hostile.py')!r}).read())\n")
    command = ["/usr/bin/python3", str(server)]
    env_vars = {"PYTHONPATH": str(lib)}
    with make_env(env_dir, "sandbox", command, env=env_vars) as env:
        with pytest.raises(openenv_mcp.BoundaryError) as failure:
            env.reset(seed=0)
        message = str(failure.value)
        assert "ModuleNotFoundError: No module named 'helper_module'" in message
        assert message.endswith(
            " (hint: the sandbox shows only the system folders (/usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32, "
            "/etc), the workspace and what the command needs: its program, the files it names and their runtime "
            "(virtualenv, script interpreter, Node package with its node_modules), read-only; if the server needs "
            'another folder, bind it read-only with ro_bind = ["/path/to/folder"] (or read-write with bind) in its '
            "[[tool_servers]] table of the env file)"
        )
    with make_env(env_dir, "sandbox", command, env=env_vars, ro_bind=[str(lib)]) as env:
        env.reset(seed=0)
        assert whoami(env)["cwd"] == "/workspace"


@pytest.mark.parametrize("isolation", BOUNDARIES)
def test_a_reward_commands_task_data_is_passed_as_given_never_expanded(tmp_path, isolation):
    """Placeholders expand in what the env file says, not in data: a task whose text holds
    ``{workspace}`` reaches a command reward unchanged."""
    need_engine(isolation)
    tmp_path.chmod(0o755)
    server = ToolServerSpec(name="h", namespace="", command=["/usr/bin/python3", str(FIXTURE)], isolation=isolation)
    check = tmp_path / "check.sh"
    # 0.5 while the data arrives as written (the reward is the score's change: the step earns it)
    check.write_text(
        'case "$OPENENV_TASK_JSON" in *"write to {workspace}/x"*) [ "$OPENENV_STEP" = 0 ] && echo 0 || echo 0.5;; '
        "*) echo 0;; esac\n"
    )
    spec = EnvSpec(
        name="reward-data",
        max_steps=None,
        tool_servers=[server],
        tasks=[{"id": "t", "prompt": "write to {workspace}/x"}],
        reward={"command": ["/bin/sh", "{env_dir}/check.sh"]},
        base_dir=tmp_path,
    )
    with openenv_mcp.make(spec) as env:
        env.reset(seed=0)
        observation = env.step(CallTool(name="counter", arguments={}))
        assert (observation.result.is_error, observation.reward) == (False, 0.5)
