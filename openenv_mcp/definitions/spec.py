"""Environment definitions: the models behind ``env.toml`` files.

An environment is described by an :class:`EnvSpec` (name, tasks, reward, step
budget) that composes one or more :class:`ToolServerSpec` (how to start one MCP
server and behind which boundary). Built-in environments under ``envs/`` are
env files too; ``docs/env-file.md`` documents every key.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
import types
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from openenv_mcp.errors import ConfigError

__all__ = ["EnvSpec", "Limits", "ToolServerSpec", "load_env_file", "load_object"]

Isolation = Literal["inprocess", "process", "sandbox", "docker", "remote"]

MAX_MB = 1_048_576
"""The largest ``tmpfs_mb`` / ``file_mb`` accepted (1 TiB): past it a value is a typo, not a cap."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, arbitrary_types_allowed=True)


class Limits(_Spec):
    """Resource limits for one tool server (enforced by its boundary)."""

    call_timeout: float = 30.0
    """Seconds one tool call may take; past it the call ends with an error result."""
    start_timeout: float = 30.0
    """Seconds a tool server may take to start and answer ``initialize``."""
    memory_mb: int | None = 512
    """Address-space / memory cap (process, sandbox, docker)."""
    cpu_seconds: int | None = 60
    """CPU time cap per server process (process, sandbox); CPUs for docker."""
    processes: int | None = 64
    """Process (pids) cap (process as an unprivileged uid, sandbox, docker)."""
    open_files: int | None = 1024
    """Open file descriptors per server process (process, sandbox)."""
    output_bytes: int = 1_000_000
    """Largest tool output kept; longer text is cut with a visible marker."""
    tmpfs_mb: int = Field(default=256, strict=True)
    """Size of each memory-backed folder of the server's sandbox (``/tmp``, ``/var/tmp``, ``/run``,
    ``/dev/shm``; docker: its tmpfs mounts and ``shm_size``): a write past it fails with ``ENOSPC``.
    Each folder has its own cap; they are not one total."""
    file_mb: int = Field(default=256, strict=True)
    """Largest file the server and what it runs may write (``RLIMIT_FSIZE``; process, sandbox, docker):
    a write past it fails with ``EFBIG`` ("File too large"). A lower limit inherited from the host is kept."""

    @field_validator("tmpfs_mb", "file_mb")
    @classmethod
    def _capped(cls, value: int) -> int:
        if not 1 <= value <= MAX_MB:
            raise ValueError(f"must be a whole number of MiB from 1 to {MAX_MB}, got {value} (there is no 'no cap')")
        return value


