"""What a package index serves, read through its simple API (PEP 503 HTML or PEP 691 JSON), and the wheel of
the installed openenv-mcp, so that ``openenv-mcp publish`` can make the install command it prints work.

A published environment depends on ``openenv-mcp``; an index without it (a company index, a local
pypiserver) cannot install the environment. :func:`framework_wheel` gets the wheel of the framework as it
is installed here: the wheel file it was installed from, a wheel built from the checkout it was installed
from (editable or not), pip's wheel of the VCS commit it came from, or, when it came from an index, the
same release downloaded by pip from the indexes pip is configured with (pip's cache answers when it has it).
"""

from __future__ import annotations

import configparser
import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.parser import HeaderParser
from html.parser import HTMLParser
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from openenv_mcp.cli.build import build_wheel
from openenv_mcp.errors import BuildError, ConfigError

__all__ = [
    "FRAMEWORK",
    "PUBLIC_INDEXES",
    "FrameworkWheel",
    "framework_wheel",
    "framework_requirement",
    "framework_requirements",
    "missing_projects",
    "project_files",
    "public_index",
    "requirements_of",
    "satisfying",
    "simple_url",
    "versions_of",
]

FRAMEWORK = "openenv-mcp"
PYPI_SIMPLE = "https://pypi.org/simple/"
# Upload URL host -> simple URL of the public indexes. On these the project namespace is shared: an upload
# of openenv-mcp there registers that name under the uploader's account, so publish asks before doing it.
PUBLIC_INDEXES = {"upload.pypi.org": PYPI_SIMPLE, "test.pypi.org": "https://test.pypi.org/simple/"}
_PYPIRC_DEFAULTS = {"pypi": "https://upload.pypi.org/legacy/", "testpypi": "https://test.pypi.org/legacy/"}
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


def _pypirc_url(name: str) -> str | None:
    parser = configparser.RawConfigParser()
    parser.read(Path.home() / ".pypirc")
    if parser.has_option(name, "repository"):
        return parser.get(name, "repository")
    return _PYPIRC_DEFAULTS.get(name)


def upload_url(repository: str) -> str | None:
    """The upload URL ``--repository`` names: itself when it is a URL, else that section of ~/.pypirc."""
    return repository if "://" in repository else _pypirc_url(repository)


def public_index(repository: str) -> bool:
    """Whether ``repository`` is PyPI or TestPyPI (a shared namespace)."""
    url = upload_url(repository)
    return url is not None and urlsplit(url).hostname in PUBLIC_INDEXES


def simple_url(repository: str) -> str | None:
    """The simple API URL of the index whose upload URL (or ~/.pypirc name) is ``repository``: PyPI's and
    TestPyPI's by name, ``.../legacy/`` -> ``.../simple/`` (warehouse), else ``URL/simple/`` (pypiserver,
    Nexus, Artifactory, GitLab). None when ``repository`` names nothing known."""
    url = upload_url(repository)
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.hostname in PUBLIC_INDEXES:
        return PUBLIC_INDEXES[parts.hostname]
    base = url.rstrip("/")
    if base.endswith("/legacy"):
        return base[: -len("legacy")] + "simple/"
    return base + "/simple/"


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href") or ""

    def handle_endtag(self, tag: str) -> None:
        self._href = None

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            self.names.append(data.strip())


