"""The hostile-agent matrix: the same attacks, as an agent runs them through each environment's own
tools, on ``files``, ``sql`` and ``coding`` (the per-area files beside this one go deeper on each).

For every environment and attack the test asserts four things: the attack comes back as a clear
``isError`` result (or harmless output), the host is untouched (a secret under ``/opt`` and ``/var``
is never returned, nothing is written there), the episode keeps answering afterwards, and the reward
is not forged (it stays at what the untouched task scores). After the episode is closed no process
of its unprivileged uid is left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp.testing import need

SECRET = f"openenv-matrix-secret-{uuid.uuid4().hex}"
HUGE = "x" * (8 * 1024 * 1024)

# One attack per row: the environment, a name, and the tool calls an agent would make.
# The paths are filled in per run ({secret} the host secret file, {drop} a host folder to write into).
ATTACKS: dict[str, dict[str, list[tuple[str, dict]]]] = {
    "files": {
        "read_host_secret": [("fs_read", {"path": "{secret}"}), ("fs_read", {"path": "../../../..{secret}"})],
        "write_outside": [
            ("fs_write", {"path": "{drop}/pwned.txt", "content": "x"}),
            ("fs_move", {"source": "..", "destination": "{drop}/moved"}),
        ],
        "symlink_out": [("fs_search", {"pattern": SECRET, "path": "/"}), ("fs_list", {"path": "/opt"})],
        "huge_input": [("fs_write", {"path": "big.txt", "content": HUGE}), ("fs_search", {"pattern": HUGE[:200_000]})],
        "wrong_types": [("fs_read", {"path": {"not": "a string"}}), ("no_such_tool", {})],
    },
    "sql": {
        "read_host_secret": [
            ("query", {"sql": "SELECT readfile('{secret}')"}),
            ("execute", {"sql": "ATTACH '{secret}' AS s"}),
        ],
        "write_outside": [
            ("execute", {"sql": "VACUUM INTO '{drop}/pwned.db'"}),
            ("execute", {"sql": "ATTACH '{drop}/pwned2.db' AS p; CREATE TABLE p.t(a)"}),
        ],
        "symlink_out": [("execute", {"sql": "SELECT load_extension('/usr/lib/x86_64-linux-gnu/libc.so.6')"})],
        "huge_input": [
            ("query", {"sql": "SELECT '" + HUGE + "'"}),
            ("query", {"sql": "SELECT zeroblob(200000000) FROM (SELECT 1 UNION ALL SELECT 2)"}),
        ],
        "wrong_types": [("query", {"sql": 42}), ("no_such_tool", {})],
    },
    "coding": {
        "read_host_secret": [
            ("shell_run", {"command": "cat {secret}; cat /etc/shadow"}),
            ("python_run", {"code": "print(open('{secret}').read())"}),
            ("fs_read", {"path": "{secret}"}),
        ],
        "write_outside": [
            ("shell_run", {"command": "echo x > {drop}/pwned.txt; touch /tmp/../{drop}/p2"}),
            ("python_run", {"code": "open('{drop}/pwned3.txt', 'w').write('x')"}),
            ("fs_write", {"path": "{drop}/pwned4.txt", "content": "x"}),
        ],
        "symlink_out": [
            ("shell_run", {"command": "ln -s {secret_dir} out && cat out/secret.txt"}),
            ("fs_read", {"path": "out/secret.txt"}),
        ],
        "huge_input": [
            ("fs_write", {"path": "big.txt", "content": HUGE}),
            ("shell_run", {"command": "head -c 50000000 /dev/zero | tr '\\0' x"}),
        ],
        "wrong_types": [("shell_run", {"command": ["not", "a", "string"]}), ("no_such_tool", {})],
    },
}


@pytest.fixture(scope="module")
def host() -> Iterator[dict[str, Path]]:
    """A secret under /opt and under /var, and two host folders an escape would write into."""
    need(os.geteuid() == 0, "the matrix attacks a server running as root (as CI and most containers run it)")
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes code")
    made: list[Path] = []
    paths: dict[str, Path] = {}
    for top in ("/opt", "/var"):
        folder = Path(top) / f"openenv-matrix-{uuid.uuid4().hex[:8]}"
        folder.mkdir(mode=0o755)
        (folder / "secret.txt").write_text(SECRET)
        (folder / "secret.txt").chmod(0o644)  # world-readable: only the boundary stands between agent and it
        made.append(folder)
        paths[top] = folder
    try:
        yield paths
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


def fill(value, host: dict[str, Path], top: str):
    folder = host[top]
    if isinstance(value, str):
        return (
            value.replace("{secret_dir}", str(folder))
            .replace("{secret}", str(folder / "secret.txt"))
            .replace("{drop}", str(folder))
        )
    if isinstance(value, dict):
        return {k: fill(v, host, top) for k, v in value.items()}
    return value


def episode_uids() -> set[int]:
    """The uids of processes running now (the episode's unprivileged uid must be gone after close)."""
    out = subprocess.run(["ps", "-eo", "uid="], capture_output=True, text=True, check=True).stdout
    return {int(u) for u in out.split()}


@pytest.mark.parametrize("top", ["/opt", "/var"])
@pytest.mark.parametrize("attack", ["read_host_secret", "write_outside", "symlink_out", "huge_input", "wrong_types"])
@pytest.mark.parametrize("env_name", ["files", "sql", "coding"])
def test_hostile_agent_matrix(env_name: str, attack: str, top: str, host, tmp_path) -> None:
    before = {p.name for p in host[top].iterdir()}
    uids_before = episode_uids()
    with openenv_mcp.make(env_name, workdir=tmp_path) as env:
        first = env.reset(seed=0)
        untouched = env.state().cumulative_reward
        observations = [first]
        for name, arguments in ATTACKS[env_name][attack]:
            obs = env.step({"type": "call_tool", "name": name, "arguments": fill(arguments, host, top)})
            observations.append(obs)
            wire = json.dumps(obs.model_dump(mode="json", by_alias=True))
            assert SECRET not in wire, f"{env_name} {name}: the host secret reached the observation"
            if attack in ("wrong_types",):
                assert obs.result is not None and obs.result.is_error, f"{env_name} {name}: {obs.result}"
            if attack == "write_outside" and obs.result is not None and not obs.result.is_error:
                assert not (set(p.name for p in host[top].iterdir()) - before), f"{env_name} {name} wrote to the host"
        # The episode keeps answering, the reward is not forged, and grading data never showed.
        after = env.step({"type": "list_tools"})
        assert after.tools, f"{env_name}: the episode stopped answering after {attack}"
        assert env.state().cumulative_reward <= untouched, f"{env_name}: {attack} raised the reward"
        for obs in observations:
            task = obs.model_dump(mode="json", by_alias=True).get("task") or {}
            assert task.get("answer") in (None, ""), f"{env_name}: the task's answer reached the agent"
        ours = episode_uids() - uids_before  # the episode's uids (the servers, what the attack started)
    assert {p.name for p in host[top].iterdir()} == before, f"{env_name}: {attack} left files in {host[top]}"
    assert (host[top] / "secret.txt").read_text() == SECRET
    deadline = time.monotonic() + 10
    while (leftover := {u for u in episode_uids() & ours if u >= 1000 and u != 65534}) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.2)  # close kills the uid's processes; the kernel reaps them a moment later
    assert not leftover, f"{env_name}: processes of episode uids {sorted(leftover)} outlived the episode"
