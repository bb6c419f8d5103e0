"""`openenv-mcp init`: a package straight out of init installs, is listed, is CONFORMANT, reaches reward 1
with its reference solution, and its own generated tests pass. Plain (FastMCP skeleton), wrapping a stdio
server the test wrote (`--from-command`), and wrapping an HTTP server the test serves (`--from-url`)."""

from __future__ import annotations

import json
import re

import pytest

from openenv_mcp.testing import need

from support.envpkg import init_packages

pytestmark = pytest.mark.timeout(1800)

KINDS = ["plain-env", "cmd-env", "url-env"]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    import shutil

    need(shutil.which("bwrap") is not None, "cmd-env wraps its command in the sandbox: apt-get install bubblewrap")
    return init_packages(tmp_path_factory)


def test_init_writes_a_complete_package(packages):
    root = packages.plain
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert files >= {
        "pyproject.toml",
        "README.md",
        "Dockerfile",
        "tests/client/test_env.py",
        "plain_env/__init__.py",
        "plain_env/env.toml",
        "plain_env/server.py",
        "plain_env/tasks.jsonl",
        "plain_env/reward.py",
        "plain_env/solutions.py",
    }
    pyproject = (root / "pyproject.toml").read_text()
    assert '[project.entry-points."openenv_mcp.envs"]\nplain-env = "plain_env:ENV_DIR"' in pyproject
    assert "ARG BASE_IMAGE=" in (root / "Dockerfile").read_text()
    readme = (root / "README.md").read_text()
    assert "openenv-mcp serve plain-env" in readme and "openenv-mcp rollout plain-env" in readme


def test_init_from_a_command_reads_its_tools_and_stubs_a_task_per_tool(packages):
    env_toml = (packages.command / "cmd_env" / "env.toml").read_text()
    assert f'command = ["python", "{packages.server_script}"]\nisolation = "sandbox"' in env_toml
    (task,) = [json.loads(x) for x in (packages.command / "cmd_env" / "tasks.jsonl").read_text().splitlines()]
    assert task["data"]["tool"] == "add_note"
    solutions = (packages.command / "cmd_env" / "solutions.py").read_text()
    assert re.search(r"^# - add_note: Store a note under a title\. \(the worked task\)$", solutions, re.M)
    assert re.search(r"^# - count_words: Count the words of a text\.$", solutions, re.M)
    assert '"id": "count_words-00"' in solutions


def test_init_from_a_url_wraps_the_remote_server(packages):
    env_toml = (packages.url / "url_env" / "env.toml").read_text()
    assert f'url = "http://127.0.0.1:{packages.url_port}/mcp"' in env_toml


def test_the_installed_packages_are_listed(packages):
    out = packages.venv.cli("list", env=packages.venv.env() | {"COLUMNS": "200"}).stdout
    for name in KINDS:
        assert re.search(rf"^│ {name} ", out, re.M), out


@pytest.mark.parametrize("name", ["plain-env", "url-env"])  # cmd-env: its own generated test_conformant, below
def test_straight_out_of_init_the_env_is_conformant(packages, name):
    out = packages.venv.cli("conformance", name, "--no-official", env=packages.venv.env() | {"COLUMNS": "200"}).stdout
    assert re.search(rf"^CONFORMANT: {name}: \d+ passed, 0 errors", out, re.M), out


@pytest.mark.parametrize("name", KINDS)
def test_straight_out_of_init_the_reference_solution_reaches_reward_1(packages, name):
    out = packages.venv.cli("run", name, "--episodes", "2", env=packages.venv.env() | {"COLUMNS": "200"}).stdout
    assert "2 episodes: reward mean 1.000 (std 0.000), success rate 100%" in out, out
    wrong = packages.venv.cli(
        "run", name, "--episodes", "1", "--policy", "wrong", env=packages.venv.env() | {"COLUMNS": "200"}
    ).stdout
    assert "1 episodes: reward mean 0.000 (std 0.000), success rate 0%" in wrong, wrong


@pytest.mark.parametrize("name", KINDS)
def test_the_generated_tests_pass(packages, name):
    """Their ``test_conformant`` runs every rule and the official suite on the env: for the sandboxed cmd-env (the
    slowest to check) that is its conformance test here."""
    out = packages.venv.run(
        packages.venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=packages.venv.scratch / name
    ).stdout
    assert re.search(r"^5 passed", out, re.M), out


def test_init_refuses_an_existing_folder_and_a_bad_name(packages):
    venv = packages.venv
    again = venv.cli("init", "plain-env", check=False)
    assert again.returncode == 2
    assert "'plain-env' already exists: choose another name or remove it" in " ".join(again.stderr.split())
    bad = venv.cli("init", "My Env", check=False)
    assert "environment name 'My Env' is not valid" in " ".join(bad.stderr.split())


def test_init_from_a_command_that_is_no_mcp_server_says_so(packages):
    venv = packages.venv
    proc = venv.cli(
        "init", "broken-env", "--from-command", "python", "-c", "import sys; print('hi'); sys.exit(3)", check=False
    )
    assert proc.returncode == 2
    assert "cannot read the tools of the MCP server 'python -c" in " ".join(proc.stderr.split())
    assert not (venv.scratch / "broken-env").exists()


def test_a_registered_name_is_found_next_to_a_folder_of_that_name(tmp_path, monkeypatch):
    """`openenv-mcp init NAME` leaves ./NAME (no env.toml at its top) where the user then types
    `openenv-mcp run NAME`: the name must still find the registered environment, not fail on the folder."""
    from openenv_mcp.client.registry import find_env
    from openenv_mcp.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "echo" / "echo").mkdir(parents=True)  # like ./my-env/my_env/
    assert find_env("echo").name == "echo"
    (tmp_path / "not-registered").mkdir()
    with pytest.raises(ConfigError, match=re.escape("no environment file at 'not-registered/env.toml'")):
        find_env("not-registered")
