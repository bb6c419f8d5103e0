"""The hostile agent filling memory: every memory-backed folder of every sandbox is capped.

An agent that writes a folder backed by memory (``/tmp``, ``/dev/shm``, ``/var/tmp``, ``/run``)
takes the host's memory until the episode closes, and nothing charges it on a host without a
memory cgroup for the episode. Each test writes past the caps from one tool (``shell_run`` in a
fast-start fork and in a plain sandbox, ``python``, the filesystem ``write``, CodeAct ``RunCode``)
and asserts a clear error in the result (``No space left on device``, ``File too large``), the
host's available memory (``MemAvailable``) not dropped by more than the caps and some slack, and
the episode still answering. The caps here are small (:data:`TMPFS_MB`, :data:`FILE_MB`) so the
attacks stay fast; each attack tries :data:`ATTEMPT_MB` per folder, far past cap and slack, or
four times the folder's file count (``nr_inodes``) in empty files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import openenv_mcp
from openenv_mcp import CallTool, RunCode
from openenv_mcp.definitions.spec import EnvSpec, Limits, ToolServerSpec
from openenv_mcp.isolation.faststart.template import fast_starts_enabled, zygote_count
from openenv_mcp.isolation.host.launch import tmpfs_inodes
from openenv_mcp.testing import need

from support import need_boundaries

pytestmark = pytest.mark.sandbox

TMPFS_MB = 16
FILE_MB = 8
ATTEMPT_MB = 1024
"""What each attack tries to write into one folder (an uncapped folder takes all of it)."""
SLACK_MB = 256
"""Noise allowed in ``MemAvailable`` (other processes on the machine, the servers' own pages)."""
CHUNK_MB = 6
FOLDERS = ("/tmp", "/dev/shm", "/var/tmp")
"""The memory-backed folders an episode's unprivileged uid can write (``/run`` is root's, capped too)."""
LIMITS = Limits(tmpfs_mb=TMPFS_MB, file_mb=FILE_MB)
INODES = tmpfs_inodes(TMPFS_MB)
"""Files one of those folders holds (``nr_inodes``)."""


def need_root() -> None:
    need(os.geteuid() == 0, "the file-count cap of a tmpfs (nr_inodes) needs the environment server to run as root")


def server(name: str, module: str, *, fast_start: bool = True, limits: Limits = LIMITS) -> ToolServerSpec:
    return ToolServerSpec(
        name=name,
        command=["python", "-m", f"openenv_mcp.tool_servers.{module}", "--root", "{workspace}", "--lean"],
        isolation="sandbox",
        limits=limits,
        fast_start=fast_start,
    )


def memory_spec(base_dir: Path) -> EnvSpec:
    return EnvSpec(
        name="memory-caps",
        tool_servers=[
            server("shell", "shell"),  # forked from its zygote (as root, fast starts on)
            server("plain", "shell", fast_start=False),  # its own bubblewrap sandbox
            server("python", "python"),
            server("fs", "filesystem", limits=Limits(tmpfs_mb=TMPFS_MB, file_mb=1)),
        ],
        code_limits=LIMITS,
        max_steps=None,
        base_dir=base_dir,
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    spec = memory_spec(tmp_path_factory.mktemp("memory-caps"))
    need_boundaries(spec)
    with openenv_mcp.make(spec) as env:
        yield env


def mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


def shell(env, tool: str, command: str) -> dict:
    obs = env.step(CallTool(name=tool, arguments={"command": command}))
    assert obs.result.structured_content is not None, obs.result
    return obs.result.structured_content


def fill_command(folder: str) -> str:
    """Write ``CHUNK_MB`` files into ``folder`` until ``ATTEMPT_MB`` are written or a write fails."""
    count = ATTEMPT_MB // CHUNK_MB
    return (
        f"i=0; while [ $i -lt {count} ]; do head -c {CHUNK_MB}M /dev/zero > {folder}/fill$i || break; "
        "i=$((i+1)); done; echo $i"
    )


def fill_code(folder: str) -> str:
    return (
        f"written = 0\nwhile written < {ATTEMPT_MB}:\n"
        f"    with open('{folder}/fill%d' % written, 'wb') as f:\n"
        f"        f.write(bytes({CHUNK_MB} << 20))\n"
        f"    written += {CHUNK_MB}\n"
    )


def assert_memory_kept(before: float, folders: int) -> None:
    dropped = before - mem_available_mb()
    allowed = folders * TMPFS_MB + SLACK_MB
    assert dropped < allowed, f"the host lost {dropped:.0f} MiB of available memory (at most {allowed} expected)"


def assert_shell_answers(env, tool: str) -> None:
    out = shell(env, tool, "echo still-here")
    assert out["exit_code"] == 0 and out["stdout"] == "still-here\n", out


@pytest.mark.parametrize("tool", ["shell_run", "plain_run"], ids=["fast-start-fork", "plain-sandbox"])
def test_shell_run_filling_tmp_dev_shm_and_var_tmp_gets_enospc_and_keeps_the_hosts_memory(env, tool):
    env.reset(seed=0)
    if tool == "shell_run" and os.geteuid() == 0 and fast_starts_enabled():
        assert zygote_count() > 0, "the shell server was not forked from a zygote"
    before = mem_available_mb()
    for folder in FOLDERS:
        out = shell(env, tool, fill_command(folder))
        assert "No space left on device" in out["stderr"], (folder, out)
        assert int(out["stdout"]) < TMPFS_MB // CHUNK_MB + 1, (folder, out)
    assert_memory_kept(before, len(FOLDERS))
    out = shell(env, tool, "echo x > /dev/fill")  # /dev is bubblewrap's own tmpfs, of no size: read-only
    assert out["exit_code"] != 0 and ("Read-only file system" in out["stderr"] or "Permission denied" in out["stderr"])
    mounts = shell(env, tool, "cat /proc/self/mounts")["stdout"].splitlines()
    for folder in (*FOLDERS, "/run"):
        options = [line.split()[3] for line in mounts if line.split()[1] == folder]
        assert options and f"size={TMPFS_MB * 1024}k" in options[-1].split(","), (folder, options)
        assert os.geteuid() != 0 or f"nr_inodes={INODES}" in options[-1].split(","), (folder, options)
    assert_shell_answers(env, tool)


@pytest.mark.parametrize("tool", ["shell_run", "plain_run"], ids=["fast-start-fork", "plain-sandbox"])
def test_a_shell_file_past_file_mb_gets_file_too_large_not_a_silent_kill(env, tool):
    env.reset(seed=0)
    out = shell(env, tool, f"head -c {2 * FILE_MB}M /dev/zero > big.bin; echo $?; stat -c %s big.bin")
    assert "File too large" in out["stderr"], out
    assert out["stdout"].split() == ["1", str(FILE_MB << 20)], out
    assert_shell_answers(env, tool)


@pytest.mark.parametrize("tool", ["shell_run", "plain_run"], ids=["fast-start-fork", "plain-sandbox"])
def test_empty_files_run_a_tmpfs_out_of_inodes_before_the_host_runs_out_of_memory(env, tool):
    need_root()
    env.reset(seed=0)
    out = shell(env, tool, f"i=0; while [ $i -lt {4 * INODES} ]; do : > /tmp/e$i || break; i=$((i+1)); done; echo $i")
    assert "No space left on device" in out["stderr"], out
    assert int(out["stdout"]) <= INODES, out
    assert_shell_answers(env, tool)


def test_a_runcode_creating_empty_files_runs_out_of_inodes_and_the_episode_answers(env):
    need_root()
    env.reset(seed=0)
    code = f"import os\nfor i in range({4 * INODES}):\n    os.close(os.open('/tmp/e%d' % i, os.O_CREAT | os.O_WRONLY))"
    out = env.step(RunCode(code=code)).result.structured_content
    assert out["exception"].startswith("OSError: [Errno 28] No space left on device"), out
    out = env.step(RunCode(code="6 * 7")).result.structured_content
    assert out["exception"] is None and out["value"] == "42", out


def test_python_writing_past_file_mb_or_filling_tmp_gets_a_clear_error_and_answers(env):
    env.reset(seed=0)
    before = mem_available_mb()
    obs = env.step(
        CallTool(name="python_run", arguments={"code": f"open('/tmp/big', 'wb').write(bytes({FILE_MB + 1} << 20))"})
    )
    assert obs.result.is_error and "File too large" in obs.result.structured_content["error"], obs.result
    obs = env.step(CallTool(name="python_run", arguments={"code": fill_code("/dev/shm")}))
    assert obs.result.is_error and "No space left on device" in obs.result.structured_content["error"], obs.result
    assert_memory_kept(before, 2)
    obs = env.step(CallTool(name="python_run", arguments={"code": "print(6 * 7)"}))
    assert not obs.result.is_error and obs.result.structured_content["stdout"] == "42\n", obs.result


def test_fs_write_past_file_mb_is_an_error_result_saying_file_too_large(env):
    env.reset(seed=0)
    obs = env.step(CallTool(name="fs_write", arguments={"path": "big.txt", "content": "x" * (2 << 20)}))
    assert obs.result.is_error and "File too large" in obs.result.content[0].text, obs.result
    obs = env.step(CallTool(name="fs_write", arguments={"path": "small.txt", "content": "ok"}))
    assert not obs.result.is_error, obs.result


def test_a_runcode_writing_past_tmp_cap_gets_enospc_and_the_episode_answers(env):
    env.reset(seed=0)
    before = mem_available_mb()
    for folder in FOLDERS:
        out = env.step(RunCode(code=fill_code(folder))).result.structured_content
        assert out["exception"] == "OSError: [Errno 28] No space left on device", (folder, out)
    assert_memory_kept(before, len(FOLDERS))
    out = env.step(RunCode(code=f"open('one', 'wb').write(bytes({FILE_MB + 1} << 20))")).result.structured_content
    assert out["exception"] == "OSError: [Errno 27] File too large", out
    out = env.step(RunCode(code="6 * 7")).result.structured_content
    assert out["exception"] is None and out["value"] == "42", out


def test_the_remount_capability_never_reaches_the_server_or_the_code(env):
    """The file-count remount runs with CAP_SYS_ADMIN before ``setpriv``: the server, its commands and
    CodeAct code hold no capability at all (none could lift a cap by remounting)."""
    env.reset(seed=0)
    fields = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
    for tool in ("plain_run", "shell_run"):
        out = shell(env, tool, "grep ^Cap /proc/self/status /proc/$PPID/status; mount -o remount,size=1g /tmp")
        caps = [line.split(":")[-2:] for line in out["stdout"].splitlines()]
        assert len(caps) == 2 * len(fields) and all(value.strip() == "0000000000000000" for _, value in caps), out
        assert out["exit_code"] != 0 and "size=16384k" in shell(env, tool, "grep ' /tmp ' /proc/self/mounts")["stdout"]
    code = "[l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')]"
    out = env.step(RunCode(code=code)).result.structured_content
    assert out["value"] == repr(["0000000000000000"] * len(fields)), out


def test_a_folder_the_env_file_binds_from_the_host_is_never_remounted(tmp_path):
    """``bind = ["/var/tmp"]`` shows the host's folder: its file count is the host's business (a remount
    would change the host's file system, or fail and keep the server from starting)."""
    bound = server("plain", "shell", fast_start=False).model_copy(update={"bind": ["/var/tmp"]})
    spec = EnvSpec(name="memory-bind", tool_servers=[bound], max_steps=None, base_dir=tmp_path)
    need_boundaries(spec)
    before = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if " /var/tmp " in line]
    with openenv_mcp.make(spec) as env:
        env.reset(seed=0)
        assert_shell_answers(env, "plain_run")
        mounts = shell(env, "plain_run", "cat /proc/self/mounts")["stdout"].splitlines()
        tmp = [line.split()[3] for line in mounts if line.split()[1] == "/tmp"]
        assert os.geteuid() != 0 or f"nr_inodes={INODES}" in tmp[-1].split(","), mounts
    assert [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if " /var/tmp " in line] == before
