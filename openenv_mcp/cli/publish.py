"""``openenv-mcp publish ENV --repository URL``: conformance first, then the wheel to a package index.

Any PyPI-compatible index works (PyPI, TestPyPI, a company index, a local pypiserver). The upload is
``twine``'s (the ``publish`` extra), with credentials from the usual places: ``$TWINE_USERNAME`` /
``$TWINE_PASSWORD``, ``~/.pypirc``, or the keyring. A non-conformant environment is refused unless
``--force``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp.cli.build import build_wheel, find_project
from openenv_mcp.errors import ConfigError, NotConformant, OpenEnvError

__all__ = ["NotConformant", "add_parser", "run", "upload"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "publish", help="check conformance, then upload the environment's wheel to a package index", description=__doc__
    )
    p.add_argument("env", help="environment name (installed from its source folder) or the package folder")
    p.add_argument(
        "--repository",
        required=True,
        metavar="URL",
        help="upload URL of the index (e.g. https://upload.pypi.org/legacy/), or a name in ~/.pypirc",
    )
    p.add_argument("--force", action="store_true", help="publish even when conformance fails")
    p.add_argument("--skip-existing", action="store_true", help="do not fail when this version is already there")
    p.set_defaults(func=run)


def upload(files: list[Path], repository: str, skip_existing: bool = False) -> None:
    """Upload ``files`` with twine (credentials from the environment, ~/.pypirc or the keyring)."""
    try:
        import twine  # noqa: F401
    except ImportError:
        raise ConfigError("publishing needs twine: pip install 'openenv-mcp[publish]'") from None
    where = ["--repository-url", repository] if "://" in repository else ["--repository", repository]
    cmd = [
        sys.executable,
        "-m",
        "twine",
        "upload",
        "--non-interactive",
        *where,
        *(["--skip-existing"] if skip_existing else []),
        *map(str, files),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise OpenEnvError(f"the upload to {repository} failed (twine exit {proc.returncode}):\n{tail}")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from openenv_mcp.client.catalog import save_report
    from openenv_mcp.client.registry import find_env
    from openenv_mcp.conformance.runner import check_env_async

    console = Console()
    project = find_project(args.env)
    spec = find_env(args.env if not Path(args.env).is_dir() else project.env_name)
    with console.status(f"conformance: {spec.name}"):
        report = anyio.run(lambda: check_env_async(spec))
    save_report(spec, report)
    console.print(report.summary())
    if not report.ok:
        reasons = "; ".join(f"{r.rule}: {r.message}" for r in report.errors)
        if not args.force:
            raise NotConformant(
                f"{spec.name} is not conformant, so it was not published: {reasons}. "
                f"Fix it (see `openenv-mcp conformance {spec.name}`), or publish anyway with --force"
            )
        console.print(
            f"[yellow]warning:[/yellow] publishing {spec.name} although it is not conformant (--force): {reasons}"
        )
    with tempfile.TemporaryDirectory(prefix="openenv-mcp-publish-") as tmp:
        with console.status(f"building the wheel of {project.name}"):
            wheel = build_wheel(project.root, Path(tmp))
        with console.status(f"uploading {wheel.name} to {args.repository}"):
            upload([wheel], args.repository, args.skip_existing)
    console.print(
        f"[green]published[/green] {wheel.name} to {args.repository}\n"
        f"install it: pip install --index-url <the index's simple URL> {project.name}"
    )
    return 0
