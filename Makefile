# openenv-mcp: every target creates .venv and installs what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench conformance install clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/openenv-mcp demo

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m bench

# Official MCP conformance suite (Node 22 tooling into .cache/node-tools/) against a served env.
CONFORMANCE_ENV ?= echo
conformance: $(STAMP)
	bash conformance/node-tools.sh .cache/node-tools
	$(BIN)/python -m openenv_mcp.conformance.official_suite $(CONFORMANCE_ENV)

clean:
	rm -rf $(VENV) .pytest_cache
