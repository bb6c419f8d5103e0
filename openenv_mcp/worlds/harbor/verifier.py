"""Grading a task as Harbor does, and safer: the tests come in only now, from the task folder.

Shared verifier (Harbor's default: the tests run in the agent's container):

1. **Stop the agent.** Every process it left running is killed (the container restarts; its
   files stay), so nothing can write the reward, kill or race the tests (``processes = "keep"``
   opts out, for tasks graded on a service the agent started).
2. **Account for tampering** (:mod:`.tamper`): the engine's diff of the container against its
   image; a changed ``python3``, ``bash`` startup file, fake ``pytest``, a ``/tests`` or
   ``/logs/verifier`` the agent made... scores 0 (``tamper = "report"``: listed only).
3. **Fresh copies**: ``tests/`` is copied from the task folder (never in the image, never
   visible before) into ``/tests``, ``/logs/verifier`` is created empty; a reward file already
   there (say one the image holds) scores 0.
4. **Run** ``test.sh`` as the verifier's user with its ``env``, bounded by ``timeout_sec``. The
   environment given to it keeps Python from reading bytecode caches or the working folder
   (``PYTHONPYCACHEPREFIX``, ``PYTHONSAFEPATH``, ``PYTHONNOUSERSITE``).
5. **Read the reward** where Harbor's verifier writes it: ``/logs/verifier/reward.json`` (an
   object of numbers; its ``reward`` key is the score) first, else ``reward.txt`` (one number).
   Terminal-Bench 1 tasks: pytest's JUnit report (1 when every test passed). No reward file, a
   timeout, an unreadable value: 0, with the reason in ``info``.

Separate verifier (``[verifier] environment_mode = "separate"``): the declared ``artifacts`` and
``/logs/artifacts`` are copied out of the agent's container, which is stopped; a fresh container
of the verifier's image (``[verifier.environment]``, else a new one of the task's own) gets them
back at the same paths, then steps 3-5 run there, with tooling the agent never touched.
"""

from __future__ import annotations

import json
import math
import posixpath
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

import anyio
import anyio.to_thread

from openenv_mcp.errors import BoundaryError, OpenEnvError
from openenv_mcp.isolation.containers.engine import remove
from openenv_mcp.worlds.harbor.archive import folder_tar, single_file_tar
from openenv_mcp.worlds.harbor.container import TaskContainer
from openenv_mcp.worlds.harbor.tamper import findings
from openenv_mcp.worlds.harbor.world import World, create_container, user_ids

__all__ = ["Grade", "grade", "parse_reward_json", "parse_reward_text"]

REWARD_LIMIT = 64 * 1024
OUTPUT_TAIL = 4000
ARTIFACT_LIMIT = 512 * 1024 * 1024
VERIFIER_DIR = "/logs/verifier"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class Grade:
    """The verifier's verdict on one episode."""

    score: float
    reason: str
    """``graded``, or why the score is 0: ``tampered``, ``no reward file``, ``timed out``, ..."""
    rewards: dict[str, float] = field(default_factory=dict)
    exit_code: int | None = None
    seconds: float = 0.0
    output: str = ""
    """The end of the tests' output (grader-only: it is in ``info``, never shown to the agent)."""
    tampered: list[str] = field(default_factory=list)

    def info(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "rewards": self.rewards,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "tampered": self.tampered,
            "output": self.output,
        }


async def grade(world: World) -> Grade:
    """Grade the episode's world once (later calls return the same :class:`Grade`)."""
    if world.grade is not None:
        return world.grade
    started = time.monotonic()
    try:
        if world.task.verifier.mode == "separate":
            verdict = await _separate(world)
        else:
            verdict = await _shared(world)
    except OpenEnvError as e:
        verdict = Grade(0.0, f"verifier error: {e}")
    verdict.seconds = time.monotonic() - started
    world.grade = verdict
    return verdict


