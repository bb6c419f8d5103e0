"""openenv-mcp: MCP tool servers as environments, for agents in production and in training.

The names below load on first use (the httpx pattern), so ``import openenv_mcp``
stays cheap and a tool server under ``openenv_mcp.tool_servers`` starts without
importing the framework, FastMCP, Starlette, uvicorn or the Docker SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openenv_mcp.client.env import AsyncEnv, Env
    from openenv_mcp.client.registry import list_envs, make, make_async
    from openenv_mcp.core.environment import Environment
    from openenv_mcp.definitions.spec import EnvSpec, Limits, ToolServerSpec
    from openenv_mcp.errors import (
        BoundaryError,
        ConfigError,
        EpisodeEnded,
        EpisodeLimit,
        OpenEnvError,
        ResetNeeded,
        ToolNameError,
        UnknownEnvironment,
        UnknownEpisode,
    )
    from openenv_mcp.types import CallTool, ListTools, Observation, RunCode, Score, State, Task

_LAZY = {
    "AsyncEnv": "client.env",
    "Env": "client.env",
    "list_envs": "client.registry",
    "make": "client.registry",
    "make_async": "client.registry",
    "Environment": "core.environment",
    "EnvSpec": "definitions.spec",
    "Limits": "definitions.spec",
    "ToolServerSpec": "definitions.spec",
    "BoundaryError": "errors",
    "ConfigError": "errors",
    "EpisodeEnded": "errors",
    "EpisodeLimit": "errors",
    "OpenEnvError": "errors",
    "ResetNeeded": "errors",
    "ToolNameError": "errors",
    "UnknownEnvironment": "errors",
    "UnknownEpisode": "errors",
    "CallTool": "types",
    "ListTools": "types",
    "Observation": "types",
    "RunCode": "types",
    "Score": "types",
    "State": "types",
    "Task": "types",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    if name == "__version__":  # one version string: the distribution's metadata (pyproject.toml)
        from importlib.metadata import version

        globals()[name] = version("openenv-mcp")
        return globals()[name]
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openenv_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
