# Two commands on a fresh machine: `make serve` and `make test`. Both create .venv first:
# `make serve` with what serving needs and torch's CPU build, `make test` adds the test tools.
# Versions come from requirements.lock (constraints: the versions CI and the image test).
PYTHON ?= python3
# torch for the neural solvers: cpu (the default), cuda (PyPI's CUDA build, several GB),
# cu126, cu128... (that CUDA build from PyTorch's index) or none; `make clean` to change it
TORCH ?= cpu
TORCH_VERSION := 2.13.0
TORCH_INDEX := https://download.pytorch.org/whl
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
LOCK := requirements.lock
PIP := $(BIN)/python -m pip install --disable-pip-version-check -c $(LOCK)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test test-heavy lint bench docs clean python-check lock

# cosolve runs on Python 3.11 to 3.13: any other stops here, before a venv is made (3.12 once
# spun for 8 minutes in pip's resolver before failing without saying why)
CHECK_PYTHON = $(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 11) <= v <= (3, 13) else "cosolve needs Python 3.11, 3.12 or 3.13; $(PYTHON) is %d.%d: name another, e.g. make serve PYTHON=python3.12" % v)'

python-check:
	@command -v $(PYTHON) >/dev/null || { echo "no $(PYTHON) here: cosolve needs Python 3.11, 3.12 or 3.13 (make serve PYTHON=python3.12)" >&2; exit 1; }
	@$(CHECK_PYTHON)

$(BIN)/python:
	@$(MAKE) --no-print-directory python-check
	$(PYTHON) -m venv $(VENV)

# torch first, so that nothing pulls PyPI's CUDA build: with TORCH=cpu a CPU wheel pip already
# has (a wheelhouse, its find-links) without asking any index, else PyTorch's CPU index (one
# retry: an index that cannot be reached fails in seconds). If neither has one (a Python or
# platform without a CPU build), the service is installed without torch and says so: the
# neural solvers are then listed as unavailable, with the reason.
$(STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	@echo "cosolve: installing what serving needs into $(VENV), torch $(TORCH_VERSION) ($(TORCH) build) first;"
	@echo "  with the CPU build: about 400 MB of downloads, 1.7 GB in $(VENV), 3 minutes on 2 busy cores"
	@set -e; extras=neural; \
	case "$(TORCH)" in \
	  cpu) { $(PIP) --no-deps --no-index "torch==$(TORCH_VERSION)+cpu" >/dev/null 2>&1 \
	         && echo "cosolve: torch's CPU build installed from a wheel pip had without network"; } \
	       || $(PIP) --no-deps --retries 1 --index-url $(TORCH_INDEX)/cpu "torch==$(TORCH_VERSION)" \
	       || { extras=; echo "cosolve: no CPU build of torch $(TORCH_VERSION) for this Python and platform could be installed; going on without it: the neural solvers will be listed as unavailable (TORCH=cuda for PyPI's build)" >&2; } ;; \
	  none) extras= ;; \
	  cuda) $(PIP) --no-deps "torch==$(TORCH_VERSION)" ;; \
	  *) $(PIP) --no-deps --index-url $(TORCH_INDEX)/$(TORCH) "torch==$(TORCH_VERSION)" ;; \
	esac; \
	echo "cosolve: the service and its dependencies$${extras:+ (and torch's)}"; \
	$(PIP) -e ".$${extras:+[$$extras]}"
	@touch $@

$(DEV_STAMP): $(STAMP)
	@echo "cosolve: adding the test tools (pytest, ruff, Ray, mkdocs, selenium, schemathesis): 0.5 GB, 2 minutes on 2 busy cores"
	$(PIP) -e '.[dev]'
	@touch $@

serve: $(STAMP)
	$(BIN)/cosolve serve --host $(HOST) --port $(PORT)

test: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -q -m "not heavy" --durations=15

# long solves, server restarts and Ray (about 3 minutes): CI runs them after `make test`
test-heavy: $(DEV_STAMP)
	$(BIN)/pytest -q -m heavy --durations=5

lint: $(DEV_STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.leaderboard
	mkdir -p out/bench
	$(BIN)/python -m benchmarks.routing --sets uniform --sizes 100 --instances-per-size 1 --time-limit 1 --out out/bench/routing.md
	$(BIN)/python -m benchmarks.scheduling --workflows 20 --seeds 5000 --out out/bench/scheduling.md

# the docs site, built strictly (a broken link or a page left out of the nav fails) into site/
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# the installed versions (after a dependency changed in pyproject.toml and `make test` passed)
lock: $(DEV_STAMP)
	{ echo "# Versions CI and the image install (pip -c): written by make lock from a tested .venv"; \
	  $(BIN)/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//'; } > $(LOCK)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
