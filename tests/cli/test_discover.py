"""`openenv-mcp discover`: the installed environments with their description, tools, tasks, boundary and
cached conformance verdict; `--json` for tools; a verdict for files that changed since is stale."""

from __future__ import annotations

import json
import shutil

import pytest

from openenv_mcp.testing import need

from support.envpkg import init_packages

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    need(shutil.which("bwrap") is not None, "cmd-env wraps its command in the sandbox: apt-get install bubblewrap")
    return init_packages(tmp_path_factory)


def discover(packages, *argv):
    return {e["name"]: e for e in json.loads(packages.venv.cli("discover", "--json", *argv).stdout)}


def test_discover_lists_installed_packages_with_tools_tasks_boundary(packages):
    found = discover(packages)
    assert {"echo", "plain-env", "cmd-env", "url-env"} <= set(found)
    plain = found["plain-env"]
    assert plain["description"] == "The plain-env environment: reverse a text with the reverse tool."
    assert [t["name"] for t in plain["tools"]] == ["reverse"]
    assert (plain["tasks"], plain["boundaries"], plain["error"]) == (1, ["inprocess"], None)
    assert sorted(t["name"] for t in found["cmd-env"]["tools"]) == ["add_note", "count_words"]
    assert found["cmd-env"]["boundaries"] == ["sandbox"]
    assert found["url-env"]["boundaries"] == ["remote"]


def test_discover_filters_by_query_words_over_names_descriptions_and_tools(packages):
    assert set(discover(packages, "count words")) == {"cmd-env", "url-env"}
    assert set(discover(packages, "reverse")) == {"plain-env"}
    assert discover(packages, "no-such-thing-anywhere") == {}


def test_discover_shows_the_cached_conformance_verdict(packages):
    venv = packages.venv
    venv.cli("conformance", "plain-env", "--no-official")
    assert discover(packages, "plain-env")["plain-env"]["conformance"]["status"] == "conformant"
    table = venv.cli("discover", "reverse", env=venv.env() | {"COLUMNS": "200"}).stdout
    assert "│ plain-env │" in table and "│ conformant  │" in table, table


def test_a_partial_conformance_run_caches_no_verdict(tmp_path, monkeypatch):
    """--only/--skip runs prove only part of the promise: they must not mark an environment conformant."""
    from openenv_mcp.cli.app import main
    from openenv_mcp.client.catalog import cached_status
    from openenv_mcp.client.registry import find_env

    monkeypatch.setenv("OPENENV_MCP_CACHE", str(tmp_path))
    assert main(["conformance", "echo", "--only", "tools", "--no-official"]) == 0
    assert cached_status(find_env("echo")) == {"status": "unknown"}


def test_a_verdict_for_files_that_changed_since_is_stale(tmp_path, monkeypatch):
    from openenv_mcp.client.catalog import cached_status, save_report
    from openenv_mcp.client.registry import find_env
    from openenv_mcp.conformance import check_env

    monkeypatch.setenv("OPENENV_MCP_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "echo-copy"
    shutil.copytree(find_env("echo").base_dir, folder, ignore=shutil.ignore_patterns("__pycache__"))
    spec = find_env(folder)
    save_report(spec, check_env(spec, only="tools", official=False))
    assert cached_status(find_env(folder))["status"] == "conformant"
    with (folder / "tasks.jsonl").open("a") as f:  # a new task: the old verdict proves nothing about it
        f.write('{"id": "echo-new", "prompt": "say: new", "data": {"phrase": "new"}}\n')
    assert cached_status(find_env(folder))["status"] == "stale"


def test_the_playground_landing_page_lists_the_same_environments(packages):
    import httpx

    from openenv_mcp.testing import free_port, wait_for_port

    venv = packages.venv
    port = free_port()
    server = venv.start(venv.bin / "openenv-mcp", "serve", "plain-env", "--port", str(port))
    try:
        wait_for_port(port, server)
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(base + "/environments", follow_redirects=True)
        assert page.status_code == 200 and "<h1>Environments</h1>" in page.text
        assert str(page.url) == base + "/static/playground/environments.html"
        entries = {e["name"]: e for e in httpx.get(base + "/environments.json", timeout=60).json()}
        assert set(discover(packages, "--no-tools")) == set(entries)
        assert entries["plain-env"]["served"] and entries["plain-env"]["play"] == "/"
        assert entries["cmd-env"]["play"] == "openenv-mcp serve cmd-env" and not entries["cmd-env"]["served"]
        assert (entries["cmd-env"]["tasks"], entries["cmd-env"]["boundaries"]) == (1, ["sandbox"])
    finally:
        server.terminate()
        server.wait(timeout=10)
