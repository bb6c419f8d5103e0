"""The env rules on raw third-party-style servers: no false alarms, every channel watched.

The fixtures are small raw MCP servers over stdio (``conformance/fixtures/raw_stdio.py``)
under the default ``process`` boundary, wrapped by env files in ``conformance/fixtures/envs``:
a correct filesystem server that prints its absolute paths and HOME, a correct server that
prints the time and random temp-file names, servers that leak only through a file, only
through a resource, only through the reward (each with a fixed twin), and one whose every
write fails.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from openenv_mcp.conformance import check_env_async

from support import ROOT

ENVS = ROOT / "conformance" / "fixtures" / "envs"
EPISODE_RULES = "env.determinism,env.parity,env.reset_restores,env.episode_isolation"


@pytest.fixture
def shared_folder(monkeypatch):
    """The folder the leaky fixtures share between episodes (reachable by every episode's uid)."""
    folder = tempfile.mkdtemp(prefix="openenv-conformance-shared-")
    os.chmod(folder, 0o1777)
    monkeypatch.setenv("OPENENV_CONFORMANCE_SHARED", folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def _run(folder: str):
    return await check_env_async(ENVS / folder, only=EPISODE_RULES, official=False)


def _statuses(report) -> dict[str, str]:
    return {r.rule: r.status for r in report.results}


@pytest.mark.anyio
async def test_a_filesystem_server_printing_its_paths_and_home_is_not_taken_for_a_leak_under_process():
    report = await _run("raw_files")
    assert _statuses(report) == dict.fromkeys(EPISODE_RULES.split(","), "passed"), [
        (r.rule, r.message) for r in report.results
    ]
    for rule in ("env.reset_restores", "env.episode_isolation"):
        message = report.result(rule).message
        uid = "the episode's uid, " if os.geteuid() == 0 else ""  # no uid to drop to unless root
        assert message == (
            f"normalized what the framework varies per episode: HOME/TMPDIR, {uid}the workspace path (seen in results)"
        ), message


@pytest.mark.anyio
async def test_a_clock_and_random_temp_names_are_one_determinism_finding_with_the_same_verdict_every_run():
    first, second = await _run("raw_clock"), await _run("raw_clock")
    expected = {
        "env.determinism": "failed",
        "env.parity": "passed",
        "env.reset_restores": "passed",
        "env.episode_isolation": "passed",
    }
    assert _statuses(first) == expected, [(r.rule, r.message) for r in first.results]
    assert _statuses(second) == expected, [(r.rule, r.message) for r in second.results]
    message = first.result("env.determinism").message
    assert re.search(
        r"step 1 tools/call 'now' \{\} returned \"It is (\d+):\d\d:\d\d [AP]M\" in one episode and "
        r"\"It is \d+:\d\d:\d\d [AP]M\" in the other",
        message,
    ), message
    assert re.search(
        r"tools/call 'scratch' \{\"text\": \"\w+\"\} returned \"saved to <HOME/TMPDIR>/tmp\w+\.txt\" in one episode "
        r"and \"saved to <HOME/TMPDIR>/tmp\w+\.txt\" in the other",
        message,
    ), message
    assert message.endswith(
        "env.parity, env.reset_restores and env.episode_isolation ignore these values on tool now, tool scratch "
        "(each tool's first call ran one wall-clock second apart; from the calls reset and isolation generate, only clock-, counter- and random-name-shaped values)"
    ), message
    for rule in ("env.parity", "env.reset_restores", "env.episode_isolation"):
        assert "ignored the values env.determinism found nondeterministic on tool now, tool scratch" in (
            first.result(rule).message
        ), first.result(rule).message


LEAKS = [
    (
        "leak_file",
        "env.episode_isolation",
        r"^two live episodes \(seed 0\), A replayed generated calls, then B the same ones: tool read_note "
        r"\{\"key\": \"k-\w+\"\}: episode B read \"k-\w+\" after A's calls, before any of its own; A read "
        r"\"\(none\)\" fresh: A's writes are visible in B$",
    ),
    (
        "leak_file",
        "env.reset_restores",
        r"^replaying generated calls after reset\(seed=0\): before any call, tool read_note \{\"key\": \"k-\w+\"\} "
        r"shows \"k-\w+\", where the first episode showed \"\(none\)\" before its calls: changes made in the "
        r"previous episode are still visible$",
    ),
    (
        "leak_resource",
        "env.episode_isolation",
        r"^two live episodes \(seed 0\), A replayed generated calls, then B the same ones: resource file:///notes: "
        r"episode B read \".*\" after A's calls, before any of its own; A read \".*\" fresh: A's writes are "
        r"visible in B$",
    ),
    (
        "leak_resource",
        "env.reset_restores",
        r"^replaying generated calls after reset\(seed=0\): before any call, resource file:///notes shows \".*\", "
        r"where the first episode showed \".*\" before its calls: changes made in the previous episode are still "
        r"visible$",
    ),
    (
        "leak_reward",
        "env.episode_isolation",
        r"^two live episodes \(seed 0\), A replayed generated calls, then B the same ones: reward: step \d+ "
        r"tools/call 'write_note' \{.*\} earned [\d.]+ in episode B and [\d.]+ in episode A: A's writes are "
        r"visible in B$",
    ),
    (
        "leak_reward",
        "env.reset_restores",
        r"^replaying generated calls after reset\(seed=0\): reward: the score in the first observation is "
        r"[\d.]+ after reset and [\d.]+ in the first episode: changes made in the previous episode are still "
        r"visible$",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("folder", "rule", "pattern"), LEAKS, ids=[f"{f}-{r}" for f, r, _ in LEAKS])
async def test_a_leak_through_one_channel_is_caught_and_named_by_the_rule_of_its_cause(
    folder, rule, pattern, shared_folder
):
    report = await _run(folder)
    statuses = _statuses(report)
    assert statuses["env.determinism"] == "passed", report.result("env.determinism").message
    assert statuses["env.parity"] == "passed", report.result("env.parity").message
    result = report.result(rule)
    assert result.status == "failed", result
    assert re.match(pattern, result.message), result.message


@pytest.mark.anyio
@pytest.mark.parametrize("folder", ["leak_file_fixed", "leak_resource_fixed", "leak_reward_fixed"])
async def test_the_fixed_twin_of_each_leak_passes(folder):
    report = await _run(folder)
    assert _statuses(report) == dict.fromkeys(EPISODE_RULES.split(","), "passed"), [
        (r.rule, r.message) for r in report.results
    ]


@pytest.mark.anyio
async def test_when_every_write_fails_the_verdict_says_the_writes_failed_not_that_state_leaked():
    report = await _run("denied_writes")
    for rule, what in (
        ("env.reset_restores", "whether reset restores the world"),
        ("env.episode_isolation", "whether episodes are isolated"),
    ):
        result = report.result(rule)
        assert result.status == "inconclusive", result
        assert re.match(
            r"^every call that could write failed \(\d+ of \d+ calls, e\.g\. tools/call 'write_note' \{.*\} returned "
            r"error \"PermissionError: \[Errno 13\] Permission denied: '/note-[\w-]+\.txt'\"\): the writes failed, "
            rf"nothing changed, so {what} could not be tested \(give the environment solutions that succeed, "
            r"or a writable workspace\)$",
            result.message,
        ), result.message
        assert "visible" not in result.message
    assert not report.errors
    # env.determinism and env.parity compared errors with errors: inconclusive too
    assert "4 inconclusive" in report.summary()


@pytest.fixture
def raw_files_env():
    """An env folder (reachable by unprivileged uids) holding the raw filesystem server; yields a
    function writing its env file for a boundary."""
    folder = Path(tempfile.mkdtemp(prefix="openenv-conformance-raw-files-"))
    os.chmod(folder, 0o755)
    shutil.copy(ENVS.parent / "raw_stdio.py", folder / "raw_stdio.py")

    def write(isolation: str) -> Path:
        python = "python3" if isolation == "docker" else "/usr/bin/python3"
        (folder / "env.toml").write_text(
            f'[env]\nname = "raw-files-{isolation}"\ndescription = "Notes as files."\nmax_steps = 8\n\n'
            f'[[tool_servers]]\nname = "files"\nnamespace = ""\n'
            f'command = ["{python}", "{{env_dir}}/raw_stdio.py", "files"]\nisolation = "{isolation}"\n'
        )
        return folder

    yield write
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.anyio
@pytest.mark.parametrize("isolation", ["sandbox", "docker"])
async def test_a_filesystem_server_printing_its_paths_passes_behind_every_boundary(isolation, raw_files_env):
    from openenv_mcp.definitions.spec import load_env_file

    from support import need_boundaries

    folder = raw_files_env(isolation)
    need_boundaries(load_env_file(folder / "env.toml"))
    report = await check_env_async(folder, only=EPISODE_RULES, official=False)
    assert _statuses(report) == dict.fromkeys(EPISODE_RULES.split(","), "passed"), [
        (r.rule, r.message) for r in report.results
    ]
    # inside these boundaries the workspace path, HOME and TMPDIR (and Docker's hostname) are the same
    # in every episode: nothing of theirs needed normalizing
    for rule in ("env.reset_restores", "env.episode_isolation"):
        assert "the workspace path" not in report.result(rule).message
        assert "HOME/TMPDIR" not in report.result(rule).message
