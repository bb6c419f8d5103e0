"""Named errors: every error class of openenv-mcp, in one tree rooted at :class:`OpenEnvError`.

Errors a *trainer* causes (stepping before reset, an unknown episode, a bad environment file) are raised
as these exceptions deep in the code and translated once at the edge: ``serve/`` gives each an HTTP status
(:mod:`openenv_mcp.serve.statuses`) and puts its :attr:`~OpenEnvError.code` on the wire; the remote client
rebuilds the same class from that code (:func:`from_wire`). Errors an *agent* causes are never raised: they
come back as MCP results with ``isError: true``.

Catch a base to handle a kind of failure, as with httpx::

    OpenEnvError                 anything openenv-mcp raises
    ├── UsageError               the caller used the API wrong: fix the call
    │   ├── ResetNeeded          step()/state() before the first reset()
    │   ├── EpisodeEnded         step() after done or truncated
    │   ├── UnknownEpisode       no live episode has this id
    │   ├── UnknownEnvironment   make() was given no environment
    │   └── ForkError            this episode cannot be forked (a server refuses, it ran code, it is closed)
    │       └── ForkDiverged     a replayed fork got another result than the original
    ├── ConfigError              an environment definition is invalid: fix the file
    │   ├── ToolNameError        two tools share a name, or a tool takes a reserved one
    │   ├── TaskFormatError      a Harbor / Terminal-Bench task folder that cannot be read or run
    │   ├── ToolSchemaError      tools whose inputSchema TRL cannot be given exactly
    │   ├── TaskNeeded           a task is a stub its reference cannot solve yet (init found no working call)
    │   └── NotConformant        the environment fails conformance (publish, assert_conformant)
    │       └── ConformanceError assert_conformant's AssertionError, with the report
    ├── RequestError             a malformed request on the wire: fix the client
    │   ├── BadRequest           bad JSON, unknown op, missing field
    │   └── RequestTooLarge      a body or message over --max-request-bytes
    ├── ServiceError             a service the call needs failed or is busy: retrying may succeed
    │   ├── EpisodeLimit         the server runs as many episodes as it may
    │   ├── SessionLimit         an MCP address has as many sessions open as it may
    │   ├── BoundaryError        a tool server could not be started or reached
    │   ├── EpisodeLost          the episode's server went away (start a new episode)
    │   ├── ToolServerError      a wrapped tool server answered with a JSON-RPC error
    │   ├── ImageBuildError      a task's container image could not be built
    │   ├── BuildError           a wheel or image build of `openenv-mcp build` failed
    │   ├── PolicyError          the policy (a model server) gave no next turn
    │   └── WorldUnavailable     a world's applications do not answer their state socket
    ├── CriterionError           one criterion of a rubric could not score this step
    └── WorldTampered            a world's state socket answered by another process than the seeded one

Every class has a stable :attr:`~OpenEnvError.code` (its wire form); :data:`ERRORS` maps each code to its
class. Exceptions that never leave their module (a rule's ``Failed`` verdict, a tool server's refusal) are
control flow, not errors of the package, and stay where they are raised.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ERRORS",
    "BadRequest",
    "BoundaryError",
    "BuildError",
    "ConfigError",
    "ConformanceError",
    "CriterionError",
    "EpisodeEnded",
    "EpisodeLimit",
    "EpisodeLost",
    "ForkDiverged",
    "ForkError",
    "ImageBuildError",
    "NotConformant",
    "OpenEnvError",
    "PolicyError",
    "RequestError",
    "RequestTooLarge",
    "ResetNeeded",
    "ServiceError",
    "SessionLimit",
    "TaskFormatError",
    "TaskNeeded",
    "ToolNameError",
    "ToolSchemaError",
    "ToolServerError",
    "UnknownEnvironment",
    "UnknownEpisode",
    "UsageError",
    "WorldTampered",
    "WorldUnavailable",
    "from_wire",
]


class OpenEnvError(Exception):
    """Root of every error openenv-mcp raises."""

    code = "openenv_error"
    """A stable machine-readable code: the error's wire form (control plane, HTTP bodies)."""

    @classmethod
    def from_message(cls, message: str) -> OpenEnvError:
        """This error rebuilt from its wire form (the message; classes with more fields override this)."""
        return cls(message)


# -- the caller used the API wrong -------------------------------------------------------------------------
class UsageError(OpenEnvError):
    """The caller used the episode API wrong (the message says what to call instead)."""

    code = "usage_error"


class ResetNeeded(UsageError):
    """``step()`` or ``state()`` before the first ``reset()``."""

    code = "reset_needed"


class EpisodeEnded(UsageError):
    """``step()`` after the episode ended (done or truncated)."""

    code = "episode_ended"


class UnknownEpisode(UsageError):
    """No live episode has this id (never created, closed, or reaped)."""

    code = "unknown_episode"


class UnknownEnvironment(UsageError):
    """``make()`` was given a name or path that is no environment."""

    code = "unknown_environment"


class ForkError(UsageError):
    """An episode cannot be forked: a tool server refuses (``fork = "refuse"``, a remote server),
    the episode ran code (``run_code``), it is closed, or copying its world failed. Nothing is
    half copied: no fork of the attempt stays live."""

    code = "fork_error"


