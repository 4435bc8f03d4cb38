# Two commands on a fresh machine (Python >= 3.10 and git): `make demo` and `make test`.
# Both create .venv and install memfs with its dev extras on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

.PHONY: demo test test-fast package-test faults lint bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10) and "memfs needs Python >= 3.10" or 0)'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# an older .venv has this project installed under its old distribution name `memfs`
	$(PY) -m pip uninstall --quiet --yes memfs 2>/dev/null || true
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

# The suite runs in parallel (pytest-xdist): one worker per core by default; `make test WORKERS=0`
# runs it in this process (pdb, or a test that misbehaves only in parallel). A worker that runs out
# of tests takes some from the other's queue (worksteal), so a few long tests leave no core idle.
WORKERS ?= auto
PARALLEL := $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist worksteal)

# Compiled test modules and plugins are kept between runs even where PYTHONDONTWRITEBYTECODE is set
# (tests/conftest.py says why).
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE=

test: $(STAMP)
	$(KEEP_BYTECODE) $(PY) -m pytest -q $(PARALLEL) -m "not package and not faults"

test-fast: $(STAMP)
	$(KEEP_BYTECODE) $(PY) -m pytest -q $(PARALLEL) -m "not slow and not package and not faults"

package-test: $(STAMP)
	$(PY) -m pytest -q -m package

faults: $(STAMP)
	$(PY) -m pytest -q -m faults
	$(PY) bench/faults.py

lint: $(STAMP)
	$(PY) -m ruff check memfs tests bench scripts
	$(PY) -m ruff format --check memfs tests bench scripts
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .demo .pytest_cache build *.egg-info
