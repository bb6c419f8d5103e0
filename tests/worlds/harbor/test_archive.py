"""Archives of host folders (a task's build context, its tests and solution): what goes in."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from openenv_mcp.worlds.harbor.archive import folder_tar


def test_a_task_folders_bytecode_caches_pip_compiled_stay_out_of_its_archives(tmp_path: Path) -> None:
    """An installed wheel's task folders hold ``__pycache__`` (pip compiles every ``.py``): neither a build
    context (and so the image's content hash) nor the tests copied in for grading carry them."""
    (tmp_path / "calc" / "__pycache__").mkdir(parents=True)
    (tmp_path / "calc" / "core.py").write_text("X = 1\n")
    (tmp_path / "calc" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    with tarfile.open(fileobj=io.BytesIO(folder_tar(tmp_path, "tests", exclude=["Dockerfile"]))) as tar:
        assert tar.getnames() == ["tests", "tests/calc", "tests/calc/core.py"]
