"""Environment packages as a user makes them: `openenv-mcp init` in a fresh virtualenv outside the checkout.

Shared by test_init, test_init_wrapped, test_build, test_publish and test_discover: one wheel of openenv-mcp,
one virtualenv (no system site-packages) and the three generated packages per test session (cached in this
module), so the cost is paid once. Commands run with the checkout nowhere on ``sys.path`` and a scratch current folder.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from openenv_mcp.testing import free_port, wait_for_port

from support import ROOT, build_wheel

NOTES_SERVER = textwrap.dedent('''
    """A third-party MCP server written by the test (stdio by default, `http PORT` for streamable HTTP)."""
    import sys

    from fastmcp import FastMCP

    server = FastMCP("notes")


    @server.tool
    def add_note(title: str, body: str) -> str:
        """Store a note under a title."""
        return f"stored {title}"


    @server.tool
    def count_words(text: str) -> int:
        """Count the words of a text."""
        return len(text.split())


    if __name__ == "__main__":
        if sys.argv[1:2] == ["http"]:
            server.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
        else:
            server.run(show_banner=False)
''').lstrip()


@dataclass
class Venv:
    """A fresh virtualenv with openenv-mcp installed from a wheel of the checkout."""

    base: Path
    wheel: Path
    scratch: Path
    cache: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def bin(self) -> Path:
        return self.base / "venv" / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OPENENV_MCP_", "VIRTUAL_ENV"))}
        return env | {"OPENENV_MCP_CACHE": str(self.cache), "PATH": f"{self.bin}:{env.get('PATH', '')}"}

    def run(
        self,
        *argv: str | Path,
        cwd: Path | None = None,
        timeout: float = 600,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(a) for a in argv],
            cwd=cwd or self.scratch,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    def cli(self, *argv: str | Path, **kw) -> subprocess.CompletedProcess[str]:
        return self.run(self.bin / "openenv-mcp", *argv, **kw)

    def pip_install(self, *argv: str | Path, timeout: float = 900) -> None:
        self.run(self.python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *argv, timeout=timeout)

    def start(self, *argv: str | Path) -> subprocess.Popen:
        proc = subprocess.Popen(
            [str(a) for a in argv],
            cwd=self.scratch,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        if len(self.procs) == 1:
            atexit.register(stop_all)
        return proc


@dataclass
class Packages:
    """The three packages `openenv-mcp init` made in the venv's scratch folder, installed."""

    venv: Venv
    plain: Path
    command: Path
    url: Path
    url_port: int
    server_script: Path

    @property
    def names(self) -> list[str]:
        return [self.plain.name, self.command.name, self.url.name]


_CACHE: dict[str, object] = {}


def fresh_venv(tmp_path_factory) -> Venv:
    """The session's venv: a wheel of the checkout (with the `publish` extra) in a new virtualenv."""
    if "venv" not in _CACHE:
        base = tmp_path_factory.mktemp("envpkg", numbered=True)
        assert ROOT not in base.parents
        dist = base / "dist"
        dist.mkdir()
        wheel = build_wheel(ROOT, dist)
        subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=120)
        (base / "scratch").mkdir()
        venv = Venv(base=base, wheel=wheel, scratch=base / "scratch", cache=base / "cache")
        venv.pip_install(f"{wheel}[publish]", "pytest", "pypiserver")
        _CACHE["venv"] = venv
    return _CACHE["venv"]  # type: ignore[return-value]


def init_packages(tmp_path_factory) -> Packages:
    """`openenv-mcp init` plain, `--from-command` (a stdio server the test wrote) and `--from-url` (the same
    server over HTTP, served for the whole session), each then `pip install`ed with its test extra."""
    if "packages" not in _CACHE:
        venv = fresh_venv(tmp_path_factory)
        script = venv.scratch / "notes_server.py"
        script.write_text(NOTES_SERVER)
        port = free_port()
        server = venv.start(venv.python, script, "http", port)
        wait_for_port(port, server)
        venv.cli("init", "plain-env")
        venv.cli("init", "cmd-env", "--from-command", "python", script)
        venv.cli("init", "url-env", "--from-url", f"http://127.0.0.1:{port}/mcp")
        venv.pip_install(*(f"./{n}[test]" for n in ("plain-env", "cmd-env", "url-env")))
        _CACHE["packages"] = Packages(
            venv=venv,
            plain=venv.scratch / "plain-env",
            command=venv.scratch / "cmd-env",
            url=venv.scratch / "url-env",
            url_port=port,
            server_script=script,
        )
    return _CACHE["packages"]  # type: ignore[return-value]


def stop_all() -> None:
    """Stop the servers the helpers started (at the end of the test session)."""
    venv = _CACHE.get("venv")
    for proc in getattr(venv, "procs", []):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
