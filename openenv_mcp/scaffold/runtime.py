"""A wrapped command's package, installed into the environment's folder when ``init`` runs.

``npx PKG`` and ``uvx PKG`` (or ``pipx run PKG``) fetch their package when they start, which a
sandbox without a network cannot do, and they run whatever the registry serves that day. ``init``
turns such a command into a local install instead, with the version resolved once and pinned:

* ``npx [-y] [-p PKG] PKG[@VER] [ARGS]``: ``npm install --prefix ENV/runtime/npm --save-exact PKG@VER``
  (``package.json`` and ``package-lock.json`` record the versions); the env file runs
  ``node {env_dir}/runtime/npm/node_modules/PKG/BIN ARGS``;
* ``uvx [--from SPEC] [--with REQ] NAME[@VER|==VER] [ARGS]`` and ``pipx run [--spec SPEC] NAME [ARGS]``:
  a virtualenv ``ENV/runtime/venv`` with ``pip install SPEC`` (``runtime/requirements.txt`` records
  every installed version); the env file runs ``{env_dir}/runtime/venv/bin/NAME ARGS``;
* ``python -m MODULE [ARGS]`` when this interpreter cannot import ``MODULE``: the same virtualenv with
  the distribution named like the module (``mcp_server_time`` -> ``mcp-server-time``), run as
  ``{env_dir}/runtime/venv/bin/python -m MODULE ARGS``.

The registries are reached here only, by the package managers, with the user's own configuration;
the environment then runs the local copy and never fetches anything. Any other command is kept as
it is (it must then be runnable inside the boundary as written).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from openenv_mcp.errors import ConfigError

__all__ = ["RUNTIME", "Install", "install", "plan"]

RUNTIME = "runtime"
"""The folder, inside the environment's folder, that holds a wrapped command's local install."""

_NPX_FLAGS = {"-y", "--yes", "--no", "-q", "--quiet", "--no-install", "--prefer-offline", "--prefer-online"}
_UVX_FLAGS = {"-q", "--quiet", "--no-cache", "--isolated", "--offline", "--refresh"}
_INSTALL_TIMEOUT = 900.0


@dataclass
class Install:
    """A package to install locally, and the command that runs it once installed."""

    manager: str
    """``npm`` or ``pypi``."""
    spec: str
    """What the package manager installs (``@scope/name@1.2.3``, ``name==1.2.3``, ``name``)."""
    name: str
    """The package's name (npm) or distribution name (PyPI)."""
    program: str
    """The program to run: an npm ``bin`` name (``""``: the package's own), a console script."""
    args: list[str]
    extra: tuple[str, ...] = ()
    """More requirements installed alongside (``uvx --with``)."""
    version: str = ""
    """The version installed (set by :func:`install`)."""
    command: tuple[str, ...] = ()
    """The env file's ``command`` for the local copy (set by :func:`install`)."""


def _split_npm(spec: str) -> tuple[str, str]:
    """``@scope/name@1.2`` -> (``@scope/name``, ``1.2``); no version -> (name, "")."""
    at = spec.rfind("@")
    return (spec[:at], spec[at + 1 :]) if at > 0 else (spec, "")


def _pypi_name(spec: str) -> str:
    return re.split(r"[<>=!~;\[@ ]", spec, maxsplit=1)[0]


def _pypi_spec(spec: str) -> str:
    """``name@1.2`` (uvx's form) -> ``name==1.2``; anything else as given."""
    if "@" in spec and not re.search(r"[<>=!~]", spec) and "://" not in spec:
        name, _, version = spec.partition("@")
        return f"{name}=={version}" if version and version != "latest" else name
    return spec