def project_files(simple: str, project: str, *, own: bool = False, timeout: float = 30) -> list[str] | None:
    """The file names the index at ``simple`` lists for ``project``, following redirects as pip does (a
    pypiserver redirects the projects it lacks to PyPI); ``own``: only what the index itself holds (a
    redirect to another host counts as absent). None when it has no such project. An index that cannot be
    reached raises ``urllib.error.URLError``."""
    url = urljoin(simple if simple.endswith("/") else simple + "/", canonicalize_name(project) + "/")
    request = urllib.request.Request(url, headers={"Accept": _ACCEPT, "User-Agent": "openenv-mcp-publish"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read().decode("utf-8", "replace")
            kind = response.headers.get_content_type()
            final = response.geturl()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
    if own and urlsplit(final).netloc != urlsplit(url).netloc:
        return None
    if kind.endswith("+json"):
        return [f["filename"] for f in json.loads(body).get("files", [])]
    anchors = _Anchors()
    anchors.feed(body)
    return [unquote(n.split("#", 1)[0]) for n in anchors.names]


def versions_of(files: list[str], project: str) -> set[Version]:
    """The release versions of ``project`` among an index's file names (wheels and sdists)."""
    found: set[Version] = set()
    want = canonicalize_name(project)
    for name in files:
        try:
            parsed = parse_wheel_filename(name) if name.endswith(".whl") else parse_sdist_filename(name)
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if parsed[0] == want:
            found.add(parsed[1])
    return found


def requirements_of(wheel: Path) -> list[Requirement]:
    """The requirements a wheel installs with no extra (its ``Requires-Dist`` whose markers hold here)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        headers = HeaderParser().parsestr(z.read(meta).decode())
    return _plain(headers.get_all("Requires-Dist") or [])


def framework_requirement(reqs: list[Requirement]) -> Requirement | None:
    """The requirement on openenv-mcp among ``reqs``."""
    return next((r for r in reqs if canonicalize_name(r.name) == FRAMEWORK), None)


def framework_requirements() -> list[Requirement]:
    """What the installed openenv-mcp installs with no extra."""
    return _plain(metadata.requires(FRAMEWORK) or [])


def _plain(raw: list[str]) -> list[Requirement]:
    out = []
    for line in raw:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req)
    return out


def satisfying(simple: str, req: Requirement, *, own: bool = False) -> list[Version]:
    """The versions of ``req``'s project on the index at ``simple`` that satisfy it, lowest first (``own``:
    as in :func:`project_files`)."""
    have = versions_of(project_files(simple, req.name, own=own) or [], req.name)
    return sorted(v for v in have if req.specifier.contains(v, prereleases=True))


def missing_projects(simple: str, reqs: list[Requirement]) -> list[Requirement]:
    """Which of ``reqs`` the index at ``simple`` has no satisfying release of (asked a few at a time)."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(lambda r: bool(satisfying(simple, r)), reqs))
    return [r for r, ok in zip(reqs, found, strict=True) if not ok]


@dataclass
class FrameworkWheel:
    """The installed openenv-mcp as a wheel, and how it was obtained (said to the user as is)."""

    path: Path
    how: str


def _direct_url() -> dict:
    raw = metadata.distribution(FRAMEWORK).read_text("direct_url.json")
    return json.loads(raw) if raw else {}


def _pip(*argv: str, dest: Path) -> Path:
    into = "--wheel-dir" if argv[0] == "wheel" else "--dest"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *argv, "--no-deps", into, str(dest)], capture_output=True, text=True
    )
    wheels = sorted(dest.glob("openenv_mcp-*.whl"))
    if proc.returncode != 0 or not wheels:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise BuildError(f"`pip {' '.join(argv)}` gave no wheel of {FRAMEWORK} (exit {proc.returncode}):\n{tail}")
    return wheels[-1]


def framework_wheel(dest: Path) -> FrameworkWheel:
    """Put the wheel of the installed openenv-mcp into ``dest``; ConfigError or BuildError when there is
    no way to have one (the wheel file it was installed from is gone, the build fails, no index has it)."""
    version = metadata.version(FRAMEWORK)
    dest.mkdir(parents=True, exist_ok=True)
    direct = _direct_url()
    url = direct.get("url", "")
    path = Path(unquote(url[len("file://") :])) if url.startswith("file://") else None
    if path is not None and path.suffix == ".whl":
        if not path.is_file():
            raise ConfigError(f"{FRAMEWORK} was installed from the wheel {path}, which is no longer there")
        if parse_wheel_filename(path.name)[1] != Version(version):
            raise ConfigError(f"{path} is not the installed {FRAMEWORK} {version} (it was replaced since)")
        shutil.copy2(path, dest / path.name)
        return FrameworkWheel(dest / path.name, f"the wheel it was installed from ({path})")
    if path is not None and (path / "pyproject.toml").is_file():
        editable = direct.get("dir_info", {}).get("editable", False)
        how = "installed editable" if editable else "installed from that folder"
        wheel = build_wheel(path, dest)
        return FrameworkWheel(wheel, f"built now from the checkout at {path} ({how}; its files as they are now)")
    vcs = direct.get("vcs_info")
    if vcs:
        source = f"{vcs['vcs']}+{url}@{vcs.get('commit_id') or vcs.get('requested_revision', '')}"
        wheel = _pip("wheel", source, dest=dest)
        return FrameworkWheel(wheel, f"built by pip from {source}, the commit it was installed from")
    if url:
        raise ConfigError(f"{FRAMEWORK} was installed from {url}, which publish cannot turn into a wheel")
    wheel = _pip("download", "--only-binary", ":all:", f"{FRAMEWORK}=={version}", dest=dest)
    return FrameworkWheel(wheel, f"{FRAMEWORK} {version} fetched by pip from the indexes pip uses here (or its cache)")
