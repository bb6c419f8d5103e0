"""Env files without Python: the worked example of docs/env-file.md (a third-party Node MCP
server wrapped into an environment: tasks, a shell reward run in the sandbox, JSON solutions)."""

from __future__ import annotations

import shutil

import pytest

import openenv_mcp
from openenv_mcp.cli import main
from openenv_mcp.definitions.spec import load_env_file
from openenv_mcp.testing import need

from support import ROOT

EXAMPLE = ROOT / "examples" / "wrapped-fs"
SERVER = EXAMPLE / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"


@pytest.fixture
def example():
    need(shutil.which("node") is not None, "node is not installed: install Node.js (e.g. apt-get install nodejs)")
    need(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    need(SERVER.is_file(), "the example's server is not installed: run `npm ci` in examples/wrapped-fs")
    return EXAMPLE / "env.toml"


def test_every_key_of_the_example_loads():
    spec = load_env_file(EXAMPLE / "env.toml")
    assert spec.reward == {"command": ["sh", "{env_dir}/check.sh"], "timeout": 10}
    (server,) = spec.tool_servers
    assert (server.isolation, server.workspace, server.limits.memory_mb) == ("sandbox", "seed", 1024)


@pytest.mark.parametrize(("policy", "reward"), [("reference", 1.0), ("wrong", 0.0)])
def test_wrapped_third_party_server_runs_scripted_episodes(example, policy, reward):
    import anyio

    from openenv_mcp.cli.app import run_reference

    rows = anyio.run(lambda: run_reference(str(example), 3, 0, policy, progress=False))
    assert sorted(r["task"] for r in rows) == ["cleanup", "greet", "rename"]  # seeds 0..n-1: every task once
    assert [r["reward"] for r in rows] == [reward] * 3
    assert [r["done"] for r in rows] == [reward == 1.0] * 3


def test_the_agent_sees_the_workspace_and_nothing_else(example):
    with openenv_mcp.make(str(example)) as env:
        env.reset(task_id="cleanup")
        listing = env.step({"type": "call_tool", "name": "fs_list_directory", "arguments": {"path": "/workspace"}})
        assert listing.result.content[0].text == "[FILE] draft.txt\n[FILE] junk.tmp\n[FILE] keep.txt"
        outside = env.step({"type": "call_tool", "name": "fs_read_text_file", "arguments": {"path": "/etc/passwd"}})
        assert outside.result.is_error
        for action in env.unwrapped.environment.trajectory(env.unwrapped.episode.task):
            obs = env.step(action)
        assert (obs.reward, obs.done) == (1.0, True)


def test_cli_run_on_an_env_file(example, capsys):
    assert main(["run", str(example), "--episodes", "1", "--seed", "3"]) == 0
    assert "success rate 100%" in capsys.readouterr().out


def test_a_package_in_an_env_folder_keeps_its_relative_imports(tmp_path):
    """An env folder's module was loaded under a private name without its package, so ``from .util import``
    in ``tools/server.py`` failed with "No module named 'openenv_mcp_envs'" (the echo tool server did, once
    it imported its sibling ``lean``)."""
    from openenv_mcp.definitions.spec import load_object

    for folder, word in (("one", "first"), ("two", "second")):
        package = tmp_path / folder / "tools"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "util.py").write_text(f"WORD = {word!r}\n")
        (package / "server.py").write_text("from .util import WORD\n\ndef word():\n    return WORD\n")
    one = load_object("tools.server:word", tmp_path / "one")
    two = load_object("tools.server:word", tmp_path / "two")
    assert (one(), two()) == ("first", "second")  # two folders never share a module
    assert load_object("tools.server:word", tmp_path / "one") is one


def test_a_missing_module_of_an_env_folder_is_a_config_error_naming_it(tmp_path):
    from openenv_mcp.definitions.spec import load_object
    from openenv_mcp.errors import ConfigError

    (tmp_path / "reward.py").write_text("import not_a_module_anywhere\n")
    with pytest.raises(ConfigError, match=r"cannot import 'reward' from .*: No module named 'not_a_module_anywhere'"):
        load_object("reward:score", tmp_path)
