"""The launcher's limits: the file-size limit follows ``file_mb`` and never raises a lower one the host set."""

from __future__ import annotations

import resource
import subprocess
import sys

from openenv_mcp.definitions.spec import Limits, ToolServerSpec
from openenv_mcp.isolation.host.launch import Launch, file_size_limit, rlimits_for


def spec(**limits) -> ToolServerSpec:
    return ToolServerSpec(name="s", command=["true"], isolation="process", limits=Limits(**limits))


def test_every_server_gets_a_file_size_limit_of_file_mb():
    assert (resource.RLIMIT_FSIZE, (8 << 20, 8 << 20)) in rlimits_for(spec(file_mb=8), False)
    assert (resource.RLIMIT_FSIZE, (256 << 20, 256 << 20)) in rlimits_for(spec(), False)


def test_a_lower_file_size_limit_inherited_from_the_host_is_kept():
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (3 << 20, hard))
    try:
        assert file_size_limit(256) == 3 << 20
        assert file_size_limit(1) == 1 << 20
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_launched_process_writing_past_file_mb_gets_efbig(tmp_path):
    code = "import sys\ntry:\n    open('big.bin', 'wb').write(bytes(2 << 20))\nexcept OSError as e:\n    print(e)"
    launch = Launch([sys.executable, "-c", code], {}, str(tmp_path), None, rlimits_for(spec(file_mb=1), False))
    done = subprocess.run(launch.command(), capture_output=True, text=True, timeout=30, cwd=tmp_path, check=False)
    assert done.stdout.strip() == "[Errno 27] File too large", done
    assert (tmp_path / "big.bin").stat().st_size == 1 << 20
