"""Target schemes (openenv_mcp.client.schemes): make("SCHEME:...") resolves through the entry-point group
``openenv_mcp.schemes``; the built-in ones are registered there, and a package installed beside openenv-mcp
adds its own the same way (here a real distribution on ``sys.path``, found by importlib.metadata)."""

from __future__ import annotations

from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import ConfigError
from openenv_mcp.client.registry import find_env, make_async
from openenv_mcp.client.remote import RemoteAsyncEnv
from openenv_mcp.client.schemes import SCHEME_GROUP, Scheme, registered_schemes, scheme_for
from openenv_mcp.types import CallTool


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, module: str, entries: dict[str, str]) -> None:
    """A distribution ``name`` on ``sys.path``: ``module`` as ``name.py`` and ``entries`` in its
    ``entry_points.txt`` under :data:`SCHEME_GROUP`."""
    (tmp_path / f"{name}.py").write_text(module)
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{SCHEME_GROUP}]\n{lines}")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_the_built_in_schemes_are_registered_in_the_group():
    assert {"http", "https", "ws", "wss", "ray"} <= set(registered_schemes())
    for target in ("http://127.0.0.1:9", "HTTPS://example.org", "ws://127.0.0.1:9", "ray://head:6379/files"):
        scheme = scheme_for(target)
        assert scheme is not None and scheme.connect is not None, target


def test_make_of_a_server_url_connects_through_its_scheme():
    env = make_async("http://127.0.0.1:9")  # the connection opens on the first reset
    assert isinstance(env, RemoteAsyncEnv) and env.url == "http://127.0.0.1:9"


def test_names_paths_and_drive_letters_have_no_scheme():
    for target in ("files", "envs/files/env.toml", "C:/envs/files", "nope:thing", Path("a:b")):
        assert scheme_for(target) is None, target


def test_a_package_adds_a_scheme_that_loads_an_environment(tmp_path, monkeypatch):
    _install(
        tmp_path,
        monkeypatch,
        "demo_load_scheme",
        "from openenv_mcp.client.registry import find_env\n"
        "from openenv_mcp.client.schemes import Scheme\n"
        "SEEN = []\n"
        "def load(target):\n"
        "    SEEN.append(target)\n"
        "    return find_env(target.split(':', 1)[1])\n"
        "SCHEME = Scheme(load=load)\n",
        {"demo": "demo_load_scheme:SCHEME"},
    )
    assert find_env("demo:echo").name == "echo"
    with openenv_mcp.make("demo:echo") as env:
        obs = env.reset(seed=0)
        assert "echo" in {t.name for t in obs.tools or []}
        assert env.step(CallTool(name="echo", arguments={"text": "hi"})).result is not None
    import demo_load_scheme  # type: ignore[import-not-found]

    assert demo_load_scheme.SEEN == ["demo:echo", "demo:echo"]


def test_a_broken_scheme_is_refused_naming_its_entry_point(tmp_path, monkeypatch):
    _install(
        tmp_path,
        monkeypatch,
        "demo_broken_scheme",
        "NOT_A_SCHEME = 42\n",
        {"broken": "demo_broken_scheme:MISSING", "wrong": "demo_broken_scheme:NOT_A_SCHEME"},
    )
    with pytest.raises(
        ConfigError, match=r"scheme 'broken' \(entry point 'demo_broken_scheme:MISSING'.*cannot be loaded"
    ):
        make_async("broken://x")
    with pytest.raises(ConfigError, match=r"scheme 'wrong' .* names 42: expected an openenv_mcp.client.schemes.Scheme"):
        find_env("wrong:x")


def test_a_scheme_has_exactly_one_way_to_resolve():
    with pytest.raises(ValueError, match="exactly one of load= and connect="):
        Scheme()
    with pytest.raises(ValueError, match="exactly one of load= and connect="):
        Scheme(load=find_env, connect=make_async)
