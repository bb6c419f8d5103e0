"""Which wrapped commands `init` installs into the env folder, and what it installs (no registry reached)."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ConfigError
from openenv_mcp.scaffold.probe import examples_of
from openenv_mcp.scaffold.runtime import plan


@pytest.mark.parametrize(
    ("command", "manager", "spec", "name", "program", "args"),
    [
        (
            ["npx", "-y", "@modelcontextprotocol/server-memory"],
            "npm",
            "@modelcontextprotocol/server-memory",
            "@modelcontextprotocol/server-memory",
            "",
            [],
        ),
        (
            ["npx", "--yes", "@scope/srv@1.2.3", "--root", "/x"],
            "npm",
            "@scope/srv@1.2.3",
            "@scope/srv",
            "",
            ["--root", "/x"],
        ),
        (["/usr/bin/npx", "-p", "pkg@2", "pkg-cli", "a"], "npm", "pkg@2", "pkg", "pkg-cli", ["a"]),
        (
            ["uvx", "mcp-server-time@2026.10.19", "--local-timezone", "UTC"],
            "pypi",
            "mcp-server-time==2026.10.19",
            "mcp-server-time",
            "mcp-server-time",
            ["--local-timezone", "UTC"],
        ),
        (
            ["uvx", "--from", "mcp-server-fetch==1.0", "mcp-fetch"],
            "pypi",
            "mcp-server-fetch==1.0",
            "mcp-server-fetch",
            "mcp-fetch",
            [],
        ),
        (["pipx", "run", "mcp-server-time"], "pypi", "mcp-server-time", "mcp-server-time", "mcp-server-time", []),
        (
            ["uv", "tool", "run", "mcp-server-time==1"],
            "pypi",
            "mcp-server-time==1",
            "mcp-server-time",
            "mcp-server-time",
            [],
        ),
    ],
)
def test_package_runner_commands_become_a_local_install(command, manager, spec, name, program, args):
    job = plan(command)
    assert job is not None
    assert (job.manager, job.spec, job.name, job.program, job.args) == (manager, spec, name, program, args)


def test_a_python_module_this_interpreter_lacks_is_installed_from_pypi_by_its_name():
    job = plan(["python", "-m", "mcp_server_nowhere_here", "--local-timezone", "UTC"])
    assert job is not None
    assert (job.manager, job.spec, job.program) == ("pypi", "mcp-server-nowhere-here", "python")
    assert job.args == ["-m", "mcp_server_nowhere_here", "--local-timezone", "UTC"]
    assert plan(["python", "-m", "openenv_mcp.tool_servers.files"]) is None  # importable: run as written


def test_other_commands_are_kept_as_they_are():
    assert plan(["python", "server.py"]) is None
    assert plan(["node", "dist/index.js"]) is None
    assert plan(["pipx", "install", "x"]) is None


def test_a_package_runner_option_init_cannot_honour_is_refused_not_dropped():
    with pytest.raises(ConfigError, match=r"option '--registry' is not understood here"):
        plan(["npx", "--registry", "http://evil", "pkg"])
    with pytest.raises(ConfigError, match="npx needs a package"):
        plan(["npx", "-y"])


def test_examples_quoted_in_a_schemas_descriptions_are_found():
    schema = {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "description": "IANA name (e.g., 'America/New_York', 'Europe/London')."},
            "time": {"type": "string", "description": 'Time as "HH:MM", see `14:30`'},
        },
    }
    assert examples_of(schema) == ["America/New_York", "Europe/London", "HH:MM", "14:30"]
