"""A task's image: built once from its ``environment/`` folder, cached under a content-hashed tag.

The tag is ``openenv-mcp/harbor-<task>:<hash>``, where the hash covers every file of the build
context (paths, modes, bytes, link targets), the Dockerfile's name, the build arguments and the
base image's id: an unchanged task is never rebuilt, a changed one always is. The context sent to
the engine is made here (only the context's files; a Terminal-Bench 1 task's tests, solution and
task files are left out), so nothing the agent must not see can reach an image layer.

The base image is a build argument: a Dockerfile declaring ``ARG BASE_IMAGE`` gets
``$OPENENV_MCP_BASE_IMAGE`` (or, when that is unset, the local ``openenv-mcp/base:bookworm`` if the
engine has it), so the same task builds here from the local base and elsewhere from its own
default. Builds are serialized per tag across processes (a lock file), run with a low CPU share,
and bounded by the task's ``build_timeout_sec``. Images are never pulled implicitly.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ConfigError, ImageBuildError
from openenv_mcp.worlds.harbor.archive import folder_tar, walk
from openenv_mcp.worlds.harbor.taskformat import EnvironmentDef

__all__ = ["BuildReport", "base_image", "content_hash", "ensure_image", "image_tag"]

FORMAT = "openenv-mcp/harbor-image/1"
"""Part of every hash: a change of how images are built makes new tags."""
LOCAL_BASE = "openenv-mcp/base:bookworm"
LABEL = "openenv-mcp.harbor"
BUILD_CPU_SHARES = 256
"""The build containers' CPU weight (the default is 1024): builds yield to running episodes."""

Progress = Callable[[str], None]


class BuildReport:
    """What :func:`ensure_image` did: the tag, and whether (and how long) it built."""

    def __init__(self, tag: str, built: bool, seconds: float) -> None:
        self.tag, self.built, self.seconds = tag, built, seconds

    def __repr__(self) -> str:
        return f"BuildReport({self.tag!r}, built={self.built}, seconds={self.seconds:.1f})"


def base_image(client: Any) -> str | None:
    """The ``BASE_IMAGE`` build argument: ``$OPENENV_MCP_BASE_IMAGE`` (empty: none), else the local
    base when the engine has it, else ``None`` (each Dockerfile's own default)."""
    if "OPENENV_MCP_BASE_IMAGE" in os.environ:
        return os.environ["OPENENV_MCP_BASE_IMAGE"] or None
    return LOCAL_BASE if _image_id(client, LOCAL_BASE) else None


def _image_id(client: Any, ref: str) -> str | None:
    import docker.errors

    try:
        return client.images.get(ref).id
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as e:
        raise ImageBuildError(f"cannot inspect image {ref!r}: {e.explanation or e}") from None


_ARG_BASE = re.compile(r"^\s*ARG\s+BASE_IMAGE\b", re.IGNORECASE | re.MULTILINE)


def build_args(env: EnvironmentDef, client: Any) -> dict[str, str]:
    """The build arguments of ``env``'s Dockerfile (``BASE_IMAGE`` when it declares it)."""
    assert env.context is not None
    dockerfile = env.context / env.dockerfile
    text = dockerfile.read_text(errors="replace") if dockerfile.is_file() else ""
    base = base_image(client)
    args = dict(env.build_args)
    if base and _ARG_BASE.search(text) and "BASE_IMAGE" not in args:
        args["BASE_IMAGE"] = base
    return args