class ToolServerSpec(_Spec):
    """How to start one MCP tool server for an episode.

    Exactly one of ``object``, ``command``, ``url`` or ``image`` says what the
    server is; ``isolation`` says behind which boundary it runs.
    """

    name: str
    """Identifier of the server; also its tool-name namespace by default."""
    namespace: str | None = None
    """Prefix for its tools (``{namespace}_{tool}``); ``""`` for no prefix.
    Defaults to ``name``."""
    object: Any = None
    """In-process: ``"module:attr"`` naming a FastMCP server, or a factory
    ``f(ctx: ServerContext) -> FastMCP`` called once per episode. A Python spec
    may give the object itself."""
    command: list[str] | None = None
    """A stdio MCP server in any language. ``{workspace}`` is replaced by the
    episode's workspace path as the server sees it."""
    url: str | None = None
    """A remote streamable-HTTP MCP server."""
    image: str | None = None
    """A container image whose entrypoint serves MCP (see ``transport``)."""
    transport: Literal["stdio", "http"] = "stdio"
    """For ``image``: whether the entrypoint speaks stdio or streamable HTTP."""
    isolation: Isolation | None = None
    """``inprocess`` | ``process`` | ``sandbox`` | ``docker`` (| ``remote`` for
    ``url``). Defaults from the kind: object -> inprocess, command -> process,
    image -> docker, url -> remote."""
    workspace: str | None = None
    """Seed folder (relative to the env folder) copied into each episode's
    workspace."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for the server. Nothing from the host leaks in otherwise."""
    pass_env: list[str] = Field(default_factory=list)
    """Host variables passed through by name (e.g. ``["DATABASE_URL"]``)."""
    hide: list[str] = Field(default_factory=list)
    """Paths (relative to the env folder, or absolute) the server must never
    see, e.g. hidden tests: the ``sandbox`` boundary mounts an empty folder (or
    an empty file) over each. Other boundaries cannot hide host files."""
    run_as_root: bool = False
    """``process``/``sandbox`` as root: run the server as root instead of the episode's
    unprivileged uid. Off by default; without it a server whose runtime an unprivileged uid
    cannot reach is exposed through a mount namespace (bubblewrap), or refused."""
    bind: list[str] = Field(default_factory=list)
    """``sandbox``: extra host paths (absolute, or relative to the env folder) bound read-write
    at the same place. Nothing outside the system folders and what the command needs is
    visible otherwise."""
    ro_bind: list[str] = Field(default_factory=list)
    """``sandbox``: extra host paths bound read-only at the same place."""
    network: Literal["none", "host"] = "none"
    """Network policy for process-level boundaries: ``none`` cuts it (sandbox,
    docker); ``host`` allows it."""
    fast_start: bool = True
    """``sandbox``: fork each episode's server from a zygote that imported it once (the
    framework's own Python tool servers, as root; see docs/env-file.md, "Fast starts").
    ``false`` starts a fresh bubblewrap and interpreter per episode (``$OPENENV_MCP_FAST_START=0``
    turns it off for the whole process)."""
    limits: Limits = Field(default_factory=Limits)
    """Resource limits."""
    fork: Literal["snapshot", "replay", "refuse"] | None = None
    """How :meth:`Episode.fork <openenv_mcp.core.episode.Episode.fork>` copies this server's state
    (docs/fork.md): ``snapshot`` (the workspace is copied, plus what the server's own
    snapshot/restore hook returns: the author declares there is no other state), ``replay`` (a
    fresh episode re-runs the recorded calls and checks every result) or ``refuse``. Default:
    ``replay``, ``refuse`` for a ``remote`` server (its state is not the episode's to copy)."""
    prod: dict[str, Any] | None = None
    """Production variant: keys overriding this spec in ``--mode prod``
    (e.g. another ``object`` backed by PostgreSQL). Same tool names and
    schemas are expected (the conformance suite checks it)."""

    @model_validator(mode="after")
    def _one_kind(self) -> ToolServerSpec:
        kinds = [k for k in ("object", "command", "url", "image") if getattr(self, k)]
        if len(kinds) != 1:
            raise ValueError(
                f"tool server {self.name!r} needs exactly one of object, command, url, image "
                f"(got {', '.join(kinds) or 'none'})"
            )
        if self.isolation is None:
            default: dict[str, Isolation] = {
                "object": "inprocess",
                "command": "process",
                "url": "remote",
                "image": "docker",
            }
            self.isolation = default[kinds[0]]
        return self

    @property
    def fork_strategy(self) -> str:
        """:attr:`fork` with its default filled in."""
        if self.fork is not None:
            return self.fork
        return "refuse" if self.isolation == "remote" else "replay"

    @property
    def prefix(self) -> str:
        """The namespace actually used for tool names."""
        return self.name if self.namespace is None else self.namespace

    def variant(self, mode: str) -> ToolServerSpec:
        """This spec as used in ``mode`` (``sim`` or ``prod``)."""
        if mode != "prod" or not self.prod:
            return self
        data = self.model_dump(exclude={"prod", "object"}) | {"object": self.object}
        for kind in ("object", "command", "url", "image"):
            if kind in self.prod:
                data[kind] = None
        data.update(self.prod)
        data["isolation"] = self.prod.get("isolation")
        return ToolServerSpec.model_validate(data)


class EnvSpec(_Spec):
    """One environment: tool servers, tasks, reward and episode rules."""

    name: str
    """Name used by ``make()`` and the CLI."""
    description: str = ""
    """One line shown by ``openenv-mcp list``."""
    max_steps: int | None = 50
    """Tool calls per episode before ``truncated``; ``None`` for no limit."""
    tasks: str | list[dict[str, Any]] | dict[str, Any] | None = None
    """A JSONL file (relative to the env folder), a list of task objects, or the
    ``[tasks]`` table: ``file`` or ``dataset`` (a ``datasets`` source), ``private``,
    named sets ``[tasks.train]``... (see :mod:`openenv_mcp.definitions.tasks`).
    Without tasks, each episode gets one empty task."""
    private_task_fields: list[str] = Field(default_factory=list)
    """Older spelling of ``[tasks] private`` (both work): keys of every task's ``data``
    that are grader-only (expected answers, goals): rewards read them, no face ever
    shows them (see ``Task.public``)."""
    reward: Any = None
    """``"module:function"`` or a callable ``f(ctx: RewardContext)`` returning the
    score (float or :class:`~openenv_mcp.types.Score`); or ``{command = [...]}``
    run inside the first tool server's boundary, printing a number."""
    setup: str | None = None
    """``"module:function"``: ``f(ctx: RewardContext)`` (sync or async) run in the environment server once
    per simulation episode, after its tool servers started and before the first observation (the
    initial score included): it prepares the world the task needs (seeds an application's data from the
    full task and ``ctx.seed``...). What it returns is ``ctx.world`` for the reward. A setup that raises
    fails the reset. Not run in production (no task there)."""
    solutions: str | None = None
    """Module with ``reference(task)`` and ``wrong(task)``, each returning the
    list of actions of a scripted trajectory, or a generator of actions that receives each
    action's observation (an interactive script, see :mod:`openenv_mcp.core.scripts`)."""
    prod_workspace: Literal["required", "optional", "none"] = "optional"
    """Production on the user's folder (``--mode prod --workspace DIR``): ``required``
    (the tools work on files: production needs the folder), ``none`` (the tools use no
    folder, e.g. a database: ``--workspace`` is refused) or ``optional``."""
    success_score: float = 1.0
    """Score at which the episode is done."""
    codeact: bool = False
    """Expose a ``run_code`` tool on the MCP face (CodeAct; ``RunCode`` actions work either way)."""
    code_limits: Limits | None = None
    """Limits of the CodeAct interpreter (``call_timeout`` bounds one whole run); see docs/codeact.md."""
    warm_pool: int = 0
    """Worlds (workspace + started tool servers) kept ready in the background so
    that ``reset()`` only swaps one in; 0 starts every episode cold."""
    tool_servers: list[ToolServerSpec]
    """The composed servers; their tools form one MCP surface."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    """Folder relative paths are resolved against (the env file's folder)."""

    @model_validator(mode="after")
    def _unique(self) -> EnvSpec:
        if not self.tool_servers:
            raise ValueError(f"environment {self.name!r} declares no tool server")
        names = [s.name for s in self.tool_servers]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"tool server names must be unique; repeated: {sorted(dup)}")
        return self

    def path(self, relative: str) -> Path:
        """Resolve ``relative`` against the environment's folder."""
        return (self.base_dir / relative).resolve()


