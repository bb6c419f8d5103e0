"""The reference environments, one folder each (``env.toml`` and its data), installed as ``openenv_mcp.envs``.

Each is registered under its name in the ``openenv_mcp.envs`` entry-point group (see pyproject.toml),
which names one of the folders below; a third-party package registers its own the same way.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent

browser = HERE / "browser"
coding = HERE / "coding"
echo = HERE / "echo"
files = HERE / "files"
sql = HERE / "sql"
terminal = HERE / "terminal"