def content_hash(env: EnvironmentDef, args: dict[str, str], client: Any) -> str:
    """The hash naming ``env``'s image (see the module doc)."""
    assert env.context is not None
    h = hashlib.sha256(FORMAT.encode())
    h.update(f"\0dockerfile={env.dockerfile}".encode())
    for key in sorted(args):
        image = _image_id(client, args[key]) if key == "BASE_IMAGE" else None
        h.update(f"\0arg {key}={args[key]} id={image or ''}".encode())
    skip = set(env.exclude)
    for path in walk(env.context, skip):
        rel = path.relative_to(env.context).as_posix()
        st = path.lstat()
        if path.is_symlink():
            h.update(f"\0L {rel} {os.readlink(path)}".encode())
        elif path.is_dir():
            h.update(f"\0D {rel}".encode())
        elif path.is_file():
            h.update(f"\0F {rel} {st.st_mode & 0o777:o} {st.st_size}\0".encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def image_tag(task_name: str, digest: str, suffix: str = "") -> str:
    """``openenv-mcp/harbor-<task>[-suffix]:<first 16 hex digits>`` (a valid Docker reference)."""
    slug = re.sub(r"[^a-z0-9]+", "-", task_name.lower()).strip("-")[:60] or "task"
    if suffix:
        slug = f"{slug}-{suffix}"
    return f"openenv-mcp/harbor-{slug}:{digest[:16]}"


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def _build_lock(tag: str) -> Iterator[None]:
    """One build of ``tag`` at a time, in this process (threads) and across processes (a lock file)."""
    with _locks_guard:
        lock = _locks.setdefault(tag, threading.Lock())
    folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "openenv-mcp" / "harbor-locks"
    folder.mkdir(parents=True, exist_ok=True)
    with lock, (folder / (hashlib.sha256(tag.encode()).hexdigest()[:24] + ".lock")).open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_image(
    client: Any, env: EnvironmentDef, task_name: str, progress: Progress | None = None, suffix: str = ""
) -> BuildReport:
    """The image of ``env`` (built now when the engine lacks it): its tag and whether it was built."""
    if env.kind == "image":
        assert env.image is not None
        if not _image_id(client, env.image):
            raise ConfigError(
                f"task {task_name!r}: image {env.image!r} ([environment] docker_image) is not on this Docker "
                f"engine, and images are never pulled implicitly: `docker pull {env.image}` first"
            )
        return BuildReport(env.image, False, 0.0)
    if env.kind != "dockerfile":
        raise ConfigError(f"task {task_name!r}: a {env.kind} environment is built by its compose project")
    args = build_args(env, client)
    tag = image_tag(task_name, content_hash(env, args, client), suffix)
    if _image_id(client, tag):
        return BuildReport(tag, False, 0.0)
    with _build_lock(tag):
        if _image_id(client, tag):  # another process built it while this one waited
            return BuildReport(tag, False, 0.0)
        started = time.monotonic()
        build(client, env, tag, args, task_name, progress)
        return BuildReport(tag, True, time.monotonic() - started)


def build(
    client: Any, env: EnvironmentDef, tag: str, args: dict[str, str], task_name: str, progress: Progress | None
) -> None:
    """``docker build`` of ``env``'s context as ``tag``; :class:`ImageBuildError` with the log's end."""
    import docker.errors

    assert env.context is not None
    if not (env.context / env.dockerfile).is_file():
        raise ConfigError(f"task {task_name!r}: no {env.dockerfile} in {env.context}")
    context = folder_tar(env.context, "", exclude=env.exclude)
    log: list[str] = []
    deadline = time.monotonic() + env.build_timeout
    try:
        stream = client.api.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            dockerfile=env.dockerfile,
            tag=tag,
            buildargs=args,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            timeout=env.build_timeout,
            labels={LABEL: "1", f"{LABEL}.task": task_name},
            container_limits={"cpushares": BUILD_CPU_SHARES},
        )
        for item in stream:
            _record(item, log, progress, task_name)
            if time.monotonic() > deadline:
                raise ImageBuildError(
                    f"task {task_name!r}: the image build passed build_timeout_sec ({env.build_timeout:g} s)"
                )
    except docker.errors.APIError as e:
        log.append(str(e.explanation or e))
        raise ImageBuildError(_failure(task_name, log)) from None
    except ImageBuildError:
        raise
    except Exception as e:  # the engine went away or timed out mid-build
        log.append(f"{type(e).__name__}: {e}")
        raise ImageBuildError(_failure(task_name, log)) from None
    if not _image_id(client, tag):
        raise ImageBuildError(_failure(task_name, log))


def _record(item: dict[str, Any], log: list[str], progress: Progress | None, task_name: str) -> None:
    if "error" in item:
        log.append(str(item.get("error")))
        raise ImageBuildError(_failure(task_name, log))
    text = str(item.get("stream", "")).rstrip()
    if text:
        log.extend(text.splitlines())
        del log[:-60]
        if progress is not None:
            progress(text.splitlines()[-1])


def _failure(task_name: str, log: list[str]) -> str:
    tail = "\n".join(log[-25:])
    return f"the image of task {task_name!r} did not build; the end of the build log:\n{tail}"
