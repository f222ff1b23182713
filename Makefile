# Two commands on a fresh machine: `make serve` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test test-heavy lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/cosolve serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -q -m "not heavy" --durations=15

# long solves, server restarts and Ray (about 3 minutes): CI runs them after `make test`
test-heavy: $(STAMP)
	$(BIN)/pytest -q -m heavy --durations=5

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.leaderboard
	mkdir -p out/bench
	$(BIN)/python -m benchmarks.routing --sets uniform --sizes 100 --instances-per-size 1 --time-limit 1 --out out/bench/routing.md
	$(BIN)/python -m benchmarks.scheduling --workflows 20 --seeds 5000 --out out/bench/scheduling.md

# the docs site, built strictly (a broken link or a page left out of the nav fails) into site/
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
