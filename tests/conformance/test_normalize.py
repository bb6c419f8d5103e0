"""Normalizing what the framework varies per episode (openenv_mcp.conformance.normalize)."""

from __future__ import annotations

import json

import pytest

from openenv_mcp.conformance import check_env_async
from openenv_mcp.conformance.normalize import Normalizer

from support import ROOT

ENVS = ROOT / "conformance" / "fixtures" / "envs"

WORKSPACE = "/tmp/openenv-mcp-3f6b3afc.21215.3152789-9azj4aih"


def test_a_workspace_path_after_an_escaped_newline_in_a_json_result_is_normalized():
    # server-filesystem's list_allowed_directories: "Allowed directories:\n<workspace>", seen by the rules as
    # JSON text, where the newline is the two characters backslash and 'n' (the 'n' is no word boundary)
    result = json.dumps({"content": f"Allowed directories:\n{WORKSPACE}"})
    norm = Normalizer({"the workspace path": WORKSPACE})
    assert norm(result) == '{"content": "Allowed directories:\\n<the workspace path>"}'
    assert norm.used == {"the workspace path"}


def test_an_escaped_tab_before_a_uid_in_a_json_result_is_normalized():
    norm = Normalizer({"the episode's uid": "1647051468"})
    assert norm(json.dumps("uid:\t1647051468")) == '"uid:\\t<the episode\'s uid>"'


def test_a_value_inside_a_longer_word_is_left_alone():
    norm = Normalizer({"the episode's uid": "1647051468"}, {"the workspace path": WORKSPACE})
    assert norm("id 916470514689 and x1647051468") == "id 916470514689 and x1647051468"
    assert norm(f"{WORKSPACE}x and {WORKSPACE}/f") == f"{WORKSPACE}x and <the workspace path>/f"
    assert norm.used == {"the workspace path"}


@pytest.mark.anyio
async def test_wire_parity_normalizes_the_served_episodes_workspace_path_and_home_under_process():
    # the served environment runs in this process: its episodes' per-episode values are known, so a server
    # printing its workspace path and HOME is not a difference between the control plane and the MCP face
    report = await check_env_async(ENVS / "raw_files", only="wire.parity", official=False)
    result = report.result("wire.parity")
    assert result.status == "passed", result.message
