"""The ``openenv-mcp`` command line itself: --version, no abbreviations, help for every option, the serve banner."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

import openenv_mcp
from openenv_mcp.cli.app import build_parser, main, parsers

from support import ROOT


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]


def test_importing_the_full_command_line_left_cli_main_a_module():
    """The full command line used to live in ``cli/main.py``: importing it made ``openenv_mcp.cli.main``
    the submodule, so ``from openenv_mcp.cli import main`` in a later test (or a user's script) got a
    module, "not callable", depending on import order. The entry point must stay the function."""
    import openenv_mcp.cli
    import openenv_mcp.cli.app  # noqa: F401  (the import that used to shadow it)

    assert callable(openenv_mcp.cli.main) and openenv_mcp.cli.main.__module__ == "openenv_mcp.cli"


def test_version_prints_the_distributions_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"openenv-mcp {openenv_mcp.__version__}\n"


def test_run_task_is_refused_not_read_as_tasks(capsys):
    """`run --task X` was silently `run --tasks X` (argparse abbreviations): every parser refuses a prefix."""
    with pytest.raises(SystemExit) as exit_:
        main(["run", "echo", "--task", "echo-00"])
    assert exit_.value.code == 2 and "unrecognized arguments: --task" in capsys.readouterr().err
    assert all(not p.allow_abbrev for p in parsers(build_parser()))


def test_every_option_of_every_command_says_what_it_does():
    every = parsers(build_parser())
    assert len(every) > 15  # the walk reaches the nested commands (export harbor, harbor build...)
    missing = [f"{p.prog} {a.option_strings or a.dest}" for p in every for a in _options(p) if not a.help]
    assert missing == []


def test_help_shows_no_restructuredtext():
    texts = [(p.prog, p.format_help()) for p in parsers(build_parser())]
    assert [prog for prog, text in texts if "``" in text or ":func:`" in text or ":class:`" in text] == []


def _serve(port: int, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "openenv_mcp.cli", "serve", "echo", "--port", str(port), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_serve_on_a_taken_port_says_so_and_prints_no_banner():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _serve(port)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    assert f"cannot serve on 127.0.0.1:{port}" in err and "--port" in err, err
    assert "serving" not in err and "Traceback" not in err, err


def test_serve_prints_its_banner_once_bound_with_the_real_port():
    proc = _serve(0)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the banner comes after the bind, so its port is the bound one
        assert "serving echo (sim) on http://127.0.0.1:" in line, line
        port = int(line.split("http://127.0.0.1:")[1].split()[0])
        assert port > 0
        deadline = time.monotonic() + 30
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)
