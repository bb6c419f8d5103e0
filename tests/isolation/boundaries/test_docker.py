"""The docker boundary: a container per episode's tool server, locked down, removed on close.

Every containment case runs the shared hostile server (``tests/fixtures/hostile_server.py``,
standard library only) inside the ``openenv-mcp/tools`` image with
``--network none``, a read-only root and an unprivileged user. Each case ends
contained, with a clear error, the environment still answering, and no
container (listed by label) and no process (found by marker) left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import anyio
import pytest

import openenv_mcp
from openenv_mcp import BoundaryError, CallTool, EnvSpec, ToolServerSpec
from openenv_mcp.testing import need

from support import ROOT, need_docker
from support.containment import FIXTURE, IS_ROOT, Listener, assert_no_leak, call, marked_processes, world_dir

IMAGE = "openenv-mcp/tools"
pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def image() -> str:
    """The tools image, built (layers cached) from docker/tools.Dockerfile."""
    need_docker("tools")
    return IMAGE


def containers(episode: str | None = None) -> list:
    """Our containers (of one episode), once closed ones are removed (that runs in the background)."""
    from openenv_mcp.isolation.boundaries.docker import list_containers, wait_removed

    assert wait_removed(30)
    return list_containers(episode)


def docker_spec(tmp_path: Path, *flags: str, image: str = IMAGE, **limits) -> tuple[EnvSpec, str]:
    """An env of the hostile server in a container, and its process marker."""
    marker = f"openenv-mcp-test-{uuid.uuid4().hex}"
    seed = tmp_path / f"seed-{marker[-8:]}"
    seed.mkdir()
    shutil.copy(FIXTURE, seed / "hostile_server.py")
    server = ToolServerSpec(
        name="h",
        namespace="",
        isolation="docker",
        workspace=seed.name,
        limits=limits,
        command=["python3", "{workspace}/hostile_server.py", "--marker", marker, *flags],
    )
    if image != IMAGE:
        server = server.model_copy(update={"image": image, "command": None})
    spec = EnvSpec(name="hostile-docker", max_steps=None, tool_servers=[server], base_dir=tmp_path)
    return spec, marker


def docker_env(
    tmp_path: Path, *flags: str, image: str = IMAGE, options: dict | None = None, **limits
) -> tuple[openenv_mcp.Env, str]:
    """A sync Env around the hostile server in a container (``options`` go to ``make``), and its marker."""
    spec, marker = docker_spec(tmp_path, *flags, image=image, **limits)
    return openenv_mcp.make(spec, **(options or {})), marker


def episode_id(env: openenv_mcp.Env) -> str:
    return env.unwrapped.episode.id


def owned() -> list:
    """Containers this test process started (any episode), running or not."""
    import socket

    from openenv_mcp.isolation.boundaries.docker import LABEL, list_containers, wait_removed

    assert wait_removed(30)
    me = f"{socket.gethostname()}:{os.getpid()}:"  # the documented owner label: <host>:<pid>:<start time>
    return [c for c in list_containers() if c.labels.get(f"{LABEL}.owner", "").startswith(me)]


def assert_clean(marker: str) -> None:
    """No container of ours and no process of the test server is left."""
    assert owned() == []
    assert_no_leak(marker)


# -- sessions and configuration ------------------------------------------------------------
def test_one_persistent_session_per_episode_and_a_fresh_container_after_reset(image, tmp_path):
    env, marker = docker_env(tmp_path)
    with env:
        env.reset(seed=0)
        first = episode_id(env)
        assert len(containers(first)) == 1
        assert call(env, "counter") == ("1", False)
        assert call(env, "counter") == ("2", False)
        env.reset(seed=1)
        assert containers(first) == []
        assert len(containers(episode_id(env))) == 1
        assert call(env, "counter") == ("1", False)
    assert_clean(marker)


def test_the_container_is_locked_down(image, tmp_path):
    env, marker = docker_env(tmp_path, memory_mb=256, processes=32)
    with env:
        env.reset(seed=0)
        (container,) = containers(episode_id(env))
        host = container.attrs["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["ReadonlyRootfs"] is True
        assert host["Memory"] == host["MemorySwap"] == 256 * 1024 * 1024
        assert host["PidsLimit"] == 32
        assert host["NanoCpus"] == 1_000_000_000
        assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges"]
        assert "/tmp" in host["Tmpfs"]
        assert container.labels["openenv-mcp.episode"] == episode_id(env)
        assert container.labels["openenv-mcp.server"] == "h"
        who = json.loads(call(env, "whoami")[0])
        assert who["cwd"] == "/workspace"
        assert who["uid"] == (65534 if IS_ROOT else os.getuid())
        assert json.loads(call(env, "list_dir", path="/workspace")[0]) == ["hostile_server.py"]
        environ = json.loads(call(env, "environ")[0])
        assert "HOST_ONLY" not in environ and environ["HOME"] == "/tmp"
    assert_clean(marker)


def test_workspace_is_shared_with_the_host_and_reseeded_on_reset(image, tmp_path):
    env, marker = docker_env(tmp_path)
    with env:
        env.reset(seed=0)
        assert call(env, "write_file", path="/workspace/out.txt", text="made inside") == ("written", False)
        assert (env.unwrapped.episode.workspace.path / "out.txt").read_text() == "made inside"
        env.reset(seed=1)
        assert json.loads(call(env, "list_dir", path=".")[0]) == ["hostile_server.py"]
    assert_clean(marker)


# -- containment -------------------------------------------------------------------------
def test_a_host_secret_outside_the_workspace_cannot_be_read(image, tmp_path):
    with world_dir() as folder:
        secret = folder / "secret.txt"
        secret.write_text("host secret")
        secret.chmod(0o644)
        env, marker = docker_env(tmp_path)
        with env:
            env.reset(seed=0)
            assert call(env, "read_file", path=str(secret)) == (
                f"FileNotFoundError: [Errno 2] No such file or directory: '{secret}'",
                True,
            )
            text, error = call(env, "read_file", path="/etc/shadow")
            assert error and text == "PermissionError: [Errno 13] Permission denied: '/etc/shadow'"
            assert call(env, "counter") == ("1", False)
        assert_clean(marker)


def test_writes_outside_the_workspace_are_refused_or_stay_in_the_container(image, tmp_path):
    with world_dir() as folder:
        env, marker = docker_env(tmp_path)
        with env:
            env.reset(seed=0)
            assert call(env, "write_file", path="/etc/evil", text="x") == (
                "OSError: [Errno 30] Read-only file system: '/etc/evil'",
                True,
            )
            assert call(env, "write_file", path=str(folder / "evil"), text="x") == (
                f"FileNotFoundError: [Errno 2] No such file or directory: '{folder / 'evil'}'",
                True,
            )
            # /tmp is the container's own tmpfs: writable, never the host's /tmp
            assert call(env, "write_file", path="/tmp/scratch", text="x") == ("written", False)
            assert call(env, "counter") == ("1", False)
        assert list(folder.iterdir()) == []
        assert not Path("/tmp/scratch").exists() or Path("/tmp/scratch").read_text() != "x"
        assert_clean(marker)


def test_a_host_loopback_listener_is_unreachable(image, tmp_path):
    listener = Listener()
    try:
        env, marker = docker_env(tmp_path)
        with env:
            env.reset(seed=0)
            assert call(env, "connect", host="127.0.0.1", port=listener.port) == (
                "ConnectionRefusedError: [Errno 111] Connection refused",
                True,
            )
            assert call(env, "connect", host="172.17.0.1", port=listener.port) == (
                "OSError: [Errno 101] Network is unreachable",
                True,
            )
            assert call(env, "counter") == ("1", False)
        assert not listener.connected.is_set()
    finally:
        listener.close()
    assert_clean(marker)


def test_a_fork_bomb_hits_the_pids_limit_and_dies_with_the_container(image, tmp_path):
    env, marker = docker_env(tmp_path, processes=16)
    with env:
        env.reset(seed=0)
        text, error = call(env, "fork_bomb")
        assert not error and text.startswith("fork failed after ")
        assert text.endswith("children: Resource temporarily unavailable")
        assert int(text.split()[3]) < 16
        assert call(env, "counter") == ("1", False)
        assert len(marked_processes(marker)) > 5
    assert_clean(marker)


def test_a_memory_bomb_is_killed_at_the_memory_limit_and_the_server_restarts(image, tmp_path):
    env, marker = docker_env(tmp_path, memory_mb=128)
    with env:
        env.reset(seed=0)
        text, error = call(env, "memory_bomb")
        assert error
        assert text.startswith(
            "Tool 'memory_bomb' failed: tool server 'h' was killed at its memory limit (128 MB) "
            "during the call; it is restarted on the next call"
        )
        assert call(env, "counter") == ("1", False)
        assert len(containers(episode_id(env))) == 1
    assert_clean(marker)


def test_a_containers_memory_backed_folders_and_files_are_capped_by_tmpfs_mb_and_file_mb(image, tmp_path):
    env, marker = docker_env(tmp_path, tmpfs_mb=4, file_mb=8)
    with env:
        env.reset(seed=0)
        six = "x" * (6 << 20)
        for folder in ("/tmp", "/var/tmp", "/dev/shm"):  # /run is a capped tmpfs too, not writable by the user
            assert call(env, "write_file", path=f"{folder}/fill", text=six) == (
                "OSError: [Errno 28] No space left on device",
                True,
            ), folder
        assert call(env, "write_file", path="/workspace/six", text=six) == ("written", False)
        assert call(env, "write_file", path="/workspace/nine", text="x" * (9 << 20)) == (
            "OSError: [Errno 27] File too large",
            True,
        )
        assert call(env, "counter") == ("1", False)
    assert_clean(marker)


def test_an_infinite_loop_times_out_and_the_container_is_replaced(image, tmp_path):
    env, marker = docker_env(tmp_path, options={"call_timeout": 1})
    with env:
        env.reset(seed=0)
        (before,) = containers(episode_id(env))
        assert call(env, "spin") == ("Tool 'spin' timed out after 1 s", True)
        (after,) = containers(episode_id(env))  # started right away, not by the next call
        assert call(env, "counter") == ("1", False)
        assert after.id != before.id
    assert_clean(marker)


def test_a_crash_is_a_clear_error_and_the_next_call_restarts(image, tmp_path):
    env, marker = docker_env(tmp_path)
    with env:
        env.reset(seed=0)
        assert call(env, "counter") == ("1", False)
        assert call(env, "crash") == (
            "Tool 'crash' failed: tool server 'h' exited with code 3 during the call; it is restarted on the next call",
            True,
        )
        assert call(env, "counter") == ("1", False)
    assert_clean(marker)


def test_huge_output_is_cut_with_a_marker_or_ends_the_session(image, tmp_path):
    from openenv_mcp.isolation.transport.mcpsession import truncation_marker

    env, marker = docker_env(tmp_path, output_bytes=100_000)
    with env:
        env.reset(seed=0)
        text, error = call(env, "big_output", size=150_000)
        assert not error and text.startswith("x" * 100_000)
        assert text.endswith(truncation_marker(100_000, 150_000))
        text, error = call(env, "big_output", size=5_000_000)
        assert (text, error) == (
            "Tool 'big_output' failed: tool server 'h' wrote a message over 265536 bytes to "
            "stdout (limit: 2 x output_bytes + 64 KiB) during the call; it is restarted on "
            "the next call",
            True,
        )
        assert call(env, "counter") == ("1", False)
    assert_clean(marker)


def test_garbage_on_stdout_is_a_clear_error(image, tmp_path):
    env, marker = docker_env(tmp_path)
    with env:
        env.reset(seed=0)
        assert call(env, "garbage") == (
            "Tool 'garbage' failed: tool server 'h' wrote non-JSON-RPC output to stdout: 'this is not JSON-RPC' "
            "during the call; it is restarted on the next call",
            True,
        )
        assert call(env, "counter") == ("1", False)
    assert_clean(marker)


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (
            "--exit-early",
            "tool server 'h' exited with code 7 before answering initialize; stderr: hostile: exiting early on purpose",
        ),
        ("--hang-init", "tool server 'h' did not answer initialize within 3 s"),
    ],
)
def test_a_server_that_fails_to_start_is_a_boundary_error(image, tmp_path, flag, message):
    env, marker = docker_env(tmp_path, flag, start_timeout=3)
    with env, pytest.raises(BoundaryError) as info:
        env.reset(seed=0)
    assert str(info.value) == message
    assert_clean(marker)


def test_a_missing_image_says_how_to_build_it(image, tmp_path):
    env, _ = docker_env(tmp_path, image="openenv-mcp/does-not-exist:1")
    with env, pytest.raises(BoundaryError) as info:
        env.reset(seed=0)
    assert str(info.value) == (
        "tool server 'h': image 'openenv-mcp/does-not-exist:1' is not on this Docker engine (images are never "
        "pulled implicitly): build it, e.g. `docker build -f docker/tools.Dockerfile -t openenv-mcp/tools .`, "
        "or `docker pull openenv-mcp/does-not-exist:1`"
    )


def test_an_image_entrypoint_serves_stdio(image):
    spec = EnvSpec(
        name="echo-docker", max_steps=None, tool_servers=[ToolServerSpec(name="echo", namespace="", image=IMAGE)]
    )
    with openenv_mcp.make(spec) as env:
        obs = env.reset(seed=0)
        assert [t.name for t in obs.tools] == ["echo"]
        result = env.step(CallTool(name="echo", arguments={"text": "from a container"})).result
        assert result.structured_content == {"result": "from a container"} and not result.is_error
        episode = episode_id(env)
    assert containers(episode) == []


def test_an_http_entrypoint_on_an_internal_network(image, tmp_path):
    import docker

    client = docker.from_env()
    tag = "openenv-mcp/tools-http:test"
    (tmp_path / "Dockerfile").write_text(
        f'FROM {IMAGE}\nCMD ["fastmcp", "run", "/app/openenv_mcp/tool_servers/echo.py:server", "--transport", "http", '
        '"--host", "0.0.0.0", "--port", "8000", "--no-banner"]\n'
    )
    client.images.build(path=str(tmp_path), tag=tag, rm=True)
    spec = EnvSpec(
        name="echo-http",
        max_steps=None,
        tool_servers=[
            ToolServerSpec(name="echo", namespace="", image=tag, transport="http", limits={"start_timeout": 60})
        ],
    )
    with openenv_mcp.make(spec) as env:
        env.reset(seed=0)
        (container,) = containers(episode_id(env))
        assert list(container.attrs["NetworkSettings"]["Networks"]) == ["openenv-mcp-internal"]
        assert client.networks.get("openenv-mcp-internal").attrs["Internal"] is True
        result = env.step(CallTool(name="echo", arguments={"text": "over http"})).result
        assert result.structured_content == {"result": "over http"}
        episode = episode_id(env)
    assert containers(episode) == []


def test_containers_of_a_dead_owner_are_reaped(image):
    import docker
    from openenv_mcp.isolation.boundaries.docker import reap

    dead = subprocess.Popen(["true"])
    dead.wait()
    owner = f"{os.uname().nodename}:{dead.pid}"
    client = docker.from_env()
    container = client.containers.create(
        IMAGE,
        ["sleep", "60"],
        network_mode="none",
        labels={"openenv-mcp": "1", "openenv-mcp.episode": "orphan", "openenv-mcp.owner": owner},
    )
    try:
        assert len(containers("orphan")) == 1
        assert reap() >= 1
        assert containers("orphan") == []
    finally:
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass


def test_concurrent_episodes_get_their_own_containers(image, tmp_path):
    async def main() -> list[str]:
        spec, _ = docker_spec(tmp_path)
        envs = [openenv_mcp.make_async(spec) for _ in range(3)]
        try:
            async with anyio.create_task_group() as tg:
                for env in envs:
                    tg.start_soon(env.reset)
            ids = [env.episode.id for env in envs]
            assert len({c.id for i in ids for c in containers(i)}) == 3
            for env in envs:
                result = (await env.step(CallTool(name="counter", arguments={}))).result
                assert result.content[0].text == "1"
            return ids
        finally:
            for env in envs:
                await env.close()

    started = time.monotonic()
    ids = anyio.run(main)
    assert time.monotonic() - started < 120
    for i in ids:
        assert containers(i) == []


def test_run_command_executes_inside_the_container(image, tmp_path):
    env, marker = docker_env(tmp_path)
    with env:
        env.reset(seed=0)
        conn = env.unwrapped.episode.connections[0]

        async def run(argv, timeout=10.0):
            return await conn.run_command(argv, {"EXTRA": "yes"}, timeout)

        code, out, err = env.run_async(run, ["sh", "-c", "echo $EXTRA; id -u; pwd; ls {workspace}"])
        assert (code, err) == (0, "")
        assert out.split() == ["yes", str(65534 if IS_ROOT else os.getuid()), "/workspace", "hostile_server.py"]
        code, _, _ = env.run_async(run, ["sleep", "30"], 1.0)
        assert code == 137
    assert_clean(marker)


def test_a_warm_pool_of_containers_is_removed_with_the_environment(image, tmp_path):
    env, marker = docker_env(tmp_path, options={"warm_pool": 2})
    with env:
        env.reset(seed=0)
        assert call(env, "counter") == ("1", False)
        assert env.run_async(env.unwrapped.environment.warm_up)
        assert len(owned()) == 3  # the episode's container and two ready ones
        env.reset(seed=1)
        assert call(env, "counter") == ("1", False)
    assert_clean(marker)


CRASHING_OWNER = """
import sys, tempfile
from pathlib import Path
import anyio
from openenv_mcp.isolation import ServerContext, connect
from openenv_mcp.definitions.spec import ToolServerSpec

