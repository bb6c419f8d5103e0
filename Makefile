# openenv-mcp: every target creates .venv and installs what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LIGHT_STAMP := $(VENV)/.installed-light
DEMO_STAMP := $(VENV)/.installed-demo
# The dev extra includes TRL, which needs torch: take the CPU build first (here a local wheel; elsewhere e.g.
# TORCH_PIP='torch --index-url https://download.pytorch.org/whl/cpu'), or pip pulls CUDA (~3 GB more).
TORCH_PIP ?= torch==2.13.0

.PHONY: demo test check test-all-tasks test-replay test-corpus corpus browser validate-browser test-lowest lint bench conformance install install-light install-demo clean validate-terminal

# A venv whose python is missing, broken or too old (say a first `make` ran with the wrong PY) is not
# "installed": it is recreated on the next run (rerun with PY=python3.11 or newer; no `make clean`).
VENV_OK := $(shell $(BIN)/python -c 'import sys; print(int(sys.version_info >= (3, 11)))' 2>/dev/null)
ifneq ($(VENV_OK),1)
  $(shell rm -f $(STAMP) $(LIGHT_STAMP) $(DEMO_STAMP))
endif

# pip install -e: setuptools ends every editable install of this layout (packages mapped from top-level
# folders, so a meta path finder, not a .pth) with an informational `!!` block ("Editable installation. Please
# be careful with folders in your working directory..."), a warning by setuptools' own admission; that one
# message is filtered. Any other warning of the build shows (and tests/test_wheel.py fails on one in a build).
EDITABLE := PYTHONWARNINGS='ignore:Editable installation' $(BIN)/pip install -q -e

# A venv with a python >= 3.11 and a pip that reads dependency groups (PEP 735: pip >= 25.1).
define new_venv
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "openenv-mcp needs Python >= 3.11, and PY=$(PY) is $$($(PY) --version 2>/dev/null || echo "not found"):" \
	       "rerun with PY=python3.11 (or newer), e.g. make PY=python3.12 $(MAKECMDGOALS)" >&2; exit 1; }
	@[ "$(VENV_OK)" = 1 ] || $(PY) -m venv --clear $(VENV)
	$(BIN)/pip install -q --upgrade pip
endef

# Everything `make test` needs: every extra (dev), the lint tools and the test runner (dependency groups).
$(STAMP): pyproject.toml
	$(new_venv)
	$(BIN)/pip install -q $(TORCH_PIP)
	$(EDITABLE) '.[dev]' --group lint --group test
	touch $(STAMP)

# What `make lint` and `make check` need, without torch or Ray: the lint tools, the test runner, and the extras
# whose packages the type checker and deptry resolve (trl and ray are absent here: basedpyright reports their
# imports as warnings, see [tool.pyright]). A venv `make install` filled already has all of it.
LIGHT_EXTRAS := docker,postgres,gymnasium,datasets,harness,rewards,publish
$(LIGHT_STAMP): pyproject.toml
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then touch $(LIGHT_STAMP); \
	else $(MAKE) --no-print-directory VENV=$(VENV) install-light; fi

install-light:
	$(new_venv)
	$(EDITABLE) '.[$(LIGHT_EXTRAS)]' --group lint --group test
	touch $(LIGHT_STAMP)

install: $(STAMP)

