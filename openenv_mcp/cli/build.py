"""``openenv-mcp build ENV``: the environment package's wheel and its Docker image.

ENV is an environment name (installed from a source folder, e.g. ``pip install -e ./NAME``) or the path of
the package's folder (the one holding pyproject.toml). The wheel goes to ``dist/``; the image is built from
the package's Dockerfile (``openenv-mcp init`` writes one) with the ``BASE_IMAGE`` build argument.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from openenv_mcp.errors import BuildError, ConfigError

__all__ = ["Project", "add_parser", "build_image", "build_wheel", "find_project", "local_source", "run"]

DEFAULT_BASE_IMAGE = "python:3.11-slim"


@dataclass
class Project:
    """An environment package's source folder."""

    root: Path
    name: str  # distribution name
    version: str
    env_name: str

    @property
    def image(self) -> str:
        return f"{self.name}:{self.version}"


def find_project(target: str) -> Project:
    """The source folder of environment ``target`` (a name, or a path to the package or its env.toml)."""
    from openenv_mcp.client.registry import find_env

    path = Path(target)
    if path.is_dir() and (path / "pyproject.toml").is_file():
        root = path.resolve()
        env_name = _env_name_of(root)
    else:
        spec = find_env(target)
        env_name = spec.name
        root = next(
            (d for d in [Path(spec.base_dir), *Path(spec.base_dir).parents] if (d / "pyproject.toml").is_file()), None
        )  # type: ignore[assignment]
        if root is None:
            raise ConfigError(
                f"environment {env_name!r} at {str(spec.base_dir)!r} has no package source "
                "(no pyproject.toml above it): give the path of its package folder, "
                "e.g. `openenv-mcp build ./my-env`"
            )
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
        return Project(root=root, name=project["name"], version=str(project.get("version", "0")), env_name=env_name)
    except (KeyError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{root / 'pyproject.toml'}: no [project] name/version ({e})") from None


def _env_name_of(root: Path) -> str:
    data = tomllib.loads((root / "pyproject.toml").read_text())
    eps = data.get("project", {}).get("entry-points", {}).get("openenv_mcp.envs", {})
    if len(eps) != 1:
        raise ConfigError(
            f"{root / 'pyproject.toml'} registers {len(eps)} environments in the entry-point group "
            "openenv_mcp.envs; build needs exactly one (give its name instead)"
        )
    return next(iter(eps))


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc.stdout


def build_wheel(root: Path, outdir: Path) -> Path:
    """Build the wheel of the project at ``root`` into ``outdir`` (``python -m build``, else ``pip wheel``)."""
    outdir.mkdir(parents=True, exist_ok=True)
    before = set(outdir.glob("*.whl"))
    try:
        import build  # noqa: F401  (the `publish` extra)

        cmd = [sys.executable, "-m", "build", "--wheel", "--outdir", str(outdir), str(root)]
    except ImportError:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(outdir), str(root)]
    _run(cmd, f"building the wheel of {root}")
    new = sorted(set(outdir.glob("*.whl")) - before, key=lambda p: p.stat().st_mtime)
    if new:
        return new[-1]
    name = tomllib.loads((root / "pyproject.toml").read_text())["project"]["name"].replace("-", "_").lower()
    built = sorted(outdir.glob(f"{name}-*.whl"), key=lambda p: p.stat().st_mtime)
    if not built:
        raise BuildError(f"building the wheel of {root} wrote no wheel into {outdir}")
    return built[-1]


def local_source(dist: str = "openenv-mcp") -> Path | None:
    """The local folder or wheel file ``dist`` was installed from (None when it came from an index)."""
    try:
        raw = metadata.distribution(dist).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    url = json.loads(raw).get("url", "") if raw else ""
    if not url.startswith("file://"):
        return None
    path = Path(unquote(url[len("file://") :]))
    if path.is_dir() and (path / "pyproject.toml").is_file():
        return path
    return path if path.is_file() and path.suffix == ".whl" else None


def _local_dependency_wheel(dist: Path) -> Path | None:
    """Put the wheel of a locally installed openenv-mcp into ``dist`` (an index may not have it)."""
    source = local_source()
    if source is None:
        return None
    if source.is_file():
        shutil.copy2(source, dist / source.name)
        return dist / source.name
    return build_wheel(source, dist)


def build_image(project: Project, base_image: str, tag: str | None = None) -> str:
    """Build the project's Dockerfile (context: its folder, wheels in dist/) as ``tag``; return the tag."""
    if not (project.root / "Dockerfile").is_file():
        raise ConfigError(f"{project.root} has no Dockerfile (openenv-mcp init writes one)")
    if shutil.which("docker") is None:
        raise BuildError("the docker CLI is not on PATH: install Docker, or build only the wheel with --no-image")
    tag = tag or project.image
    env = {**os.environ, "DOCKER_BUILDKIT": os.environ.get("DOCKER_BUILDKIT", "0")}
    cmd = ["docker", "build", "-q", "--build-arg", f"BASE_IMAGE={base_image}", "-t", tag, str(project.root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise BuildError(f"building the image {tag} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return tag


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "build",
        help="build an environment package's wheel and Docker image",
        description="Build the wheel (into the package's dist/) and the Docker image of an "
        "environment package, and print how to run both.",
    )
    p.add_argument("env", help="environment name (installed from its source folder) or the package folder")
    p.add_argument(
        "--base-image",
        default=os.environ.get("BASE_IMAGE", DEFAULT_BASE_IMAGE),
        help=f"BASE_IMAGE build argument (default: $BASE_IMAGE or {DEFAULT_BASE_IMAGE})",
    )
    p.add_argument("--tag", default=None, help="image tag (default: NAME:VERSION)")
    p.add_argument("--no-image", action="store_true", help="only the wheel")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console()
    project = find_project(args.env)
    dist = project.root / "dist"
    with console.status(f"building the wheel of {project.name}"):
        wheel = build_wheel(project.root, dist)
        local = None if args.no_image else _local_dependency_wheel(dist)  # the image's pip may not find it
    console.print(f"[green]wheel[/green] {wheel}")
    if local is not None:
        console.print(f"[green]wheel[/green] {local} (openenv-mcp as installed here, for the image)")
    lines = [f"  pip install {wheel}", f"  openenv-mcp serve {project.env_name}"]
    if not args.no_image:
        with console.status(f"building the image {args.tag or project.image} (BASE_IMAGE={args.base_image})"):
            tag = build_image(project, args.base_image, args.tag)
        console.print(f"[green]image[/green] {tag}")
        lines += [f"  docker run --rm -p 8000:8000 {tag}      # MCP at http://127.0.0.1:8000/mcp, playground at /"]
    console.print("run it:\n" + "\n".join(lines))
    return 0
