"""The package's face: a pinned public API, a cheap ``import openenv_mcp``, one version string."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import openenv_mcp

PUBLIC = [
    "AsyncEnv",
    "BoundaryError",
    "CallTool",
    "ConfigError",
    "Env",
    "EnvSpec",
    "Environment",
    "EpisodeEnded",
    "EpisodeLimit",
    "Limits",
    "ListTools",
    "Observation",
    "OpenEnvError",
    "ResetNeeded",
    "RunCode",
    "Score",
    "State",
    "Task",
    "ToolNameError",
    "ToolServerSpec",
    "UnknownEnvironment",
    "UnknownEpisode",
    "list_envs",
    "make",
    "make_async",
]
HEAVY = ("fastmcp", "uvicorn", "starlette", "docker", "mcp", "jsonschema", "rich", "httpx", "websockets")


def test_public_api_is_pinned_and_every_name_resolves():
    assert openenv_mcp.__all__ == PUBLIC
    for name in PUBLIC:
        assert getattr(openenv_mcp, name).__name__ == name
    assert set(PUBLIC) <= set(dir(openenv_mcp))


def test_an_unknown_attribute_is_an_attribute_error_naming_it():
    try:
        openenv_mcp.nope  # noqa: B018
    except AttributeError as e:
        assert str(e) == "module 'openenv_mcp' has no attribute 'nope'"
    else:
        raise AssertionError("no AttributeError")


def test_import_openenv_mcp_loads_no_server_client_or_docker_library():
    code = (
        "import sys, json, openenv_mcp; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_the_version_is_the_distributions_metadata():
    assert openenv_mcp.__version__ == importlib.metadata.version("openenv-mcp")
    from openenv_mcp.isolation.transport.mcpsession import CLIENT_INFO

    assert CLIENT_INFO.version == openenv_mcp.__version__


def test_layers_only_import_downward():
    """The import-linter contracts of pyproject.toml (cli > rollout|conformance > serve > client > core >
    isolation > spec/tasks/validation/workspace > types > errors) hold."""
    from pathlib import Path

    from support import ROOT

    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml")], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stdout + out.stderr
