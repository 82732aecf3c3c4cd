# `make run` and `make test` set everything up on a fresh machine (Python 3.10+ with venv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8501

.PHONY: run test test-fast lint bench bench-quick load-test churn-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.test: requirements-test.txt $(VENV)/.runtime
	$(BIN)/python -m pip install --quiet -r requirements-test.txt
	touch $@

run: $(VENV)/.runtime
	$(BIN)/python serve.py --server.address $(HOST) --server.port $(PORT)

test: $(VENV)/.test
	$(BIN)/python -m pytest

# The inner loop, under a minute: no browser, no AppTest, nothing marked slow.
test-fast: $(VENV)/.test
	$(BIN)/python -m pytest -m "not browser and not app and not slow"

# ruff: lint and import order (settings in pyproject.toml).
lint: $(VENV)/.test
	$(BIN)/ruff check .

# Benchmarks print a table and write it to BENCHMARKS.md (they need Debian's chromium).
bench: $(VENV)/.test
	$(BIN)/python bench/benchmark.py --write

bench-quick: $(VENV)/.test
	$(BIN)/python bench/benchmark.py --quick --write

# 1 session for 60 s, 8 concurrent Chromium sessions for 60 s, then 8 without pauses for 30 s; the paced runs
# again on the trivial one-chart page, the framework's floor (about 7 minutes).
load-test: $(VENV)/.test
	$(BIN)/python bench/load_test.py --write

# 1 session, then 8 sessions moving random sidebar sliders (new architectures all the time) on the Attention
# page, three 45 s rounds: errors, leaks, latency against the 1 session and whether the server's memory stops
# growing (about 5 minutes).
churn-test: $(VENV)/.test
	$(BIN)/python bench/architecture_churn.py --write

clean:
	rm -rf $(VENV) test-output .pytest_cache
