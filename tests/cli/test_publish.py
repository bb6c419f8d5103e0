"""`openenv-mcp publish`: conformance first (a non-conformant environment is refused unless --force, saying
why), then the wheel goes to a real package index (a local pypiserver the test starts on loopback) with
what it needs, so that the install command publish prints works: a clean virtualenv runs it against that
index alone (pip --isolated: no pip config, no other index), then `make()`s the environment."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from openenv_mcp.testing import free_port, wait_for_port

from support.envpkg import init_packages

pytestmark = pytest.mark.timeout(1800)

FLAKY_SERVER = '''
import uuid

from fastmcp import FastMCP

server = FastMCP("flaky-env")


@server.tool
def reverse(text: str) -> str:
    """Return the text reversed (and, wrongly, a fresh random id: not deterministic)."""
    return text[::-1] + " " + uuid.uuid4().hex
'''


def start_index(packages, folder, *flags):
    """pypiserver without auth on a free port, serving ``folder``: (server, upload URL, simple URL)."""
    port = free_port()
    server = packages.venv.start(
        packages.venv.bin / "pypi-server",
        "run",
        "-p",
        str(port),
        "-i",
        "127.0.0.1",
        "-a",
        ".",
        "-P",
        ".",
        *flags,
        folder,
    )
    wait_for_port(port, server)
    return server, f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/simple/"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """(packages, upload URL, simple URL, the index's folder): a pypiserver as installed, which redirects
    the projects it lacks (the framework's dependencies) to PyPI."""
    packages = init_packages(tmp_path_factory)
    folder = tmp_path_factory.mktemp("index")
    server, upload, simple = start_index(packages, folder)
    yield packages, upload, simple, folder
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="module")
def bare_index(tmp_path_factory):
    """(upload URL, simple URL, folder): a pypiserver that serves only what was uploaded to it."""
    packages = init_packages(tmp_path_factory)
    folder = tmp_path_factory.mktemp("bare-index")
    server, upload, simple = start_index(packages, folder, "--disable-fallback")
    yield upload, simple, folder
    server.terminate()
    server.wait(timeout=10)


def install_line(out: str) -> str:
    """The install command publish printed (the line after "install it:")."""
    lines = out.splitlines()
    return lines[lines.index("install it:") + 1].strip()


def publish(packages, *argv, check=True):
    env = packages.venv.env() | {"TWINE_USERNAME": "tester", "TWINE_PASSWORD": "secret", "COLUMNS": "200"}
    return packages.venv.cli("publish", *argv, env=env, check=check)


def test_publish_refuses_a_non_conformant_env_and_says_why(index, bare_index):
    packages, *_ = index
    upload, simple, folder = bare_index
    venv = packages.venv
    venv.cli("init", "flaky-env")
    (venv.scratch / "flaky-env" / "flaky_env" / "server.py").write_text(FLAKY_SERVER)
    venv.pip_install("-e", "./flaky-env")
    proc = publish(packages, "flaky-env", "--repository", upload, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = " ".join(proc.stderr.split())
    assert re.search(r"error: flaky-env is not conformant, so it was not published: env\.determinism: ", err), err
    assert "Fix it (see `openenv-mcp conformance flaky-env`), or publish anyway with --force" in err
    assert list(folder.iterdir()) == []
    # Forced, and told to leave openenv-mcp off an index that holds nothing else: the framework's wheel is
    # kept in the package's dist/ for --find-links, and the dependencies come from PyPI.
    forced = publish(packages, "flaky-env", "--repository", upload, "--force", "--framework", "skip")
    out = " ".join(forced.stdout.split())
    assert "warning: publishing flaky-env although it is not conformant (--force)" in out
    assert [p.name for p in folder.iterdir()] == ["flaky_env-0.1.0-py3-none-any.whl"]
    dist = venv.scratch / "flaky-env" / "dist"
    assert (dist / venv.wheel.name).read_bytes() == venv.wheel.read_bytes()
    assert f"{dist / venv.wheel.name} is openenv-mcp (the wheel it was installed from ({venv.wheel}))" in out, out
    assert re.search(r"the index has no release satisfying [^:]*\bmcp<3,>=2\.3\b[^:]*: pip takes them from PyPI", out)
    assert install_line(forced.stdout) == (
        f"pip install --index-url {simple} --extra-index-url https://pypi.org/simple/ --find-links {dist} flaky-env"
    )
    (folder / "flaky_env-0.1.0-py3-none-any.whl").unlink()


def test_publish_uploads_the_framework_the_index_lacks_and_the_printed_command_installs_from_it_alone(index, tmp_path):
    packages, upload, simple, folder = index
    venv = packages.venv
    out = publish(packages, "plain-env", "--repository", upload).stdout
    flat = " ".join(out.split())
    assert re.search(r"^CONFORMANT: plain-env: ", out, re.M), out
    assert f"published plain_env-0.1.0-py3-none-any.whl to {upload}" in flat
    assert (
        f"uploaded {venv.wheel.name} too: the index had no openenv-mcp satisfying openenv-mcp, which plain-env "
        f"needs; that wheel is the wheel it was installed from ({venv.wheel})"
    ) in flat, out
    assert sorted(p.name for p in folder.iterdir()) == sorted(["plain_env-0.1.0-py3-none-any.whl", venv.wheel.name])
    # The pypiserver redirects what it lacks to PyPI, so the framework's dependencies need no other index.
    command = install_line(out)
    assert command == f"pip install --index-url {simple} plain-env"
    clean = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", str(clean)], check=True, timeout=120)
    py = str(clean / "bin" / "python")
    # --isolated: no pip config (this machine's find-links and extra indexes), so nothing but that index helps.
    venv.run(py, "-m", "pip", "--isolated", "install", "-q", *command.split()[2:], timeout=900)
    made = venv.run(
        py,
        "-c",
        (
            "import openenv_mcp\n"
            "from openenv_mcp.types import CallTool\n"
            "env = openenv_mcp.make('plain-env')\n"
            "obs = env.reset(seed=0)\n"
            "obs = env.step(CallTool(name='reverse', arguments={'text': 'stressed'}))\n"
            "print(obs.result.content[0].text, obs.reward, obs.done)\n"
            "env.close()\n"
        ),
        cwd=tmp_path,
    ).stdout
    assert made.split() == ["desserts", "1.0", "True"]


def test_publish_without_twine_says_how_to_get_it(index):
    from openenv_mcp.cli.publish import upload
    from openenv_mcp.errors import ConfigError

    packages, *_ = index
    blocked = {"twine": None}
    saved = {k: sys.modules.get(k) for k in blocked}
    sys.modules.update(blocked)  # import twine -> ImportError, as where the extra is not installed
    try:
        with pytest.raises(ConfigError, match=re.escape("publishing needs twine: pip install 'openenv-mcp[publish]'")):
            upload([], "http://127.0.0.1:9/")
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def test_the_simple_url_of_an_upload_url_and_which_indexes_share_names_with_everyone():
    from openenv_mcp.cli.pkgindex import public_index, simple_url

    assert simple_url("https://upload.pypi.org/legacy/") == "https://pypi.org/simple/"
    assert simple_url("https://test.pypi.org/legacy/") == "https://test.pypi.org/simple/"
    assert simple_url("https://pkgs.example.com/legacy") == "https://pkgs.example.com/simple/"
    assert simple_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080/simple/"
    assert simple_url("https://nexus.example.com/repository/pypi-hosted") == (
        "https://nexus.example.com/repository/pypi-hosted/simple/"
    )
    assert public_index("https://upload.pypi.org/legacy/") and public_index("testpypi")
    assert not public_index("http://127.0.0.1:8080/")
