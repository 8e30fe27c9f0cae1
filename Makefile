# The project's commands. `make demo` and `make test` work on a fresh clone:
# each creates .venv and installs what it needs first.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The versions tested here (torch's exact version: pyproject states a range, for apps).
CONSTRAINTS := -c constraints.txt
# pip's notes about local package folders that do not exist on this machine are noise.
QUIET_PIP := { grep -v "is ignored: it is neither a file nor a directory" || true; }

.PHONY: demo test test-fast lint bench install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install -q $(CONSTRAINTS) -e '.[multilingual]' 2>&1 | $(QUIET_PIP)
	$(BIN)/python -c "import ragbrain"
	touch $@

$(VENV)/.installed-test: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install -q $(CONSTRAINTS) -e '.[test]' 2>&1 | $(QUIET_PIP)
	$(BIN)/python -c "import ragbrain, pytest"
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: install
	$(BIN)/ragbrain demo

# Everything: unit and integration tests (what CI runs).
test: install-test
	$(BIN)/pytest -q

# The inner loop: the unit tests alone (no model, no process, seconds).
test-fast: install-test
	$(BIN)/pytest -q tests/unit

# The size limits (README, docs pages, decision records, benchmark scripts, CHANGELOG
# entries, store/ modules) are stated and checked in tests/support/doc_limits.py.
lint: install-test
	$(BIN)/ruff check src tests graphs benchmarks
	$(BIN)/ruff format --check src tests graphs benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m tests.support.doc_limits

bench: install-test
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache .grimp_cache
