"""Compose tasks: ``environment/docker-compose.yaml`` with a ``main`` service, the agent's container.

Run with the ``docker-compose`` command (v1, what Debian packages; the ``docker compose`` plugin
takes the same arguments) under a project name of the episode's own. Every service that has a
``build`` section is built beforehand by :mod:`.images` (content-hashed, cached, from a context we
make), so ``up`` runs with ``--no-build`` and images are never pulled: a service naming an image
the engine lacks is refused before anything starts. An override file adds, on ``main``, the
``sleep infinity`` command, the fixed hostname, the task's limits and our labels (on every
service), and, when the task has no network, makes every network of the project ``internal``
(services reach each other, nothing reaches out). Harbor's template variables are set: ``CPUS``,
``MEMORY``, ``CONTEXT_DIR``, ``MAIN_IMAGE_NAME``, ``TEST_DIR`` and the log paths
(``HOST_VERIFIER_LOGS_PATH``... point at folders of the episode's own, removed with it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from openenv_mcp.errors import BoundaryError, ConfigError, TaskFormatError
from openenv_mcp.worlds.harbor.images import ensure_image
from openenv_mcp.worlds.harbor.taskformat import EnvironmentDef, TaskDefinition
from openenv_mcp.worlds.harbor.world import DROPPED_CAPABILITIES, HOSTNAME, SLEEP, World, labels, wrap

__all__ = ["ComposeProject", "start_compose"]

COMPOSE = os.environ.get("OPENENV_MCP_COMPOSE", "docker-compose")
LOG_PATHS = {"VERIFIER": "/logs/verifier", "AGENT": "/logs/agent", "ARTIFACTS": "/logs/artifacts"}


class ComposeProject:
    """One episode's compose project (blocking methods)."""

    def __init__(self, task: TaskDefinition, episode_id: str) -> None:
        env = task.environment
        assert env.compose_file is not None and env.context is not None
        self.task = task
        self.name = f"openenv-harbor-{episode_id[:12].lower()}"
        self.folder = Path(tempfile.mkdtemp(prefix="openenv-mcp-compose-"))
        self.override = self.folder / "override.yaml"
        self.files = ["-f", str(env.compose_file), "-f", str(self.override)]
        self.episode_id = episode_id
        self.variables: dict[str, str] = {}
        self.up_done = False

    def command(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        argv = [COMPOSE, "-p", self.name, "--project-directory", str(self.task.environment.context), *self.files, *args]
        try:
            return subprocess.run(
                argv,
                env={**os.environ, **self.variables},
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError:
            raise ConfigError(
                f"task {self.task.name!r} is a compose task: install docker-compose (Debian: apt-get install "
                "docker-compose) or set OPENENV_MCP_COMPOSE to the command"
            ) from None
        except subprocess.TimeoutExpired:
            raise BoundaryError(
                f"task {self.task.name!r}: `{COMPOSE} {args[0]}` took longer than {timeout:g} s"
            ) from None

    def up(self) -> None:
        result = self.command("up", "-d", "--no-build", "--remove-orphans", timeout=self.task.environment.build_timeout)
        self.up_done = True
        if result.returncode != 0:
            raise BoundaryError(f"task {self.task.name!r}: `{COMPOSE} up` failed: {result.stderr.strip()[-800:]}")

    def down(self) -> None:
        """Stop and remove the project (containers, networks, volumes) and its folders; never raises."""
        try:
            if self.up_done:
                self.command("down", "-v", "--remove-orphans", "-t", "0", timeout=120)
        except Exception:  # noqa: BLE001 - the reaper removes what is left (our labels)
            pass
        shutil.rmtree(self.folder, ignore_errors=True)

    def main_handle(self, client: Any) -> Any:
        found = client.containers.list(
            filters={"label": [f"com.docker.compose.project={self.name}", "com.docker.compose.service=main"]}
        )
        if not found:
            raise BoundaryError(f"task {self.task.name!r}: the compose project has no running `main` container")
        return found[0]


def read_services(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise TaskFormatError(f"{path}: invalid YAML: {e}") from None
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or "main" not in services:
        raise TaskFormatError(f"{path}: a compose task needs a `main` service (the agent's container)")
    return {"services": services, "networks": data.get("networks") or {}}


def _service_env(task: TaskDefinition, name: str, build: Any) -> EnvironmentDef:
    """The build of one service as an :class:`EnvironmentDef` (context relative to the compose file)."""
    base = task.environment
    assert base.compose_file is not None
    if isinstance(build, str):
        build = {"context": build}
    context = (base.compose_file.parent / str(build.get("context", "."))).resolve()
    args = build.get("args") or {}
    if isinstance(args, list):
        args = dict(str(a).split("=", 1) for a in args if "=" in str(a))
    return replace(
        base,
        kind="dockerfile",
        context=context,
        dockerfile=str(build.get("dockerfile", "Dockerfile")),
        build_args={str(k): str(v) for k, v in args.items()},
        compose_file=None,
    )


def prepare(client: Any, task: TaskDefinition, project: ComposeProject) -> str:
    """Build the project's images, write the override file and the template variables; ``main``'s image."""
    import yaml

    env = task.environment
    assert env.compose_file is not None and env.context is not None
    spec = read_services(env.compose_file)
    images: dict[str, str] = {}
    for name, service in spec["services"].items():
        service = service or {}
        build = service.get("build")
        if build is None and name == "main" and "image" not in service:
            build = {"context": str(env.context), "dockerfile": "Dockerfile"}
        if build is not None:
            images[name] = ensure_image(client, _service_env(task, name, build), task.name, suffix=name).tag
        elif isinstance(service.get("image"), str) and not _has_image(client, service["image"]):
            raise ConfigError(
                f"task {task.name!r}: service {name!r} uses image {service['image']!r}, which this engine lacks "
                f"(images are never pulled implicitly): `docker pull {service['image']}` first"
            )
    main_image = images.get("main") or str(spec["services"]["main"].get("image"))
    logs = {}
    for key, inside in LOG_PATHS.items():
        host = project.folder / key.lower()
        host.mkdir(mode=0o777)
        os.chmod(host, 0o777)
        logs[f"HOST_{key}_LOGS_PATH" if key != "ARTIFACTS" else "HOST_ARTIFACTS_PATH"] = str(host)
        logs[f"ENV_{key}_LOGS_PATH" if key != "ARTIFACTS" else "ENV_ARTIFACTS_PATH"] = inside
    project.variables = {
        "CPUS": f"{env.resources.cpus:g}",
        "MEMORY": f"{env.resources.memory_mb}M",
        "CONTEXT_DIR": str(env.context),
        "MAIN_IMAGE_NAME": main_image,
        "TEST_DIR": "/tests",
        **logs,
    }
    project.override.write_text(yaml.safe_dump(_override(task, spec, images, project.episode_id)))
    return main_image


def _override(task: TaskDefinition, spec: dict[str, Any], images: dict[str, str], episode_id: str) -> dict[str, Any]:
    env = task.environment
    services: dict[str, Any] = {}
    for service in spec["services"]:
        entry: dict[str, Any] = {"labels": labels(episode_id, f"compose-{service}")}
        if service in images:
            entry["image"] = images[service]
        services[service] = entry
    services["main"].update(
        command=SLEEP,
        hostname=HOSTNAME,
        mem_limit=f"{env.resources.memory_mb}m",
        memswap_limit=f"{env.resources.memory_mb}m",
        cpus=env.resources.cpus,
        pids_limit=env.resources.pids,
        cap_drop=DROPPED_CAPABILITIES,
        security_opt=["no-new-privileges"],
    )
    services["main"]["labels"] = labels(episode_id, "agent")
    out: dict[str, Any] = {"services": services}
    if env.network == "none":
        out["networks"] = {n: {"internal": True} for n in ["default", *spec["networks"]]}
    return out


def _has_image(client: Any, ref: str) -> bool:
    import docker.errors

    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


async def start_compose(client: Any, task: TaskDefinition, episode_id: str) -> World:
    """Bring the task's compose project up for one episode; the world's container is ``main``."""
    project = ComposeProject(task, episode_id)
    try:
        image = await anyio.to_thread.run_sync(prepare, client, task, project)
        await anyio.to_thread.run_sync(project.up)
        handle = await anyio.to_thread.run_sync(project.main_handle, client)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(project.down)
        raise
    world = World(episode_id, task, image, wrap(client, handle, task), compose=project)
    return world
