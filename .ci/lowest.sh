#!/usr/bin/env bash
# Lowest-versions job: install openenv-mcp with every direct dependency at its declared lower bound
# (uv's lowest-direct resolution) in its own venv, then run the tests that need only the core dependencies.
# Proves the lower bounds in pyproject.toml are real. Usage: bash .ci/lowest.sh (or make test-lowest).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
VENV=${LOWEST_VENV:-.venv-lowest}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip uv
"$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --resolution lowest-direct --reinstall-package openenv-mcp \
  -e '.[postgres]' 'pytest>=9.2' 'pytest-timeout>=2.3' 'pytest-xdist>=3.6'
echo "lowest-direct versions of the core dependencies:"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as m, re
core = [re.split(r"[<>=!;\[ ]", r, maxsplit=1)[0] for r in m.requires("openenv-mcp") if "extra ==" not in r]
print("  " + ", ".join(f"{n}=={m.version(n)}" for n in core if n))
PY
# Tests that need only the core dependencies and psycopg (the sql environment's production variant; no docker SDK, TRL, gymnasium, datasets, openai, ...):
# anything needing an optional package skips with its reason, so OPENENV_MCP_REQUIRE_ALL is unset here.
env -u OPENENV_MCP_REQUIRE_ALL "$VENV/bin/python" -m pytest -q -p no:cacheprovider -n 3 --dist loadfile \
  --basetemp="${TMPDIR:-/tmp}/openenv-mcp-lowest" \
  tests/test_env.py tests/test_episode.py tests/test_episodes.py tests/test_env_file.py tests/test_filesystem.py \
  tests/test_server.py tests/test_control.py tests/test_mcphttp.py tests/test_remote.py \
  tests/test_isolation_inprocess.py tests/test_isolation_process.py tests/test_isolation_sandbox.py \
  tests/test_isolation_workspace.py tests/test_conformance.py tests/test_python_server.py \
  tests/test_shell_server.py tests/test_parity.py tests/test_validation.py tests/test_sql_env.py \
  tests/test_files_env.py tests/test_coding_env.py tests/test_metrics.py tests/test_lean.py \
  tests/test_reward_command.py tests/test_warm.py