def load_env_file(path: str | Path) -> EnvSpec:
    """Read an ``env.toml`` (or a folder holding one) into an :class:`EnvSpec`."""
    path = Path(path)
    if path.is_dir():
        path = path / "env.toml"
    if not path.is_file():
        raise ConfigError(f"no environment file at {str(path)!r}: give an env.toml or a folder holding one")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from e
    env = dict(raw.get("env", {}))
    unknown = set(raw) - {"env", "tool_servers", "tasks", "reward"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level table(s) {sorted(unknown)}; expected [env] and [[tool_servers]]")
    if "tasks" in raw:
        if "tasks" in env:
            raise ConfigError(f"{path}: tasks are given twice, as [env] tasks and as a top-level tasks table; keep one")
        env["tasks"] = raw["tasks"]
    if "reward" in raw:  # a [reward] table (a rubric: [[reward.criteria]])
        if "reward" in env:
            raise ConfigError(f"{path}: the reward is given twice: in [env] and as a [reward] table")
        env["reward"] = raw["reward"]
    env["tool_servers"] = raw.get("tool_servers", [])
    env["base_dir"] = path.parent.resolve()
    try:
        return EnvSpec.model_validate(env)
    except ValidationError as e:
        raise ConfigError(f"{path}: {_explain(e)}") from e


def _explain(error: ValidationError) -> str:
    parts = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)


def load_object(ref: Any, base_dir: Path | None = None) -> Any:
    """Resolve ``"module:attr"`` (``module`` may be a ``.py`` file in ``base_dir``).

    Non-strings are returned as they are, so Python specs can pass objects.
    """
    if not isinstance(ref, str):
        return ref
    module_name, _, attr = ref.partition(":")
    module = load_module(module_name, base_dir)
    if not attr:
        return module
    try:
        obj = module
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj
    except AttributeError:
        raise ConfigError(f"{ref!r}: module {module_name!r} has no attribute {attr!r}") from None


_PRIVATE = "openenv_mcp_envs"


def _private_root(base_dir: Path) -> str:
    """The private package whose ``__path__`` is ``base_dir`` (made once per folder)."""
    if _PRIVATE not in sys.modules:
        top = types.ModuleType(_PRIVATE, "env folders' own modules, one private package per folder")
        top.__path__ = []
        sys.modules[_PRIVATE] = top
    key = f"{_PRIVATE}._{abs(hash(str(base_dir)))}"
    if key not in sys.modules:
        package = types.ModuleType(key, f"the modules of {base_dir}")
        package.__path__ = [str(base_dir)]
        sys.modules[key] = package
    return key


def load_module(name: str, base_dir: Path | None = None) -> Any:
    """Import ``name``, preferring ``base_dir/name.py`` (loaded under a private name).

    The private name is a package rooted at ``base_dir`` (``openenv_mcp_envs._<hash>``), so a module inside
    a package of the env folder keeps its relative imports (``from .util import x``), and two env folders
    with a ``reward.py`` each never share one."""
    if base_dir is not None:
        file = base_dir / (name.replace(".", "/") + ".py")
        if file.is_file():
            root = _private_root(base_dir)
            if str(base_dir) not in sys.path:
                # sibling imports inside an env folder (e.g. reward.py importing common.py)
                sys.path.append(str(base_dir))
            try:
                return importlib.import_module(f"{root}.{name}")
            except ImportError as e:
                raise ConfigError(f"cannot import {name!r} from {base_dir}: {e}") from e
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ConfigError(f"cannot import {name!r}: {e}") from e
