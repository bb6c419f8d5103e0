"""Reading one task folder: Harbor's ``task.toml`` layout, or Terminal-Bench 1's ``task.yaml``.

Harbor (schema versions 1.0 to 1.4 as Harbor reads them)::

    task.toml         [task] [metadata] [agent] [verifier] [environment] [solution] artifacts
    instruction.md    the prompt
    environment/      Dockerfile, or docker-compose.yaml with a ``main`` service
    tests/test.sh     run after the agent; writes /logs/verifier/reward.txt (a number) or reward.json
    solution/solve.sh the oracle (optional; may come with more files)

Terminal-Bench 1: ``task.yaml`` (``instruction``, ``max_agent_timeout_sec``, ``max_test_timeout_sec``,
``parser_name``...), ``Dockerfile`` and ``docker-compose.yaml`` (a ``client`` service) at the top,
``solution.sh`` (or ``solution.yaml``), ``run-tests.sh`` and ``tests/``.

Both become one :class:`TaskDefinition`. Keys Harbor ignores are ignored here too and listed in
:attr:`TaskDefinition.warnings`; features this build cannot run faithfully (multi-step tasks, GPUs,
Windows, host allowlists...) raise :class:`~openenv_mcp.errors.TaskFormatError` naming the field.
``docs/harbor.md`` has the full table of what is read and what does not map.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openenv_mcp.errors import TaskFormatError

__all__ = [
    "EnvironmentDef",
    "Healthcheck",
    "LoadOptions",
    "Resources",
    "TaskDefinition",
    "VerifierDef",
    "is_task_folder",
    "read_task",
]

Network = Literal["none", "public"]

DEFAULT_CPUS = 1.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_PIDS = 512
DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_VERIFIER_TIMEOUT = 600.0
DEFAULT_BUILD_TIMEOUT = 600.0
INSTRUCTION_LIMIT = 256 * 1024
"""Largest instruction read (bytes)."""


# -- what a loader may be told (dataset-wide) ---------------------------------------------------
@dataclass(frozen=True)
class LoadOptions:
    """How a dataset's tasks are run (the env file's ``[tasks] harbor = {...}`` table)."""

    network: Literal["none", "harbor"] = "none"
    """``none``: a task that does not ask for the network gets none (openenv-mcp's default);
    ``harbor``: Harbor's default, public network unless the task says otherwise."""
    tamper: Literal["enforce", "report"] = "enforce"
    """``enforce``: a shared-verifier episode whose agent changed the verifier's tooling or its
    folders scores 0; ``report``: the changes are only listed in ``info``."""
    processes: Literal["stop", "keep"] = "stop"
    """``stop``: every process the agent left running is killed before the tests run (the
    container restarts); ``keep``: they keep running (tasks graded on a service the agent started)."""
    pass_env: tuple[str, ...] = ()
    """Host variables a task's ``${VAR}`` templates may read (anything else resolves to its
    default, or empty): a dataset cannot pull host secrets into a container unasked."""


# -- the normalized definition ----------------------------------------------------------------
@dataclass(frozen=True)
class Resources:
    cpus: float = DEFAULT_CPUS
    memory_mb: int = DEFAULT_MEMORY_MB
    storage_mb: int | None = None
    """Read, but not enforced by the Docker engine here (overlay2 has no per-container quota)."""
    pids: int = DEFAULT_PIDS


@dataclass(frozen=True)
class Healthcheck:
    command: str
    interval_sec: float = 5.0
    timeout_sec: float = 30.0
    start_period_sec: float = 0.0
    retries: int = 3


@dataclass(frozen=True)
class EnvironmentDef:
    """Where the episode's container comes from, and how it runs."""

    kind: Literal["dockerfile", "compose", "image"]
    context: Path | None
    """The build context (``environment/``; Terminal-Bench 1: the task folder, minus :attr:`exclude`)."""
    dockerfile: str = "Dockerfile"
    build_args: dict[str, str] = field(default_factory=dict)
    """Build arguments besides ``BASE_IMAGE`` (a compose service's ``build.args``)."""
    compose_file: Path | None = None
    image: str | None = None
    """A prebuilt image (``docker_image``), used instead of building."""
    exclude: tuple[str, ...] = ()
    """Top-level names of :attr:`context` never sent to the engine (tests, solutions, task files)."""
    main_service: str = "main"
    build_timeout: float = DEFAULT_BUILD_TIMEOUT
    resources: Resources = field(default_factory=Resources)
    network: Network = "none"
    env: dict[str, str] = field(default_factory=dict)
    workdir: str | None = None
    healthcheck: Healthcheck | None = None


@dataclass(frozen=True)
class VerifierDef:
    """How the task is graded."""

    timeout: float = DEFAULT_VERIFIER_TIMEOUT
    env: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    mode: Literal["shared", "separate"] = "shared"
    environment: EnvironmentDef | None = None
    """The separate verifier's environment (``None``: a fresh container of the task's own)."""
    network: Network = "none"
    tests_dir: Path | None = None
    script: str = "test.sh"
    """The entry point, relative to ``/tests``."""
    extra_files: dict[str, Path] = field(default_factory=dict)
    """More files copied into ``/tests`` (Terminal-Bench 1's ``run-tests.sh``), by name."""
    result: Literal["reward-file", "pytest"] = "reward-file"
    """``reward-file``: Harbor's /logs/verifier/reward.json or reward.txt; ``pytest``: Terminal-Bench
    1's pytest parser (1 when every test passed), read from a JUnit report pytest writes."""


@dataclass(frozen=True)
class TaskDefinition:
    """One task folder, read and checked."""

    name: str
    dir: Path
    format: Literal["harbor", "terminal-bench"]
    schema_version: str
    instruction: str
    environment: EnvironmentDef
    verifier: VerifierDef
    agent_timeout: float = DEFAULT_AGENT_TIMEOUT
    agent_user: str | None = None
    agent_network: Network = "none"
    solution_dir: Path | None = None
    solution_script: str | None = None
    """The oracle's entry point relative to :attr:`solution_dir` (``solve.sh``)."""
    solution_commands: tuple[str, ...] = ()
    """Terminal-Bench 1's ``solution.yaml``: commands run one after another instead of a script."""
    solution_env: dict[str, str] = field(default_factory=dict)
    artifacts: tuple[str, ...] = ()
    """Absolute paths copied from the agent's container into a separate verifier's."""
    metadata: dict[str, Any] = field(default_factory=dict)
    agent_may_change: tuple[str, ...] = ()
    """Globs of protected paths the agent may legitimately change (``[openenv_mcp]``), e.g. a
    package it installs into ``/usr/local/lib``."""
    processes: Literal["stop", "keep"] = "stop"
    tamper: Literal["enforce", "report"] = "enforce"
    warnings: tuple[str, ...] = ()


def is_task_folder(path: Path) -> bool:
    """Whether ``path`` is a Harbor or Terminal-Bench 1 task folder."""
    return (path / "task.toml").is_file() or (path / "task.yaml").is_file()


def read_task(path: str | Path, options: LoadOptions | None = None, name: str | None = None) -> TaskDefinition:
    """The task in folder ``path`` (``name``: its id, default the folder's name)."""
    folder = Path(path).resolve()
    options = options or LoadOptions()
    if (folder / "task.toml").is_file():
        return _read_harbor(folder, options, name or folder.name)
    if (folder / "task.yaml").is_file():
        return _read_tb1(folder, options, name or folder.name)
    raise TaskFormatError(
        f"{folder}: not a task folder (no task.toml, Harbor's format, nor task.yaml, Terminal-Bench 1's)"
    )


# -- Harbor: pydantic mirrors of what task.toml may hold (extra keys kept to warn about) ------------
class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Healthcheck(_Model):
    command: str
    interval_sec: float = 5.0
    timeout_sec: float = 30.0
    start_period_sec: float = 0.0
    start_interval_sec: float = 5.0
    retries: int = 3


class _Environment(_Model):
    build_timeout_sec: float = DEFAULT_BUILD_TIMEOUT
    docker_image: str | None = None
    os: str = "linux"
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    memory: str | None = None  # deprecated spelling: "2G"
    storage: str | None = None
    gpus: int | None = None
    gpu_types: list[str] | None = None
    tpu: dict[str, Any] | None = None
    allow_internet: bool | None = None  # deprecated spelling of network_mode
    network_mode: Literal["public", "no-network", "allowlist"] | None = None
    allowed_hosts: list[str] | None = None
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: _Healthcheck | None = None
    workdir: str | None = None

    @field_validator("os", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v


class _Phase(_Model):
    timeout_sec: float | None = None
    user: str | int | None = None
    network_mode: Literal["public", "no-network", "allowlist"] | None = None
    allowed_hosts: list[str] | None = None


class _Verifier(_Phase):
    env: dict[str, str] = Field(default_factory=dict)
    environment_mode: Literal["shared", "separate"] | None = None
    environment: _Environment | None = None
    continuous: dict[str, Any] | None = None
    collect: list[dict[str, Any]] = Field(default_factory=list)


class _Solution(_Model):
    env: dict[str, str] = Field(default_factory=dict)


class _Extension(_Model):
    """``[openenv_mcp]``: keys of ours a task may add (Harbor ignores the table)."""

    agent_may_change: list[str] = Field(default_factory=list)
    processes: Literal["stop", "keep"] | None = None


class _TaskToml(_Model):
    schema_version: str = "1.0"
    task: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: _Verifier = Field(default_factory=_Verifier)
    agent: _Phase = Field(default_factory=_Phase)
    environment: _Environment = Field(default_factory=_Environment)
    solution: _Solution = Field(default_factory=_Solution)
    source: str | None = None
    steps: list[dict[str, Any]] | None = None
    multi_step_reward_strategy: str | None = None
    artifacts: list[str | dict[str, Any]] = Field(default_factory=list)
    openenv_mcp: _Extension = Field(default_factory=_Extension)


def _read_harbor(folder: Path, options: LoadOptions, name: str) -> TaskDefinition:
    raw = _load_toml(folder / "task.toml")
    if "version" in raw and "schema_version" not in raw:  # the 1.0 spelling
        raw["schema_version"] = raw.pop("version")
    try:
        config = _TaskToml.model_validate(raw)
    except ValidationError as e:
        raise TaskFormatError(f"{folder / 'task.toml'}: {_explain(e)}") from None
    where = folder / "task.toml"
    warnings = _unknown_keys(config, "")
    _refuse_unsupported(config, where)
    instruction = _instruction(folder / "instruction.md")
    network = _baseline_network(config.environment, options, where, "environment")
    environment = _environment(config.environment, folder / "environment", where, options, network)
    verifier = _harbor_verifier(config, folder, where, options, environment)
    agent_network = _phase_network(config.agent, network, where, "agent")
    if agent_network != environment.network and environment.kind == "compose":
        raise TaskFormatError(f"{where}: [agent] network_mode differs from [environment]'s in a compose task")
    solution_dir = folder / "solution"
    script = _solution_script(solution_dir)
    artifacts = tuple(_artifact(a, where) for a in config.artifacts)
    warnings += [f"[environment].mcp_servers is not offered to the agent ({len(config.environment.mcp_servers)})"] * (
        bool(config.environment.mcp_servers)
    )
    if config.verifier.collect:
        warnings.append("[[verifier.collect]] hooks are not run")
    return TaskDefinition(
        name=name,
        dir=folder,
        format="harbor",
        schema_version=str(config.schema_version),
        instruction=instruction,
        environment=_replace_network(environment, agent_network),
        verifier=verifier,
        agent_timeout=float(config.agent.timeout_sec or DEFAULT_AGENT_TIMEOUT),
        agent_user=_user(config.agent.user),
        agent_network=agent_network,
        solution_dir=solution_dir if script else None,
        solution_script=script,
        solution_env=_resolve_env(config.solution.env, options),
        artifacts=artifacts,
        metadata={**config.metadata, **({"task": config.task} if config.task else {})},
        agent_may_change=tuple(config.openenv_mcp.agent_may_change),
        processes=config.openenv_mcp.processes or options.processes,
        tamper=options.tamper,
        warnings=tuple(warnings),
    )


def _refuse_unsupported(config: _TaskToml, where: Path) -> None:
    env = config.environment
    if config.steps:
        raise TaskFormatError(f"{where}: multi-step tasks ([[steps]]) are not supported yet")
    if env.os != "linux":
        raise TaskFormatError(f"{where}: [environment] os = {env.os!r}: only Linux containers run here")
    if env.gpus or env.gpu_types or env.tpu:
        raise TaskFormatError(f"{where}: [environment] asks for GPUs/TPUs, which this build cannot provide")
    if config.verifier.continuous and config.verifier.continuous.get("enabled"):
        raise TaskFormatError(f"{where}: [verifier.continuous] (verification during the agent phase) is not supported")
    for section, phase in (("environment", env), ("agent", config.agent), ("verifier", config.verifier)):
        if phase.network_mode == "allowlist" or phase.allowed_hosts:
            raise TaskFormatError(
                f"{where}: [{section}] network_mode = 'allowlist' (allowed_hosts) is not supported: "
                "give the task no network or the public one"
            )


def _baseline_network(env: _Environment, options: LoadOptions, where: Path, section: str) -> Network:
    if env.network_mode is not None:
        return "public" if env.network_mode == "public" else "none"
    if env.allow_internet is not None:
        return "public" if env.allow_internet else "none"
    return "public" if options.network == "harbor" else "none"


def _phase_network(phase: _Phase, baseline: Network, where: Path, section: str) -> Network:
    if phase.network_mode is None:
        return baseline
    return "public" if phase.network_mode == "public" else "none"


def _environment(
    env: _Environment, context: Path, where: Path, options: LoadOptions, network: Network
) -> EnvironmentDef:
    compose = next(
        (context / n for n in ("docker-compose.yaml", "docker-compose.yml") if (context / n).is_file()), None
    )
    if compose is not None:
        kind: Literal["dockerfile", "compose", "image"] = "compose"
    elif (context / "Dockerfile").is_file():
        kind = "dockerfile"
    elif env.docker_image:
        kind = "image"
    else:
        raise TaskFormatError(
            f"{where}: no environment: give environment/Dockerfile, environment/docker-compose.yaml "
            "(with a `main` service) or [environment] docker_image"
        )
    return EnvironmentDef(
        kind=kind,
        context=context if kind != "image" else None,
        compose_file=compose,
        image=env.docker_image if kind == "image" else None,
        build_timeout=float(env.build_timeout_sec),
        resources=_resources(env, where),
        network=network,
        env=_resolve_env(env.env, options),
        workdir=env.workdir,
        healthcheck=_healthcheck(env.healthcheck),
    )


def _resources(env: _Environment, where: Path) -> Resources:
    memory = env.memory_mb
    if memory is None and env.memory:
        memory = _size_mb(env.memory, where, "memory")
    storage = env.storage_mb
    if storage is None and env.storage:
        storage = _size_mb(env.storage, where, "storage")
    cpus = float(env.cpus) if env.cpus is not None else DEFAULT_CPUS
    if not (0 < cpus <= 64 and math.isfinite(cpus)):
        raise TaskFormatError(f"{where}: [environment] cpus = {env.cpus!r} is not a CPU count")
    if memory is not None and not 16 <= memory <= 1 << 20:
        raise TaskFormatError(f"{where}: [environment] memory_mb = {memory!r} is out of range (16 MB .. 1 TB)")
    return Resources(cpus=cpus, memory_mb=memory or DEFAULT_MEMORY_MB, storage_mb=storage)


def _size_mb(text: str, where: Path, key: str) -> int:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([GMK])B?\s*", text.upper())
    if not m:
        raise TaskFormatError(f"{where}: [environment] {key} = {text!r}: expected a size like '2G' or '512M'")
    value, unit = float(m.group(1)), m.group(2)
    return int(value * {"G": 1024, "M": 1, "K": 1 / 1024}[unit])


def _healthcheck(check: _Healthcheck | None) -> Healthcheck | None:
    if check is None:
        return None
    return Healthcheck(
        command=check.command,
        interval_sec=check.interval_sec,
        timeout_sec=check.timeout_sec,
        start_period_sec=check.start_period_sec,
        retries=max(1, check.retries),
    )


def _harbor_verifier(
    config: _TaskToml, folder: Path, where: Path, options: LoadOptions, environment: EnvironmentDef
) -> VerifierDef:
    v = config.verifier
    tests = folder / "tests"
    if not (tests / "test.sh").is_file():
        raise TaskFormatError(f"{where}: no tests/test.sh (the verifier's entry point)")
    mode = v.environment_mode or ("separate" if v.environment is not None else "shared")
    if mode == "shared" and v.environment is not None:
        raise TaskFormatError(f"{where}: [verifier] environment_mode = 'shared' conflicts with [verifier.environment]")
    separate_env = None
    baseline = environment.network
    if mode == "separate":
        if v.environment is not None:
            baseline = _baseline_network(v.environment, options, where, "verifier.environment")
            separate_env = _environment(v.environment, tests, where, options, baseline)
        if environment.kind == "compose":
            raise TaskFormatError(f"{where}: a separate verifier for a compose task is not supported")
    network = _phase_network(v, baseline, where, "verifier")
    if mode == "shared" and network != environment.network:
        raise TaskFormatError(
            f"{where}: [verifier] network_mode differs from the agent's environment in shared mode "
            "(the container's network is fixed at start): use environment_mode = 'separate'"
        )
    return VerifierDef(
        timeout=float(v.timeout_sec if v.timeout_sec is not None else DEFAULT_VERIFIER_TIMEOUT),
        env=_resolve_env(v.env, options),
        user=_user(v.user),
        mode=mode,
        environment=separate_env,
        network=network,
        tests_dir=tests,
    )


def _replace_network(env: EnvironmentDef, network: Network) -> EnvironmentDef:
    from dataclasses import replace

    return replace(env, network=network)


def _artifact(item: str | dict[str, Any], where: Path) -> str:
    source = item if isinstance(item, str) else item.get("source")
    if isinstance(item, dict) and item.get("service") not in (None, "main"):
        raise TaskFormatError(f"{where}: artifacts from compose service {item.get('service')!r} are not supported")
    if not isinstance(source, str) or not source.startswith("/") or ".." in Path(source).parts:
        raise TaskFormatError(f"{where}: artifact {item!r}: the source must be an absolute path without '..'")
    return source


def _solution_script(folder: Path) -> str | None:
    for name in ("solve.sh",):
        if (folder / name).is_file():
            return name
    return None


# -- Terminal-Bench 1 -------------------------------------------------------------------------
_TB1_KNOWN = {
    "instruction",
    "descriptions",
    "author_name",
    "author_email",
    "difficulty",
    "category",
    "tags",
    "parser_name",
    "max_agent_timeout_sec",
    "max_test_timeout_sec",
    "run_tests_in_same_shell",
    "disable_asciinema",
    "estimated_duration_sec",
    "expert_time_estimate_min",
    "junior_time_estimate_min",
    "test_scripts",
}
_TB1_EXCLUDE = (
    "tests",
    "solution.sh",
    "solution.yaml",
    "run-tests.sh",
    "task.yaml",
    "docker-compose.yaml",
    "docker-compose.yml",
)


def _read_tb1(folder: Path, options: LoadOptions, name: str) -> TaskDefinition:
    import yaml

    where = folder / "task.yaml"
    try:
        raw = yaml.safe_load(where.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise TaskFormatError(f"{where}: invalid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{where}: expected a mapping at the top")
    instruction = _tb1_instruction(raw, where)
    parser = raw.get("parser_name", "pytest")
    if parser != "pytest":
        raise TaskFormatError(f"{where}: parser_name = {parser!r}: only the pytest parser is supported")
    if not (folder / "Dockerfile").is_file():
        raise TaskFormatError(f"{where}: no Dockerfile next to task.yaml")
    compose = _tb1_compose_check(folder, where)
    if not (folder / "run-tests.sh").is_file():
        raise TaskFormatError(f"{where}: no run-tests.sh (Terminal-Bench 1's test runner)")
    warnings = [f"task.yaml: unknown key {k!r} ignored" for k in raw if k not in _TB1_KNOWN]
    if raw.get("run_tests_in_same_shell"):
        warnings.append("run_tests_in_same_shell: the tests run in a fresh shell of the same container")
    network: Network = "public" if options.network == "harbor" else "none"
    if compose == "network":
        network = "none"
    environment = EnvironmentDef(
        kind="dockerfile", context=folder, exclude=_TB1_EXCLUDE, network=network, resources=Resources()
    )
    verifier = VerifierDef(
        timeout=float(raw.get("max_test_timeout_sec") or DEFAULT_VERIFIER_TIMEOUT),
        network=network,
        tests_dir=folder / "tests" if (folder / "tests").is_dir() else None,
        script="run-tests.sh",
        extra_files={"run-tests.sh": folder / "run-tests.sh"},
        env={"TEST_DIR": "/tests"},
        result="pytest",
    )
    solution_dir, script, commands = None, None, ()
    if (folder / "solution.sh").is_file():
        solution_dir, script = folder, "solution.sh"
    elif (folder / "solution.yaml").is_file():
        commands = _tb1_solution_yaml(folder / "solution.yaml")
    meta = {k: raw[k] for k in ("author_name", "author_email", "difficulty", "category", "tags") if k in raw}
    return TaskDefinition(
        name=name,
        dir=folder,
        format="terminal-bench",
        schema_version="tb1",
        instruction=instruction,
        environment=environment,
        verifier=verifier,
        agent_timeout=float(raw.get("max_agent_timeout_sec") or DEFAULT_AGENT_TIMEOUT),
        agent_network=network,
        solution_dir=solution_dir,
        solution_script=script,
        solution_commands=commands,
        metadata=meta,
        processes=options.processes,
        tamper=options.tamper,
        warnings=tuple(warnings),
    )


def _tb1_instruction(raw: dict[str, Any], where: Path) -> str:
    text = raw.get("instruction")
    if text is None and isinstance(raw.get("descriptions"), list):
        base = [d for d in raw["descriptions"] if isinstance(d, dict) and d.get("key", "base") == "base"]
        text = base[0].get("description") if base else None
    if not isinstance(text, str) or not text.strip():
        raise TaskFormatError(f"{where}: no instruction (the `instruction` key, or a `descriptions` entry 'base')")
    return _strip_canary(text).strip()


def _tb1_compose_check(folder: Path, where: Path) -> str | None:
    """A Terminal-Bench 1 compose file is read only to check it has one container, ``client``,
    built from the Dockerfile beside it (the rest: ``docs/harbor.md``)."""
    import yaml

    path = next((folder / n for n in ("docker-compose.yaml", "docker-compose.yml") if (folder / n).is_file()), None)
    if path is None:
        return None
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise TaskFormatError(f"{path}: invalid YAML: {e}") from None
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or "client" not in services:
        raise TaskFormatError(f"{path}: expected a `client` service (Terminal-Bench 1's agent container)")
    if len(services) > 1:
        raise TaskFormatError(
            f"{path}: Terminal-Bench 1 tasks with more than one service are not supported; "
            "convert it to Harbor's format (environment/docker-compose.yaml with a `main` service)"
        )
    client = services["client"] or {}
    return "network" if isinstance(client, dict) and client.get("network_mode") == "none" else None


def _tb1_solution_yaml(path: Path) -> tuple[str, ...]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise TaskFormatError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(data, list):
        raise TaskFormatError(f"{path}: expected a list of commands")
    out = []
    for item in data:
        command = item.get("command") if isinstance(item, dict) else item
        if not isinstance(command, str):
            raise TaskFormatError(f"{path}: each entry needs a `command` string, got {item!r}")
        out.append(command)
    return tuple(out)


# -- shared helpers ---------------------------------------------------------------------------
def _load_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(f"{path}: invalid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TaskFormatError(f"{path}: cannot read: {e}") from None


_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


def _strip_canary(text: str) -> str:
    """Leading canary lines (data-provenance markers, never shown to agents) and the blank lines
    after them are dropped, as Harbor drops them."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and _CANARY.match(lines[i].strip()):
        i += 1
    while i and i < len(lines) and not lines[i].strip():
        i += 1
    return "\n".join(lines[i:])


def _instruction(path: Path) -> str:
    if not path.is_file():
        raise TaskFormatError(f"{path.parent}: no instruction.md (the task's prompt)")
    data = path.read_bytes()
    if len(data) > INSTRUCTION_LIMIT:
        raise TaskFormatError(f"{path}: larger than {INSTRUCTION_LIMIT // 1024} KiB")
    text = _strip_canary(data.decode("utf-8", errors="replace")).strip()
    if not text:
        raise TaskFormatError(f"{path}: the instruction is empty")
    return text


_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _resolve_env(values: dict[str, str], options: LoadOptions) -> dict[str, str]:
    """``${VAR}`` / ``${VAR:-default}`` resolved from the host, only for variables the dataset lets
    through (:attr:`LoadOptions.pass_env`); others take their default (or nothing)."""

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2) or ""
        return os.environ.get(name, default) if name in options.pass_env else default

    return {str(k): _TEMPLATE.sub(sub, str(v)) for k, v in values.items()}


def _user(value: str | int | None) -> str | None:
    return None if value is None else str(value)


def _unknown_keys(model: BaseModel, prefix: str) -> list[str]:
    out = [f"task.toml: unknown key {prefix}{k!r} ignored" for k in (model.model_extra or {})]
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, _Model) and name not in ("openenv_mcp",):
            out += _unknown_keys(value, f"{prefix}{name}.")
    return out


def _explain(error: ValidationError) -> str:
    parts = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"])
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    return "; ".join(parts)
