"""The isolation boundary interface: one started tool server for one episode.

A backend (one file each in this package) turns a :class:`ToolServerSpec` into
a :class:`Connection`: a live MCP server the episode talks to. Connections
speak MCP types (``Tool``, ``CallToolResult``) and report failures as
:class:`~openenv_mcp.errors.BoundaryError`; the episode turns those into error
results, so a crashed tool server never takes the environment down.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.isolation.host.workspace import Workspace
from openenv_mcp.types import Task

__all__ = ["Connection", "ServerContext"]


class ServerContext:
    """What a tool server is started with, for one episode.

    Attributes:
        episode_id: the episode the server belongs to.
        workspace: the episode's private workspace on the host. Given as a
            :class:`~openenv_mcp.isolation.host.workspace.Workspace`, the folder is only created
            when a server first asks for it (servers that need none cost nothing).
        mode: ``sim`` (training/evaluation) or ``prod`` (deployment).
        env: variables for the server: the spec's ``env`` plus declared ``pass_env``.
        read_only: the workspace may be read but not changed (production ``--read-only``);
            a server that writes must refuse with a clear error.
        user_workspace: the workspace is the user's own folder (production ``--workspace``),
            not a private copy: a boundary must not change its owners nor remove it.
        task: the episode's task, grader-only fields included (``None`` for a world the warm
            pool prepares ahead of any task): for servers whose world depends on the task (a
            Harbor task's container). A server must never show its private fields to the agent.
    """

    __slots__ = ("_workspace", "env", "episode_id", "mode", "read_only", "task", "user_workspace")

    def __init__(
        self,
        episode_id: str,
        workspace: Path | Workspace,
        mode: str = "sim",
        env: dict[str, str] | None = None,
        *,
        read_only: bool = False,
        user_workspace: bool = False,
        task: Task | None = None,
    ) -> None:
        self.episode_id = episode_id
        self.task = task
        self._workspace = workspace
        self.mode = mode
        self.env = env if env is not None else {}
        self.read_only = read_only
        self.user_workspace = user_workspace

    @property
    def workspace(self) -> Path:
        w = self._workspace
        return w.path if isinstance(w, Workspace) else w

    def __repr__(self) -> str:
        return f"ServerContext(episode_id={self.episode_id!r}, workspace={self._workspace!r}, mode={self.mode!r})"


class Connection(abc.ABC):
    """A started tool server behind a boundary (one per tool server and episode)."""

    on_tools_changed: Callable[[], None] | None = None
    """Set by the episode: called when the server sends ``notifications/tools/list_changed``
    (the next :meth:`list_tools` asks the server again)."""

    def __init__(self, spec: ToolServerSpec, ctx: ServerContext) -> None:
        self.spec = spec
        self.ctx = ctx

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions`` from its ``initialize`` result (bounded), if any."""
        return None

    @property
    def capabilities(self) -> Any:
        """The server's declared ``ServerCapabilities`` (``None``: unknown)."""
        return None

    @abc.abstractmethod
    async def start(self) -> None:
        """Start the server and complete the MCP handshake."""

    @abc.abstractmethod
    async def list_tools(self) -> list[Tool]:
        """The server's tools, un-namespaced."""

    async def list_tools_now(self) -> list[Tool]:
        """The server's tools as it lists them now, asked again whatever it announced
        (:meth:`list_tools` re-asks only after ``notifications/tools/list_changed``): how
        conformance finds a list that changed silently. Default: :meth:`list_tools`."""
        return await self.list_tools()

    @abc.abstractmethod
    async def call_tool(self, name: str, arguments: dict[str, Any], label: str) -> CallToolResult:
        """Call a tool by its server-side ``name``; ``label`` is the name the agent
        used (for messages). Tool failures are error results; a dead server raises
        :class:`BoundaryError`. The episode enforces the time limit by cancelling
        this call, then calls :meth:`interrupted`."""

    async def interrupted(self) -> None:  # noqa: B027  (an optional hook: nothing by default)
        """A call was cancelled at its time limit: make the server usable again
        (e.g. kill and restart a process whose call cannot be cancelled)."""

    async def list_resources(self) -> list[Resource]:
        """The server's resources (none unless the backend supports them)."""
        return []

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """Read one resource."""
        raise KeyError(uri)

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates (none unless the backend supports them)."""
        return []

    async def complete(self, ref: Any, argument: dict[str, str], context: dict[str, str] | None) -> CompleteResult:
        """``completion/complete`` for one of the server's prompts or resource templates."""
        raise KeyError(getattr(ref, "name", None) or getattr(ref, "uri", ""))

    async def list_prompts(self) -> list[Prompt]:
        """The server's prompts (none unless the backend supports them)."""
        return []

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> GetPromptResult:
        """Render one prompt."""
        raise KeyError(name)

    @abc.abstractmethod
    async def run_command(self, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        """Run ``argv`` next to the server, inside its boundary, in the workspace:
        ``(exit code, stdout, stderr)``, each output cut to 64 KiB. Used by
        command rewards. Each boundary implements it (``inprocess``: a plain child process)."""

    def per_episode_values(self) -> dict[str, str]:
        """What this boundary makes different in every episode and the server may see, by what
        it is (``{"the workspace path": "/tmp/..."}``): comparisons between episodes (the
        conformance rules) normalize these. A boundary that makes a value identical inside
        (the sandbox's ``/workspace``) leaves it out."""
        return {"the workspace path": str(self.ctx.workspace)}

    # -- forks (docs/fork.md) -------------------------------------------------------
    async def snapshot(self) -> Any:
        """The server's state outside the workspace, for a fork (``fork = "snapshot"``): what
        :meth:`restore` gives a fork's fresh server. Default ``None``: the server declares all its
        state is in the workspace (which the fork copies). In-process servers offer a hook."""
        return None

    async def restore(self, state: Any) -> None:  # noqa: B027  (an optional hook: nothing by default)
        """Give this fresh server (a fork's) the state :meth:`snapshot` took from the original's."""

    async def healthy(self) -> bool:
        """Whether the server still answers."""
        return True

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop the server and release everything it holds (idempotent)."""