async def _shared(world: World) -> Grade:
    task, container = world.task, world.container
    if task.processes == "stop":
        await anyio.to_thread.run_sync(container.restart)
    changes = await anyio.to_thread.run_sync(container.diff)
    tampered = findings(changes, task.agent_may_change)
    if tampered and task.tamper == "enforce":
        return Grade(0.0, "tampered", tampered=tampered)
    verdict = await _run_tests(world, container)
    verdict.tampered = tampered
    return verdict


async def _separate(world: World) -> Grade:
    task = world.task
    source = world.container
    paths = ["/logs/artifacts", *task.artifacts]
    saved = {p: await anyio.to_thread.run_sync(source.get_tree, p, ARTIFACT_LIMIT) for p in paths}
    await anyio.to_thread.run_sync(_stop, source)
    image = world.image
    if task.verifier.environment is not None:
        from openenv_mcp.worlds.harbor.images import ensure_image

        report = await anyio.to_thread.run_sync(
            ensure_image, source.client, task.verifier.environment, task.name, None, "verifier"
        )
        image = report.tag
    verifier = await anyio.to_thread.run_sync(
        create_container, source.client, task, image, world.episode_id, "verifier"
    )
    try:
        for path, archive in saved.items():
            if archive is not None:
                await anyio.to_thread.run_sync(_restore, verifier, path, archive)
        return await _run_tests(world, verifier)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(remove, verifier.handle)


def _stop(container: TaskContainer) -> None:
    try:
        container.handle.stop(timeout=0)
    except Exception as e:  # noqa: BLE001 - a container that is gone is stopped
        if container.running():
            raise BoundaryError(f"cannot stop the agent's container: {e}") from None


def _restore(container: TaskContainer, path: str, archive: bytes) -> None:
    """Put an artifact's archive back at ``path`` (its parent folders made first)."""
    parent = posixpath.dirname(path) or "/"
    ensure_folder(container, parent)
    container.put(parent, archive)


def ensure_folder(container: TaskContainer, path: str, uid: int = 0, gid: int = 0, mode: int = 0o755) -> None:
    """Create folder ``path`` and its missing parents (nothing run inside the container)."""
    if path == "/" or container.stat(path) is not None:
        return
    missing: list[str] = []
    existing = path
    while existing != "/" and container.stat(existing) is None:
        missing.insert(0, posixpath.basename(existing))
        existing = posixpath.dirname(existing) or "/"
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(len(missing)):
            info = tarfile.TarInfo("/".join(missing[: i + 1]))
            info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, mode, uid, gid, int(time.time())
            tar.addfile(info)
    container.put(existing, buf.getvalue())


async def _run_tests(world: World, container: TaskContainer) -> Grade:
    task = world.task
    verifier = task.verifier
    uid, gid = await anyio.to_thread.run_sync(user_ids, container, verifier.user)
    nonce = secrets.token_hex(8)

    def copy_in() -> str | None:
        assert verifier.tests_dir is not None or verifier.extra_files
        tests = folder_tar(verifier.tests_dir, "tests", extra=verifier.extra_files) if verifier.tests_dir else None
        if tests is None:
            ensure_folder(container, "/tests")
            for name, path in verifier.extra_files.items():
                container.put("/tests", single_file_tar(name, path.read_bytes(), 0o755))
        else:
            container.put("/", tests)
        ensure_folder(container, "/logs")
        ensure_folder(container, VERIFIER_DIR, uid, gid)
        for name in ("reward.json", "reward.txt"):
            if container.stat(f"{VERIFIER_DIR}/{name}") is not None:
                return f"{VERIFIER_DIR}/{name} existed before the tests ran"
        return None

    problem = await anyio.to_thread.run_sync(copy_in)
    if problem:
        return Grade(0.0, problem)
    env = _verifier_env(container, verifier.env, nonce, task.verifier.result == "pytest")
    shell = "/bin/bash" if await anyio.to_thread.run_sync(container.has_file, "/bin/bash") else "/bin/sh"
    result = await anyio.to_thread.run_sync(
        lambda: container.exec(
            [shell, f"/tests/{verifier.script}"],
            timeout=verifier.timeout,
            user=verifier.user if verifier.user is not None else "",
            env=env,
            output_bytes=200_000,
        )
    )
    output = (result.stdout + ("\n" + result.stderr if result.stderr else ""))[-OUTPUT_TAIL:]
    if result.timed_out:
        return Grade(0.0, f"timed out after {verifier.timeout:g} s", output=output)
    if task.verifier.result == "pytest":
        verdict = await anyio.to_thread.run_sync(_read_junit, container, f"{VERIFIER_DIR}/junit-{nonce}.xml")
    else:
        verdict = await anyio.to_thread.run_sync(_read_reward, container)
    verdict.exit_code, verdict.output = result.exit_code, output
    return verdict


