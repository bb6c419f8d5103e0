"""`openenv-mcp publish`: conformance first (a non-conformant environment is refused unless --force, saying
why), then the wheel goes to a real package index (a local pypiserver the test starts on loopback), from
which a clean virtualenv installs the environment and `make()`s it."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request

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


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """(packages, upload URL, simple URL, the index's folder): pypiserver without auth on a free port."""
    packages = init_packages(tmp_path_factory)
    folder = tmp_path_factory.mktemp("index")
    port = free_port()
    server = packages.venv.start(
        packages.venv.bin / "pypi-server", "run", "-p", str(port), "-i", "127.0.0.1", "-a", ".", "-P", ".", folder
    )
    wait_for_port(port, server)
    yield packages, f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/simple/", folder
    server.terminate()
    server.wait(timeout=10)


def publish(packages, *argv, check=True):
    env = packages.venv.env() | {"TWINE_USERNAME": "tester", "TWINE_PASSWORD": "secret", "COLUMNS": "200"}
    return packages.venv.cli("publish", *argv, env=env, check=check)


def test_publish_refuses_a_non_conformant_env_and_says_why(index):
    packages, upload, _, folder = index
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
    forced = publish(packages, "flaky-env", "--repository", upload, "--force")
    assert "warning: publishing flaky-env although it is not conformant (--force)" in " ".join(forced.stdout.split())
    assert [p.name for p in folder.iterdir()] == ["flaky_env-0.1.0-py3-none-any.whl"]
    (folder / "flaky_env-0.1.0-py3-none-any.whl").unlink()


def test_publish_uploads_and_a_clean_venv_installs_and_makes_the_env(index, tmp_path):
    packages, upload, simple, folder = index
    out = publish(packages, "plain-env", "--repository", upload).stdout
    assert re.search(r"^CONFORMANT: plain-env: ", out, re.M), out
    assert f"published plain_env-0.1.0-py3-none-any.whl to {upload}" in out
    with urllib.request.urlopen(simple + "plain-env/") as page:
        assert "plain_env-0.1.0-py3-none-any.whl" in page.read().decode()
    # A clean virtualenv: openenv-mcp from its wheel, then the environment from the local index only
    # (--isolated: no pip config, so no other index or find-links can supply it).
    clean = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", str(clean)], check=True, timeout=120)
    py = str(clean / "bin" / "python")
    packages.venv.run(py, "-m", "pip", "install", "-q", packages.venv.wheel, timeout=900)
    packages.venv.run(
        py,
        "-m",
        "pip",
        "--isolated",
        "install",
        "-q",
        "--no-deps",
        "--no-cache-dir",
        "--index-url",
        simple,
        "plain-env",
    )
    made = packages.venv.run(
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