async def main():
    spec = ToolServerSpec(name="echo", command=["python", "-m", "openenv_mcp.tool_servers.echo"], isolation="docker")
    conn = connect(spec, ServerContext(episode_id=sys.argv[1], workspace=Path(tempfile.mkdtemp())))
    await conn.start()
    print("started", flush=True)
    await anyio.sleep(3600)

anyio.run(main)
"""


def test_a_killed_environment_process_leaves_nothing_running_and_is_reaped(image):
    import sys

    from openenv_mcp.isolation.boundaries.docker import reap

    episode = f"crash-{uuid.uuid4().hex[:8]}"
    owner = subprocess.Popen([sys.executable, "-c", CRASHING_OWNER, episode], stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert owner.stdout.readline() == b"started\n"
        assert [c.status for c in containers(episode)] == ["running"]
    finally:
        owner.kill()
        owner.wait()
    # its stdin closed with the attach connection: the server read EOF and exited
    deadline = time.monotonic() + 20
    while [c.status for c in containers(episode)] != ["exited"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [c.status for c in containers(episode)] == ["exited"]
    assert reap() >= 1
    assert containers(episode) == []


def test_without_the_docker_sdk_the_error_says_what_to_install(monkeypatch, tmp_path):
    import sys

    import openenv_mcp.isolation.boundaries.docker as backend
    from openenv_mcp import ConfigError

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")  # an engine not reached yet
    monkeypatch.setitem(sys.modules, "docker", None)  # import docker -> ImportError
    with pytest.raises(ConfigError) as info:
        backend.docker_client()
    assert str(info.value) == "isolation 'docker' needs the Docker SDK for Python: pip install 'openenv-mcp[docker]'"


def test_an_unreachable_engine_says_how_to_start_it(monkeypatch, tmp_path):
    try:
        import docker  # noqa: F401 - a dev dependency; without it the test above applies
    except ImportError:
        need(False, "the Docker SDK is missing: pip install 'openenv-mcp[docker]'")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    env, _ = docker_env(tmp_path)
    with env, pytest.raises(BoundaryError) as info:
        env.reset(seed=0)
    text = str(info.value)
    assert text.startswith(f"cannot reach the Docker engine (unix://{tmp_path}/no-engine.sock): ")
    assert text.endswith(". Start it (e.g. `dockerd &`, or .ci/docker-setup.sh) or set DOCKER_HOST")


def _without_library_meta(tool: dict) -> dict:
    """A tool without FastMCP's own ``_meta.fastmcp`` (tags): a standalone FastMCP server (the one in the
    container) lists it, an in-process one's faces do not (fidelity's "in-process.meta" difference)."""
    meta = {k: v for k, v in tool.pop("_meta", {}).items() if k != "fastmcp"}
    return {**tool, **({"_meta": meta} if meta else {})}


@pytest.mark.anyio
async def test_the_files_environment_in_docker_gives_the_in_process_results(image):
    from openenv_mcp.client.registry import load_environment
    from openenv_mcp.core.environment import Environment

    inprocess = load_environment("files")
    spec = inprocess.spec.model_copy(
        update={
            "tool_servers": [
                ToolServerSpec(
                    name="fs",
                    isolation="docker",
                    command=[
                        "python",
                        "-m",
                        "openenv_mcp.tool_servers.filesystem",
                        "--root",
                        "{workspace}",
                        "--namespace",
                        "",
                    ],
                )
            ]
        }
    )
    docker = Environment(spec)

    async def trace(environment, task):
        episode = await environment.new_episode(seed=0, task_id=task.id)
        try:
            out = [[_without_library_meta(t.model_dump(by_alias=True, exclude_none=True)) for t in episode.tools]]
            for action in environment.trajectory(task, "reference"):
                obs = await episode.act(action)
                out.append((obs.result.model_dump(by_alias=True, exclude_none=True), obs.reward, obs.done))
            return out
        finally:
            await episode.close()

    for task in inprocess.tasks.tasks[:3]:
        expected = await trace(inprocess, task)
        assert expected[-1][1:] != (0.0, False)
        assert await trace(docker, task) == expected, task.id


def test_a_closed_episodes_container_is_removed_even_when_the_engine_is_slow(image, tmp_path, monkeypatch):
    import docker.models.containers
    import requests

    real_remove = docker.models.containers.Container.remove
    failures = {"left": 3}

    def slow_engine(self, **kwargs):  # the engine times out on the first removals, as a busy one does
        if failures["left"] > 0:
            failures["left"] -= 1
            raise requests.exceptions.ReadTimeout("UnixHTTPConnectionPool: Read timed out. (read timeout=60)")
        return real_remove(self, **kwargs)

    monkeypatch.setattr(docker.models.containers.Container, "remove", slow_engine)
    env, marker = docker_env(tmp_path)
    with env:
        env.reset(seed=0)
        episode = episode_id(env)
        assert call(env, "counter") == ("1", False)
        assert len(containers(episode)) == 1
    assert containers(episode) == []
    assert failures["left"] == 0
    assert_clean(marker)


def test_a_container_removed_while_listing_does_not_break_the_listing_or_the_reaping(image, monkeypatch):
    """Another environment server on the host removes its container between the engine's list and the
    SDK's inspect of it: the listing skips it, and the reaping at a server's first start goes on."""
    import docker.models.containers

    import docker
    from openenv_mcp.isolation.containers.engine import list_containers, reap

    client = docker.from_env()
    labels = {"openenv-mcp": "1", "openenv-mcp.episode": f"gone-{uuid.uuid4().hex[:8]}"}
    going = client.containers.create(IMAGE, ["sleep", "60"], network_mode="none", labels=labels)
    real_get = docker.models.containers.ContainerCollection.get

    def removed_by_its_owner_meanwhile(self, container_id):
        if container_id == going.id:
            going.remove(force=True)
        return real_get(self, container_id)

    monkeypatch.setattr(docker.models.containers.ContainerCollection, "get", removed_by_its_owner_meanwhile)
    try:
        assert going.id not in [c.id for c in list_containers()]
        assert reap() >= 0
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            going.remove(force=True)
