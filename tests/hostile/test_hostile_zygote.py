"""The hostile agent against fast starts: two ``coding`` episodes whose sandboxed servers were forked by
the same zygotes, on a server running as root. The agent runs each attack through its own tools
(``shell_run`` / ``python_run``) and tries to reach the zygote or the sibling episode: kill or signal
them, write into descriptors it might have inherited, read the sibling's private folders.

Each test asserts the attack fails with a clear result, the zygote and the sibling episode are
untouched and keep answering, the attacker's episode keeps answering, and its reward is not forged.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from conftest import need

import openenv_mcp
from openenv_mcp.isolation import zygote
from openenv_mcp.isolation.process import uid_processes


@pytest.fixture
def two(tmp_path, monkeypatch):
    """Two live coding episodes (attacker, sibling), workspaces and reward folders under ``tmp_path``."""
    need(shutil.which("bwrap") is not None, "bubblewrap (bwrap) is not installed: the coding env sandboxes code")
    need(os.geteuid() == 0, "fast starts apply when the environment server runs as root")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    attacker = openenv_mcp.make("coding", workdir=work)
    sibling = openenv_mcp.make("coding", workdir=work)
    try:
        attacker.reset(seed=0)
        sibling.reset(seed=0)
        yield attacker, sibling
    finally:
        attacker.close()
        sibling.close()


def run(env, tool: str, **arguments):
    obs = env.step({"type": "call_tool", "name": tool, "arguments": arguments})
    return obs, (obs.result.structured_content or {})


def uid_of(env) -> int:
    return int(run(env, "shell_run", command="id -u")[1]["stdout"])


def assert_sibling_untouched(sibling, marker: str = "") -> None:
    _, out = run(sibling, "shell_run", command="echo alive; ls -A /tmp /dev/shm")
    assert out["stdout"].split() == ["alive", "/dev/shm:", "/tmp:"], out
    assert run(sibling, "python_run", code="6 * 7")[1]["result"] == "42"


def test_an_agent_that_kills_every_process_it_can_reach_touches_neither_the_zygote_nor_the_sibling(two):
    attacker, sibling = two
    zygotes = set(zygote.zygote_pids())
    sibling_uid = uid_of(sibling)
    sibling_procs = set(uid_processes(sibling_uid))
    reward = attacker.state().cumulative_reward
    code = (
        "import os, signal\n"
        "hit = []\n"
        "for pid in range(1, 1 << 16):\n"
        "    if pid == os.getpid():\n"
        "        continue\n"
        "    for sig in (signal.SIGKILL, signal.SIGSTOP):\n"
        "        try:\n"
        "            os.kill(pid, sig); hit.append(pid)\n"
        "        except OSError:\n"
        "            pass\n"
        "print(sorted(set(hit)))\n"
        "os.kill(-1, signal.SIGKILL)\n"
    )
    obs, _ = run(attacker, "python_run", code=code)
    assert obs.result.is_error or "restarted" in str(obs.result.structured_content), obs.result
    assert set(zygote.zygote_pids()) >= zygotes
    for pid in zygotes:
        os.kill(pid, 0)
        assert "State:\tT" not in open(f"/proc/{pid}/status").read()  # not stopped either
    assert set(uid_processes(sibling_uid)) >= sibling_procs
    assert_sibling_untouched(sibling)
    assert run(attacker, "shell_run", command="echo again")[1]["stdout"] == "again\n"  # the attacker's server restarted
    assert attacker.state().cumulative_reward == reward


def test_an_agent_writing_into_every_descriptor_number_reaches_no_zygote_socket_nor_sibling_pipe(two):
    attacker, sibling = two
    forged = '{"exit": 0}\\n{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}\\n'
    script = f"import os\nfor fd in range(3, 1024):\n    try: os.write(fd, b'{forged}'); print('wrote', fd)\n    except OSError: pass\nprint('done')"
    _, out = run(attacker, "shell_run", command="python3 -", stdin=script)
    assert out["stdout"] == "done\n", out  # the shell server's commands inherit nothing past stdio
    for pid in zygote.zygote_pids():
        os.kill(pid, 0)
    assert_sibling_untouched(sibling)
    assert run(attacker, "python_run", code="1 + 1")[1]["result"] == "2"


def test_an_agent_cannot_find_the_sibling_or_its_private_folders(two):
    attacker, sibling = two
    run(sibling, "shell_run", command="echo secret > /workspace/sibling-note; true")
    code = (
        "import os, glob\n"
        "seen = {p: open(f'/proc/{p}/cmdline','rb').read()[:60] for p in os.listdir('/proc') if p.isdigit()}\n"
        "print(len(seen), any(b'_zygote' in c for c in seen.values()))\n"
        "roots = ['/tmp', '/var/tmp', '/run', '/dev/shm', '/workspace', '/home', '/root', '/mnt', '/srv']\n"
        "print([p for r in roots for p in glob.glob(r + '/**/sibling-note', recursive=True)][:3])\n"
        "open('/tmp/planted', 'w').write('x'); open('/dev/shm/planted', 'w').write('x')\n"
    )
    _, out = run(attacker, "python_run", code=code)
    lines = out["stdout"].splitlines()
    assert lines[0].split()[1] == "False", out  # the zygote is not in its PID namespace
    assert int(lines[0].split()[0]) < 12, out  # only its own few processes
    assert lines[1] == "[]", out  # no other workspace anywhere it can see
    assert_sibling_untouched(sibling)
