"""Named errors. Everything the framework raises derives from OpenEnvError.

Errors a *trainer* causes (stepping before reset, an unknown episode, a bad
environment file) are raised as these exceptions and translated once at the
edge (an HTTP status, a control-plane error message). Errors an *agent* causes
are never raised: they come back as MCP results with ``isError: true``.
"""

from __future__ import annotations

__all__ = [
    "BadRequest",
    "BoundaryError",
    "ConfigError",
    "EpisodeEnded",
    "EpisodeLost",
    "EpisodeLimit",
    "ForkDiverged",
    "ForkError",
    "ImageBuildError",
    "OpenEnvError",
    "RequestTooLarge",
    "ResetNeeded",
    "TaskFormatError",
    "ToolNameError",
    "ToolServerError",
    "UnknownEnvironment",
    "UnknownEpisode",
]


class OpenEnvError(Exception):
    """Root of every error openenv-mcp raises."""

    code = "openenv_error"
    """A stable machine-readable code, used on the control plane."""
    http_status = 400


class ResetNeeded(OpenEnvError):
    """``step()`` or ``state()`` before the first ``reset()``."""

    code = "reset_needed"
    http_status = 409


class EpisodeEnded(OpenEnvError):
    """``step()`` after the episode ended (done or truncated)."""

    code = "episode_ended"
    http_status = 409


class UnknownEpisode(OpenEnvError):
    """No live episode has this id (never created, closed, or reaped)."""

    code = "unknown_episode"
    http_status = 404


class EpisodeLimit(OpenEnvError):
    """The server already runs as many episodes as it was allowed."""

    code = "episode_limit"
    http_status = 503


class UnknownEnvironment(OpenEnvError):
    """``make()`` was given a name or path that is no environment."""

    code = "unknown_environment"
    http_status = 404


class ConfigError(OpenEnvError):
    """An environment definition (env file, spec, tasks) is invalid."""

    code = "config_error"


class ToolNameError(ConfigError):
    """Two tools share a name after namespacing, or a tool takes a reserved name."""

    code = "tool_name_error"


class TaskFormatError(ConfigError):
    """A task folder (Harbor's ``task.toml`` layout, or Terminal-Bench 1's ``task.yaml``) that cannot be
    read, or asks for something this build cannot run; the message names the folder and the field."""

    code = "task_format_error"


class ImageBuildError(OpenEnvError):
    """A task's container image could not be built (its Dockerfile or compose build failed, or timed
    out); the message carries the end of the build log."""

    code = "image_build_error"
    http_status = 502


class BoundaryError(OpenEnvError):
    """A tool server could not be started or reached behind its boundary."""

    code = "boundary_error"
    http_status = 502


class BadRequest(OpenEnvError):
    """A control-plane message that is not valid (bad JSON, unknown op, missing field)."""

    code = "bad_request"
    http_status = 400


class RequestTooLarge(OpenEnvError):
    """A request body or WebSocket message over the server's ``--max-request-bytes``."""

    code = "request_too_large"
    http_status = 413


class EpisodeLost(OpenEnvError):
    """The episode's server went away (its node or replica died, or stopped answering in time).

    The episode cannot be resumed: start a new one (a pool sends it to a healthy replica)."""

    code = "episode_lost"
    http_status = 502


class ToolServerError(OpenEnvError):
    """A wrapped tool server answered a request (``resources/read``, ``prompts/get``,
    ``completion/complete``) with a JSON-RPC error: its own code and message (bounded),
    passed through unchanged to the MCP face."""

    code = "tool_server_error"
    http_status = 502

    def __init__(self, rpc_code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.message = message
        self.data = data


class ForkError(OpenEnvError):
    """An episode cannot be forked: a tool server refuses (``fork = "refuse"``, a remote server),
    the episode ran code (``run_code``), it is closed, or copying its world failed. Nothing is
    half copied: no fork of the attempt stays live."""

    code = "fork_error"
    http_status = 409


class ForkDiverged(ForkError):
    """A replayed fork got another result than the original at some step (the world is not
    deterministic, or a server keeps state a replay does not rebuild)."""

    code = "fork_diverged"

    def __init__(self, message: str, step: int, recorded: object, replayed: object) -> None:
        super().__init__(message)
        self.step = step
        self.recorded = recorded
        self.replayed = replayed
