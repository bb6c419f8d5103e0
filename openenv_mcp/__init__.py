"""openenv-mcp: MCP tool servers as environments, for agents in production and in training."""

from .env import AsyncEnv, Env
from .environment import Environment
from .errors import (
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
from .registry import list_envs, make, make_async
from .spec import EnvSpec, Limits, ToolServerSpec
from .types import CallTool, ListTools, Observation, Score, State, Task

__version__ = "0.1.0"

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
