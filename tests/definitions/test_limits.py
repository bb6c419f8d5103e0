"""The memory-backed folder and file-size limits of an env file (``tmpfs_mb``, ``file_mb``): defaults,
and values that are refused with a ConfigError naming the key."""

from __future__ import annotations

import pytest

from openenv_mcp.definitions.spec import load_env_file
from openenv_mcp.errors import ConfigError
from openenv_mcp.isolation.codeact.interpreter import code_limits

SERVER = """
[env]
name = "limits"

[[tool_servers]]
name = "shell"
command = ["python", "-m", "openenv_mcp.tool_servers.shell", "--root", "{workspace}"]
isolation = "sandbox"
"""


def env_file(tmp_path, limits: str = "", code: str = ""):
    text = SERVER.replace("[env]\n", f"[env]\n{code}\n") + (f"limits = {{ {limits} }}\n" if limits else "")
    (tmp_path / "env.toml").write_text(text)
    return load_env_file(tmp_path)


def test_tmpfs_mb_and_file_mb_default_to_256_and_codeact_files_to_64(tmp_path):
    limits = env_file(tmp_path).tool_servers[0].limits
    assert (limits.tmpfs_mb, limits.file_mb) == (256, 256)
    assert (code_limits(None).tmpfs_mb, code_limits(None).file_mb) == (256, 64)


def test_an_env_files_code_limits_keep_the_codeact_defaults_of_the_keys_it_does_not_set(tmp_path):
    spec = env_file(tmp_path, code="code_limits = { tmpfs_mb = 32 }")
    limits = code_limits(spec.code_limits)
    assert (limits.tmpfs_mb, limits.file_mb, limits.call_timeout) == (32, 64, 60.0)


def test_tmpfs_mb_and_file_mb_set_in_an_env_file_reach_the_server(tmp_path):
    limits = env_file(tmp_path, "tmpfs_mb = 1024, file_mb = 8").tool_servers[0].limits
    assert (limits.tmpfs_mb, limits.file_mb) == (1024, 8)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "0",
            r"tmpfs_mb: Value error, must be a whole number of MiB from 1 to 1048576, got 0 \(there is no 'no cap'\)",
        ),
        ("-5", r"tmpfs_mb: Value error, must be a whole number of MiB from 1 to 1048576, got -5"),
        ("2000000", r"tmpfs_mb: Value error, must be a whole number of MiB from 1 to 1048576, got 2000000"),
        ('"256"', r"tmpfs_mb: Input should be a valid integer"),
        ("25.5", r"tmpfs_mb: Input should be a valid integer"),
        ("true", r"tmpfs_mb: Input should be a valid integer"),
    ],
)
def test_a_bad_tmpfs_mb_is_a_config_error_naming_the_key(tmp_path, value, message):
    with pytest.raises(ConfigError, match=r"env\.toml: tool_servers\.0\.limits\." + message):
        env_file(tmp_path, f"tmpfs_mb = {value}")


@pytest.mark.parametrize("value", ["0", "-1", '"64"'])
def test_a_bad_file_mb_is_a_config_error_naming_the_key(tmp_path, value):
    with pytest.raises(ConfigError, match=r"tool_servers\.0\.limits\.file_mb: "):
        env_file(tmp_path, f"file_mb = {value}")