def _options(argv: list[str], flags: set[str], valued: set[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Leading options of ``argv`` (flags dropped, ``--opt V``/``--opt=V`` collected) and the rest."""
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return found, argv[i + 1 :]
        key, eq, value = a.partition("=")
        if key in valued:
            if not eq:
                if i + 1 >= len(argv):
                    raise ConfigError(f"{a} needs a value")
                value, i = argv[i + 1], i + 1
            found.setdefault(key, []).append(value)
        elif a in flags:
            pass
        elif a.startswith("-"):
            raise ConfigError(f"option {a!r} is not understood here: give the package and its arguments only")
        else:
            return found, argv[i:]
        i += 1
    return found, []


def plan(command: list[str]) -> Install | None:
    """The local install a command stands for, or ``None`` for a command kept as it is."""
    program = os.path.basename(command[0]) if command else ""
    rest = list(command[1:])
    try:
        if program == "npx":
            opts, rest = _options(rest, _NPX_FLAGS, {"-p", "--package"})
            packages = opts.get("-p", []) + opts.get("--package", [])
            if not rest and not packages:
                raise ConfigError("npx needs a package, e.g. npx -y @modelcontextprotocol/server-memory")
            if packages:
                if len(packages) > 1 or not rest:
                    raise ConfigError("give one --package and the program to run from it")
                spec, bin_name, args = packages[0], rest[0], rest[1:]
            else:
                spec, bin_name, args = rest[0], "", rest[1:]
            name, _ = _split_npm(spec)
            return Install("npm", spec, name, bin_name, args)
        if program in ("uvx", "pipx") or (program == "uv" and rest[:2] == ["tool", "run"]):
            if program == "uv":
                rest = rest[2:]
            elif program == "pipx":
                if rest[:1] != ["run"]:
                    return None
                rest = rest[1:]
            opts, rest = _options(rest, _UVX_FLAGS, {"--from", "--spec", "--with", "--python"})
            if not rest:
                raise ConfigError(f"{program} needs a package, e.g. uvx mcp-server-time")
            source = (opts.get("--from") or opts.get("--spec") or [None])[0]
            spec = _pypi_spec(source or rest[0])
            script = _pypi_name(_pypi_spec(rest[0])) if source else _pypi_name(spec)
            return Install("pypi", spec, _pypi_name(spec), script, rest[1:], tuple(opts.get("--with", [])))
        if program in ("python", "python3") and rest[:1] == ["-m"] and len(rest) > 1 and not _importable(rest[1]):
            module = rest[1]  # `pip install NAME; python -m NAME`: the distribution named like the module
            name = module.split(".")[0].replace("_", "-")
            return Install("pypi", name, name, "python", rest)
    except ConfigError as e:
        raise ConfigError(f"--from-command {' '.join(command)!r}: {e}") from None
    return None


def _importable(module: str) -> bool:
    """Whether this interpreter (the one ``python`` means in an env file) can import ``module``'s top package."""
    import importlib.util

    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def _run(argv: list[str], what: str, cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise ConfigError(f"{what}: {argv[0]!r} is not installed") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{what}: {argv[0]} did not finish within {_INSTALL_TIMEOUT:g} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise ConfigError(f"{what} failed ({' '.join(argv[:3])} ... exited {proc.returncode}):\n{tail}")
    return proc.stdout


def _install_npm(job: Install, folder: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise ConfigError(f"installing {job.spec} locally needs npm (and Node) on PATH")
    if shutil.which("node") is None:
        raise ConfigError(f"installing {job.spec} locally needs Node (node on PATH) to run it")
    prefix = folder / "npm"
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "package.json").write_text('{"name": "openenv-mcp-runtime", "private": true}\n')
    _run(
        [
            npm,
            "install",
            "--prefix",
            str(prefix),
            "--save-exact",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            job.spec,
        ],
        f"npm install {job.spec}",
    )
    meta = json.loads((prefix / "node_modules" / job.name / "package.json").read_text())
    job.version = str(meta.get("version", ""))
    bins = meta.get("bin") or {}
    if isinstance(bins, str):
        bins = {job.name.rsplit("/", 1)[-1]: bins}
    if job.program:
        target = bins.get(job.program)
    elif len(bins) == 1:
        target = next(iter(bins.values()))
    else:
        target = bins.get(job.name.rsplit("/", 1)[-1])
    if not target:
        raise ConfigError(
            f"npm package {job.name} {job.version} has no program {job.program or '(default)'} to run "
            f"(its bin: {', '.join(bins) or 'none'}); name one with --from-command npx -p {job.name} PROGRAM"
        )
    script = os.path.normpath(f"{{env_dir}}/{RUNTIME}/npm/node_modules/{job.name}/{target}")
    job.command = ("node", script, *job.args)


def _install_pypi(job: Install, folder: Path) -> None:
    venv = folder / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], f"creating a virtualenv for {job.spec}")
    python = venv / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", job.spec, *job.extra],
        f"pip install {job.spec}",
    )
    freeze = _run([str(python), "-m", "pip", "freeze", "--disable-pip-version-check"], "pip freeze")
    (folder / "requirements.txt").write_text(freeze)
    wanted = re.sub(r"[-_.]+", "-", job.name).lower()
    for line in freeze.splitlines():
        name, _, version = line.partition("==")
        if re.sub(r"[-_.]+", "-", name).lower() == wanted:
            job.version = version
    if job.program == "python":  # `python -m MODULE`: the virtualenv's interpreter runs it
        job.command = (f"{{env_dir}}/{RUNTIME}/venv/bin/python", *job.args)
        return
    if not (venv / "bin" / job.program).exists():
        scripts = sorted(
            p.name for p in (venv / "bin").iterdir() if not p.name.startswith(("python", "pip", "activate"))
        )
        raise ConfigError(
            f"{job.name} {job.version} installs no program {job.program!r} (it has: {', '.join(scripts) or 'none'}); "
            f"name one with --from-command uvx --from {job.name} PROGRAM"
        )
    job.command = (f"{{env_dir}}/{RUNTIME}/venv/bin/{job.program}", *job.args)


def install(job: Install, env_dir: Path) -> Install:
    """Install ``job`` into ``env_dir/runtime`` (at the version the registry resolves, then pinned)."""
    folder = env_dir / RUNTIME
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".gitignore").write_text("node_modules/\nvenv/\n")
    if job.manager == "npm":
        _install_npm(job, folder)
    else:
        _install_pypi(job, folder)
    return job
