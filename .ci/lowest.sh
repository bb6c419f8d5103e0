#!/usr/bin/env bash
# Lowest-versions job: install openenv-mcp with every direct dependency at its declared lower bound
# (uv's lowest-direct resolution) in its own venv, then run the tests that need only the core dependencies.
# Proves the lower bounds in pyproject.toml are real.
# Usage: bash .ci/lowest.sh [install|test] (or make test-lowest: both; .ci/run installs while other installs run).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
VENV=${LOWEST_VENV:-.venv-lowest}
PHASE=${1:-all}
if [ "$PHASE" != test ]; then
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip uv
  "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --resolution lowest-direct --reinstall-package openenv-mcp \
    -e '.[postgres]' 'pytest>=9.2' 'pytest-timeout>=2.3' 'pytest-xdist>=3.6'
fi
[ "$PHASE" != install ] || exit 0
echo "lowest-direct versions of the core dependencies:"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as m, re
core = [re.split(r"[<>=!;\[ ]", r, maxsplit=1)[0] for r in m.requires("openenv-mcp") if "extra ==" not in r]
print("  " + ", ".join(f"{n}=={m.version(n)}" for n in core if n))
PY
# Tests that need only the core dependencies and psycopg (the sql environment's production variant; no docker SDK,
# TRL, gymnasium, datasets, openai, ...): the ones that drive mcp, fastmcp, starlette, uvicorn, pydantic, httpx and
# anyio through every face (step, in-memory and HTTP MCP clients, the control plane, stdio tool servers). The
# sandbox, workspace and conformance suites are not about dependency versions: make test runs them (this job
# has to fit CI's time budget beside it). The browser world's cases too: its Node server does not care.
# Anything needing an optional package skips with its reason, so OPENENV_MCP_REQUIRE_ALL is unset here.
env -u OPENENV_MCP_REQUIRE_ALL "$VENV/bin/python" -m pytest -q -p no:cacheprovider -n 3 --dist loadfile \
  --basetemp="${TMPDIR:-/tmp}/openenv-mcp-lowest" -k "not browser" \
  tests/client/test_env.py tests/core/test_routing.py tests/serve/test_manager.py tests/definitions/test_spec.py \
  tests/tool_servers/test_filesystem_server.py tests/serve/test_app.py tests/serve/test_control.py \
  tests/serve/test_mcp_http.py tests/isolation/boundaries/test_inprocess.py tests/isolation/boundaries/test_process.py \
  tests/serve/test_parity.py tests/core/test_arguments.py tests/envs/test_sql_env.py tests/envs/test_files_env.py \
  tests/serve/test_metrics.py tests/tool_servers/test_lean.py tests/core/test_rewards.py tests/core/test_warm.py
