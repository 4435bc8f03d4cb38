# Two commands on a fresh machine (Python >= 3.10 and git): `make demo` and `make test`.
# Both create .venv and install memfs with its dev extras on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

.PHONY: demo test test-fast package-test faults faults-ci lint bench clean

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

# The suite's temporary folders (80,000 files a run: vaults, git repositories, indexes) go to a
# memory file system when there is a roomy one (/dev/shm, 4 GiB free), as TMPDIR: on the 2-core
# machine's disk their creation, renames, fsyncs and deletion cost about a fifth of the run's wall
# time and a tenth of its CPU. The tests see the same files and calls; `make test TEST_TMPDIR=`
# keeps them on the default temporary folder.
TEST_TMPDIR ?= $(shell $(PYTHON) -c 'import shutil; print("/dev/shm" if shutil.disk_usage("/dev/shm").free >= 4 << 30 else "")' 2>/dev/null)
# Compiled test modules and plugins are kept between runs even where PYTHONDONTWRITEBYTECODE is set
# (tests/conftest.py says why).
TEST_ENV := PYTHONDONTWRITEBYTECODE= $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR))

test: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest -q $(PARALLEL) -m "not package and not faults"

test-fast: $(STAMP)
	$(TEST_ENV) $(PY) -m pytest -q $(PARALLEL) -m "not slow and not package and not faults"

package-test: $(STAMP)
	$(PY) -m pytest -q -m package

faults: $(STAMP)
	$(PY) -m pytest -q -m faults
	$(PY) bench/faults.py

# What CI runs of it, bounded to about ten minutes on the 2-core machine: the fault tests and every
# write path failed at every operation as in `make faults`, but 20 kills a path instead of 200 and a
# race of 300 edits a side, the kill points drawn from the commit's id (a new sample each commit,
# the same sample for a rerun). The full run stays `make faults`, before a release.
FAULTS_SEED ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
faults-ci: $(STAMP)
	$(PY) -m pytest -q -m faults
	$(PY) bench/faults.py --kills 20 --race 300 --seed "$(FAULTS_SEED)"

lint: $(STAMP)
	$(PY) -m ruff check memfs tests bench scripts
	$(PY) -m ruff format --check memfs tests bench scripts
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .demo .pytest_cache build *.egg-info