class ForkDiverged(ForkError):
    """A replayed fork got another result than the original at some step (the world is not
    deterministic, or a server keeps state a replay does not rebuild)."""

    code = "fork_diverged"

    def __init__(self, message: str, step: int, recorded: object, replayed: object) -> None:
        super().__init__(message)
        self.step = step
        self.recorded = recorded
        self.replayed = replayed

    @classmethod
    def from_message(cls, message: str) -> OpenEnvError:
        """Rebuilt from the wire, which carries only the message (step -1, nothing recorded or replayed)."""
        return cls(message, -1, None, None)


# -- an environment definition is invalid ------------------------------------------------------------------
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


class ToolSchemaError(ConfigError):
    """Tools whose ``inputSchema`` TRL cannot be given exactly (the message lists them and why)."""

    code = "tool_schema_error"


class TaskNeeded(ConfigError):
    """A task is still a stub: ``init`` found no call of the wrapped server that succeeds, so its reference
    cannot solve it (the message says what was tried); ``run`` and ``conformance`` report it, never a 0."""

    code = "task_needed"


class NotConformant(ConfigError):
    """The environment failed conformance: ``publish`` refused (``--force`` was not given)."""

    code = "not_conformant"


class ConformanceError(NotConformant, AssertionError):
    """Raised by :func:`openenv_mcp.conformance.assert_conformant` (an ``AssertionError``, so a pytest test
    fails with it); ``.report`` holds the full :class:`~openenv_mcp.conformance.report.Report`."""

    code = "conformance_error"

    def __init__(self, report: Any) -> None:
        self.report = report
        lines = [report.summary()] + [f"  {r.rule} [{r.severity}]: {r.message}" for r in report.errors]
        super().__init__("\n".join(lines))

    @classmethod
    def from_message(cls, message: str) -> OpenEnvError:
        """The error without its report (only the message crosses the wire)."""
        err = cls.__new__(cls)
        Exception.__init__(err, message)
        err.report = None
        return err


# -- a malformed request on the wire -----------------------------------------------------------------------
class RequestError(OpenEnvError):
    """A request that is not valid on the wire (the message names the field)."""

    code = "request_error"


class BadRequest(RequestError):
    """A control-plane message that is not valid (bad JSON, unknown op, missing field)."""

    code = "bad_request"


class RequestTooLarge(RequestError):
    """A request body or WebSocket message over the server's ``--max-request-bytes``."""

    code = "request_too_large"


# -- a service the call needs failed: retrying may succeed -------------------------------------------------
class ServiceError(OpenEnvError):
    """A service the call needs (a tool server, a replica, a model server, a build) failed or is busy;
    the same call may succeed later or elsewhere."""

    code = "service_error"


class EpisodeLimit(ServiceError):
    """The server already runs as many episodes as it was allowed."""

    code = "episode_limit"


class SessionLimit(ServiceError):
    """An MCP address (an episode's, or bare ``/mcp``) already has as many sessions open as it may."""

    code = "session_limit"


class BoundaryError(ServiceError):
    """A tool server could not be started or reached behind its boundary."""

    code = "boundary_error"


class EpisodeLost(ServiceError):
    """The episode's server went away (its node or replica died, or stopped answering in time).

    The episode cannot be resumed: start a new one (a pool sends it to a healthy replica)."""

    code = "episode_lost"


class ToolServerError(ServiceError):
    """A wrapped tool server answered a request (``resources/read``, ``prompts/get``,
    ``completion/complete``) with a JSON-RPC error: its own code and message (bounded),
    passed through unchanged to the MCP face."""

    code = "tool_server_error"

    def __init__(self, rpc_code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.message = message
        self.data = data

    @classmethod
    def from_message(cls, message: str) -> OpenEnvError:
        """Rebuilt from the control plane's wire form, which carries no JSON-RPC code: -32603 (internal)."""
        return cls(-32603, message)


class ImageBuildError(ServiceError):
    """A task's container image could not be built (its Dockerfile or compose build failed, or timed
    out); the message carries the end of the build log."""

    code = "image_build_error"


class BuildError(ServiceError):
    """A wheel or image build failed (the tool's output is in the message)."""

    code = "build_error"


class PolicyError(ServiceError):
    """The policy (a model server) could not give the next turn; the rollout stops."""

    code = "policy_error"


class WorldUnavailable(ServiceError):
    """The applications of an episode did not answer on their state socket."""

    code = "world_unavailable"


# -- grading ----------------------------------------------------------------------------------------------
class CriterionError(OpenEnvError):
    """One criterion of a rubric could not score this step."""

    code = "criterion_error"


class WorldTampered(OpenEnvError):
    """The state socket is answered by another process than the one the grader seeded."""

    code = "world_tampered"


def _tree(root: type[OpenEnvError]) -> list[type[OpenEnvError]]:
    out = [root]
    for sub in root.__subclasses__():
        if sub.__module__ == __name__:
            out.extend(_tree(sub))
    return out


ERRORS: dict[str, type[OpenEnvError]] = {cls.code: cls for cls in _tree(OpenEnvError)}
"""Every error class by its wire code."""


def from_wire(code: str, message: str) -> OpenEnvError:
    """The error a server sent as ``{"code": code, "message": message}``: the class of that code, or an
    :class:`OpenEnvError` carrying the unknown code (a newer server's error)."""
    cls = ERRORS.get(code)
    if cls is None:
        err = OpenEnvError(message)
        err.code = code
        return err
    return cls.from_message(message)
