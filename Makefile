# The two set-up commands on a fresh machine: `make demo` and `make test`.
# The developer's loop: `make test-fast` (no test marked slow or slurm; a few minutes).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
JOBS ?= 2
SNAKEMAKE := $(BIN)/python -m snakemake --scheduler greedy --rerun-incomplete

.PHONY: demo test test-fast lint test-slurm install dry-run clean chromium bubblewrap

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --disable-pip-version-check -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

# Every process under test runs in a bubblewrap sandbox (docs/isolation.md): bring Debian's
# bubblewrap when it is missing and we may (as root); otherwise `mcptrials validate` says how.
bubblewrap:
	@command -v bwrap >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null)

# Runs the whole demo matrix with the reference model (no API key needed).
demo: install bubblewrap
	PATH="$(CURDIR)/$(BIN):$$PATH" $(SNAKEMAKE) -j $(JOBS)
	@echo "report: $(CURDIR)/results/report/index.html"
	@echo "report: $(CURDIR)/results/report/report.md"
	@echo 'commands: run `source .venv/bin/activate` here, in each new shell, to put mcptrials and snakemake on the PATH'

dry-run: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(SNAKEMAKE) -n -q

# The browser test needs Debian's chromium; install it when missing (CI runs as root).
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# The Slurm test is left out here: it installs and starts a real Slurm (`make test-slurm`).
# ruff's pyflakes and syntax rules and its format check over the library and the tests
# (pyproject's [tool.ruff]), then mypy over the library (pyproject's [tool.mypy]: the strictness and why).
lint: install
	$(BIN)/ruff check -q src tests
	$(BIN)/ruff format --check -q src tests
	$(BIN)/mypy

PYTEST_ARGS ?= -m "not slurm"
test: install chromium bubblewrap lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q $(PYTEST_ARGS)

# The developer's inner loop: every test but those marked slow (the real workflow, real
# servers, anything over ~10 s) or slurm. `make test` stays the whole suite.
test-fast: install chromium bubblewrap lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -m "not slow and not slurm" $(FAST_ARGS)

# A single-node Slurm on this machine (needs root: installs slurm-wlm and munge when missing).
test-slurm: install bubblewrap
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -s -m slurm tests/workflow/test_slurm.py

clean:
	rm -rf results .snakemake