def _verifier_env(container: TaskContainer, extra: dict[str, str], nonce: str, junit: bool) -> dict[str, str]:
    env = {
        "PATH": container.env.get("PATH", DEFAULT_PATH),
        "TEST_DIR": "/tests",
        "PYTHONPYCACHEPREFIX": f"/tmp/.openenv-verifier-{nonce}",
        "PYTHONSAFEPATH": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **extra,
    }
    if junit:
        env["PYTEST_ADDOPTS"] = f"--junitxml={VERIFIER_DIR}/junit-{nonce}.xml -p no:cacheprovider"
    return env


def _read_reward(container: TaskContainer) -> Grade:
    for name, parse in (("reward.json", parse_reward_json), ("reward.txt", parse_reward_text)):
        got = container.read(f"{VERIFIER_DIR}/{name}", REWARD_LIMIT)
        if got.kind in ("missing", "error"):
            continue
        if got.kind != "file":
            return Grade(0.0, f"{VERIFIER_DIR}/{name} is not a regular file ({got.kind})")
        if got.truncated:
            return Grade(0.0, f"{VERIFIER_DIR}/{name} is larger than {REWARD_LIMIT} bytes")
        try:
            rewards = parse(got.data)
        except ValueError as e:
            return Grade(0.0, f"{VERIFIER_DIR}/{name}: {e}")
        return Grade(rewards["reward"], "graded", rewards=rewards)
    return Grade(0.0, "no reward file (the tests wrote neither reward.json nor reward.txt)")


def parse_reward_text(data: bytes) -> dict[str, float]:
    """``reward.txt``: one number."""
    try:
        value = float(data.decode().strip())
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"not a number: {data[:80]!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return {"reward": value}


def parse_reward_json(data: bytes) -> dict[str, float]:
    """``reward.json``: an object whose numeric values are the rewards; the score is its ``reward``
    key (or its only number)."""
    try:
        parsed = json.loads(data)
    except (UnicodeDecodeError, ValueError):
        raise ValueError("not JSON") from None
    if not isinstance(parsed, dict):
        raise ValueError("expected a JSON object")
    rewards = {
        str(k): float(v)
        for k, v in parsed.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }
    if "reward" not in rewards:
        if len(rewards) != 1:
            raise ValueError(f"no `reward` key among {sorted(rewards)[:10]}")
        rewards["reward"] = next(iter(rewards.values()))
    return rewards


def _read_junit(container: TaskContainer, path: str) -> Grade:
    got = container.read(path, 8 * 1024 * 1024)
    if got.kind != "file" or got.truncated:
        return Grade(0.0, "pytest wrote no report (run-tests.sh did not run pytest, or it crashed)")
    try:
        root = ElementTree.fromstring(got.data)
    except ElementTree.ParseError as e:
        return Grade(0.0, f"pytest's report does not parse: {e}")
    cases = list(root.iter("testcase"))
    failed = [c for c in cases if any(child.tag in ("failure", "error", "skipped") for child in c)]
    passed = len(cases) - len(failed)
    rewards = {"reward": 1.0 if cases and not failed else 0.0, "passed": float(passed), "tests": float(len(cases))}
    return Grade(rewards["reward"], "graded" if cases else "pytest ran no test", rewards=rewards)
