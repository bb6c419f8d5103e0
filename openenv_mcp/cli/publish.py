"""``openenv-mcp publish ENV --repository URL``: conformance first, then the wheel to a package index.

Any PyPI-compatible index works (PyPI, TestPyPI, a company index, a local pypiserver). The upload is
``twine``'s (the ``publish`` extra), with credentials from the usual places: ``$TWINE_USERNAME`` /
``$TWINE_PASSWORD``, ``~/.pypirc``, or the keyring. A non-conformant environment is refused unless
``--force``.

Then publish makes the printed install command work. It reads the index's simple API: when the index has
no ``openenv-mcp`` that the environment accepts, it uploads the framework's wheel too (the wheel this
``openenv-mcp`` was installed from, or one built from its checkout; except to PyPI and TestPyPI, where that
would register the name under your account: ``--framework upload`` does it anyway), or else keeps that wheel
in the package's ``dist/`` and the command gets ``--find-links``. When the index lacks the framework's own
dependencies (``mcp``, ``fastmcp``, ...: a pypiserver redirects those to PyPI, other private indexes may
not), the command gets ``--extra-index-url https://pypi.org/simple/``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from openenv_mcp.cli.build import Project, build_wheel, find_project
from openenv_mcp.errors import BuildError, ConfigError, NotConformant, OpenEnvError

if TYPE_CHECKING:
    from packaging.requirements import Requirement

__all__ = ["NotConformant", "add_parser", "install_command", "run", "upload"]


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
    p.add_argument(
        "--index-url",
        metavar="URL",
        help="the index's simple API URL, read to check what it has and printed in the install command "
        "(default: from --repository: .../legacy/ becomes .../simple/, any other URL gets simple/ appended)",
    )
    p.add_argument(
        "--framework",
        choices=("auto", "upload", "skip"),
        default="auto",
        help="when the index has no openenv-mcp the environment accepts: upload its wheel (auto: except to "
        "PyPI and TestPyPI), or skip (keep the wheel in dist/ and print --find-links)",
    )
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
    from rich.markup import escape

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
            wheel = build_wheel(project.root, Path(tmp) / "env")
        with console.status(f"uploading {wheel.name} to {args.repository}"):
            upload([wheel], args.repository, args.skip_existing)
        console.print(f"[green]published[/green] {wheel.name} to {args.repository}")
        command = install_command(console, args, project, wheel, Path(tmp))
    console.print(f"install it:\n  {escape(command)}", soft_wrap=True)
    return 0


def install_command(console: Any, args: argparse.Namespace, project: Project, wheel: Path, tmp: Path) -> str:
    """The pip command that installs the published environment, after making sure the index has what it
    needs (see the module docstring); says on ``console`` what it found and did."""
    from urllib.error import URLError

    from openenv_mcp.cli import pkgindex

    simple = args.index_url or pkgindex.simple_url(args.repository)
    if simple is None:
        _say(
            console,
            "warning:",
            f"{args.repository!r} is no URL and no section of ~/.pypirc, so what the "
            "index has was not checked: pass its simple API URL with --index-url",
        )
        return f"pip install --index-url <the index's simple URL> {project.name}"
    simple = simple if simple.endswith("/") else simple + "/"
    reqs = pkgindex.requirements_of(wheel)
    framework = pkgindex.framework_requirement(reqs)
    find_links = None
    try:
        if framework is not None:
            find_links = _framework_on_index(console, args, project, framework, simple, tmp)
        others = [r for r in reqs if r is not framework] + (pkgindex.framework_requirements() if framework else [])
        with console.status(f"reading {simple} for the dependencies"):
            missing = pkgindex.missing_projects(simple, others)
    except (URLError, OSError) as e:
        _say(console, "warning:", f"{simple} could not be read ({e}): the command below is unchecked")
        missing = []
    parts = ["pip install"]
    if simple != pkgindex.PYPI_SIMPLE:
        parts.append(f"--index-url {simple}")
    if missing:
        _say(
            console,
            "",
            f"the index has no release satisfying {', '.join(map(str, missing))}: pip takes "
            f"{'it' if len(missing) == 1 else 'them'} from PyPI (--extra-index-url)",
        )
        parts.append(f"--extra-index-url {pkgindex.PYPI_SIMPLE}")
    if find_links is not None:
        parts.append(f"--find-links {find_links}")
    return " ".join([*parts, project.name])


def _framework_on_index(
    console: Any, args: argparse.Namespace, project: Project, req: Requirement, simple: str, tmp: Path
) -> Path | None:
    """Make sure the index has an openenv-mcp satisfying ``req``: found, uploaded, or its wheel kept in the
    package's dist/ (returned: the install command needs --find-links there)."""
    from importlib import metadata

    from openenv_mcp.cli import pkgindex

    name = pkgindex.FRAMEWORK
    # The index's own copy: one it redirects to elsewhere (a pypiserver sends what it lacks to PyPI) could be
    # another project's upload under the same name.
    with console.status(f"reading {simple} for {name}"):
        found = pkgindex.satisfying(simple, req, own=True)
    if found:
        _say(console, "", f"the index has {name} {found[-1]}, which {project.name} needs ({req})")
        return None
    installed = metadata.version(name)
    if not req.specifier.contains(installed, prereleases=True):
        _say(
            console,
            "warning:",
            f"{project.name} needs {req}, the index has none, and the {name} "
            f"installed here is {installed}: publish a matching {name} there first",
        )
        return None
    try:
        framework = pkgindex.framework_wheel(tmp / "framework")
    except (ConfigError, BuildError) as e:
        _say(
            console,
            "warning:",
            f"the index has no {name} satisfying {req}, and no wheel of the installed "
            f"one could be had here ({e}): install {name} from source before the environment (README: 'Install from source')",
        )
        return None
    public = pkgindex.public_index(args.repository)
    if args.framework == "upload" or (args.framework == "auto" and not public):
        try:
            with console.status(f"uploading {framework.path.name} to {args.repository}"):
                upload([framework.path], args.repository)
        except OpenEnvError as e:
            _say(console, "warning:", f"{name} could not be uploaded too: {e}")
        else:
            _say(
                console,
                "uploaded",
                f"{framework.path.name} too: the index had no {name} satisfying {req}, "
                f"which {project.name} needs; that wheel is {framework.how}",
            )
            return None
    elif args.framework == "auto":
        _say(
            console,
            "",
            f"{name} was not uploaded: on {args.repository} that would register the name {name} under your "
            "account (--framework upload does it)",
        )
    keep = project.root / "dist"
    keep.mkdir(exist_ok=True)
    shutil.copy2(framework.path, keep / framework.path.name)
    _say(
        console,
        "",
        f"{keep / framework.path.name} is {name} ({framework.how}): the command below installs it from there "
        "(copy that wheel along to install elsewhere)",
    )
    return keep


def _say(console: Any, tag: str, text: str) -> None:
    """Print ``text`` as it is (not read as rich markup: a requirement's ``[extra]`` or a path stays whole)
    after a coloured ``tag`` (``warning:``, ``uploaded``) when there is one."""
    from rich.markup import escape

    style = {"warning:": "yellow", "uploaded": "green"}.get(tag)
    console.print((f"[{style}]{tag}[/{style}] " if style else "") + escape(text))