# What `openenv-mcp demo` needs: the package and its core dependencies, no extra (the tour serves the files
# environment in-process and drives it with the MCP client). A venv `make install` or `make lint` filled has it.
$(DEMO_STAMP): pyproject.toml
	@if { [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; } || { [ -f $(LIGHT_STAMP) ] && [ $(LIGHT_STAMP) -nt pyproject.toml ]; }; \
	then touch $(DEMO_STAMP); else $(MAKE) --no-print-directory VENV=$(VENV) install-demo; fi

install-demo:
	$(new_venv)
	$(EDITABLE) .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/openenv-mcp demo

# Test files run in parallel (3 workers, one file per worker: a file's fixtures stay together; the corpus file's
# tests go one by one, see SPREAD in tests/conftest.py); the suite is mostly waiting on subprocesses, sandboxes
# and containers, so 3 workers help on 2 cores. PYTEST_WORKERS=0: serial.
PYTEST_WORKERS ?= 3
# The third-party conformance corpus (conformance/corpus/: pinned npm and PyPI servers, their Docker images) is
# installed by `corpus` (idempotent: quick once cached in .cache/) and tested in `make test` with the rest: each
# server behind its `ci` boundary (expected.toml: every boundary twice) against conformance/corpus/expected.toml,
# run twice behind process, and each server's fidelity through /mcp and step(). Offline, the install fails with a
# message and those tests skip (CI sets OPENENV_MCP_REQUIRE_ALL=1, where a skip fails). `make test-corpus` runs
# only them, every server behind every boundary.
CORPUS_TESTS := tests/conformance/test_corpus.py
corpus: $(STAMP)
	@bash conformance/corpus/install.sh .cache/corpus .cache/node-tools || \
	  echo "make: the conformance corpus could not be installed (no registry or Docker?): its tests will skip" >&2

# The browser world's pinned Playwright MCP server (envs/browser/package-lock.json; npm ci, Debian's Chromium,
# no browser download): idempotent, quick once installed. Offline it fails with a message and its tests skip.
browser: $(STAMP)
	@$(BIN)/python -m openenv_mcp.worlds.browser install envs/browser || \
	  echo "make: the Playwright MCP server could not be installed (no npm registry?): the browser tests will skip" >&2

# Every browser task: reference 1, wrong and probes 0 (make test runs a subset). Reports in artifacts/.
validate-browser: browser
	@mkdir -p artifacts
	$(BIN)/openenv-mcp validate browser --json artifacts/validate-browser.json --html artifacts/validate-browser.html

# The quick loop: lint, then the tests that need no third-party corpus, Docker, Node, torch or Ray (under 5 min on
# 2 cores), in the light venv. Engines they can use when present (bubblewrap, PostgreSQL) skip when missing, as
# anywhere outside CI. A new test file that needs none of the five goes here.
CHECK_TESTS := tests/test_asgi.py tests/test_errors.py tests/test_types.py tests/serve/test_statuses.py tests/serve/test_credentials.py tests/definitions/test_spec.py tests/client/test_env.py tests/client/test_remote.py \
  tests/core/test_arguments.py tests/core/test_routing.py tests/core/test_rubric.py tests/core/test_warm.py \
  tests/core/test_rewards.py tests/serve/test_app.py tests/serve/test_control.py tests/serve/test_manager.py \
  tests/serve/test_metrics.py tests/serve/test_mcp_server.py tests/isolation/boundaries/test_inprocess.py \
  tests/isolation/boundaries/test_process.py tests/isolation/host/test_workspace.py tests/isolation/host/test_uids.py \
  tests/conformance/test_volatility.py tests/conformance/test_normalize.py tests/conformance/test_argsgen.py \
  tests/envs/test_files_env.py tests/envs/test_sql_env.py tests/tool_servers/test_lean.py \
  tests/hostile/test_hostile_files_reward.py tests/hostile/test_hostile_judge.py tests/hostile/test_hostile_openenv.py \
  tests/worlds/harbor/test_taskformat.py tests/worlds/harbor/test_tamper.py tests/rollout/test_tree.py \
  tests/rollout/test_scripted.py tests/rollout/test_advantages.py tests/cli/test_rollout_branch.py \
  tests/definitions/test_limits.py \
  tests/hostile/test_hostile_memory.py \
  tests/hostile/test_hostile_deep_process_tree.py \
  tests/isolation/host/test_launch.py
CHECK_MARKS := not docker and not node and not browser
check: lint
	env -u OPENENV_MCP_REQUIRE_ALL $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "$(CHECK_MARKS)" \
	  $(CHECK_TESTS) $(PYTEST_ARGS)

test: $(STAMP) lint corpus browser
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# Every task of every built-in environment through the tests that play them all (both faces, the control plane,
# `run --all-tasks`, conformance): make test plays each env's [tasks.ci] subset; the terminal and browser
# worlds' whole sets also have validate-terminal and validate-browser.
ALL_TASKS_TESTS := tests/serve/test_parity.py tests/serve/test_mcp_http.py tests/definitions/test_tasks.py tests/conformance/test_rules.py
test-all-tasks: $(STAMP) browser
	OPENENV_MCP_ALL_TASKS=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(ALL_TASKS_TESTS) $(PYTEST_ARGS)

# The replayed attacks at full size (make test runs each at a size a 2-core CI machine takes in seconds):
# two servers leasing uids from a squeezed range for 40 rounds, a 100k-deep process tree for the reaper (the
# uid's process cap stays under half the kernel's pid_max; the chain grows for at most 15 minutes), six
# episodes and three half-started ones closed under a Docker engine that answers each request a second late.
# One at a time: they load the whole machine. OPENENV_MCP_REPLAY_FULL=1 sizes them.
REPLAY_TESTS := tests/hostile/test_hostile_uid_leases.py tests/hostile/test_hostile_deep_process_tree.py \
  tests/hostile/test_hostile_slow_docker.py
test-replay: $(STAMP)
	OPENENV_MCP_REPLAY_FULL=1 $(BIN)/python -m pytest -n 0 -s $(REPLAY_TESTS) $(PYTEST_ARGS)

test-corpus: corpus
	OPENENV_MCP_FULL_CORPUS=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(CORPUS_TESTS) $(PYTEST_ARGS)

# Lint, format, types (basedpyright: pyright without Node) and layering (import-linter contracts in pyproject).
# Without Ray installed (the light venv of `make lint`/`make check`) the ray layer cannot be type-checked: the
# rest is, and the output says so; with everything installed (`make install`, CI) a warning fails too.
PYRIGHT := $(BIN)/basedpyright --pythonpath $(BIN)/python --threads 2
NOT_RAY := $(filter-out openenv_mcp/ray openenv_mcp/__pycache__,$(wildcard openenv_mcp/*)) tool_servers
lint: $(LIGHT_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@if $(BIN)/python -c 'import importlib.util as u, sys; sys.exit(u.find_spec("ray") is None)'; then \
	  echo "$(PYRIGHT) --warnings"; $(PYRIGHT) --warnings; \
	else echo "basedpyright: Ray is not installed, openenv_mcp/ray is not type-checked (make install has it)"; \
	  $(PYRIGHT) $(NOT_RAY); fi
	$(BIN)/lint-imports
	$(BIN)/deptry openenv_mcp tool_servers envs

# The oldest versions we claim to support (the lower bounds in pyproject): a separate venv resolved with
# lowest-direct, running the tests that need only the core dependencies (CI runs it before `make test`).
test-lowest:
	bash .ci/lowest.sh

bench: $(STAMP)
	$(BIN)/python -m bench

# The whole built-in terminal task set (Harbor format, envs/terminal/tasks): every task's image built
# (one at a time, content-hashed and cached; BASE_IMAGE = the local openenv-mcp/base:bookworm when the
# engine has it), then `validate` on every task: reference 1, nothing 0, every hacking probe 0. make test
# validates a subset (tests/envs/test_terminal_env.py). Needs a Docker engine (.ci/docker-setup.sh).
validate-terminal: $(STAMP)
	$(BIN)/openenv-mcp harbor build terminal
	@mkdir -p .cache
	$(BIN)/openenv-mcp validate terminal --json .cache/validate-terminal.json

# Official MCP conformance suite (Node 22 tooling into .cache/node-tools/) against a served env.
CONFORMANCE_ENV ?= echo
conformance: $(STAMP)
	bash conformance/node-tools.sh .cache/node-tools
	$(BIN)/python -m openenv_mcp.conformance.nodetools $(CONFORMANCE_ENV)

clean:
	rm -rf $(VENV) .pytest_cache
