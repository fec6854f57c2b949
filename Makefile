# Fresh machine with only Python, pip and make:
#   make all    set up .venv; every paper check, the C6 transformer comparison (retrains what is missing), every figure
#   make test   set up .venv and run the test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: all setup checks falsify figures transformer bridge test test-all lint bench clean

all: checks transformer figures

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,transformer,dask]"
	touch $@

checks: setup
	$(BIN)/stylized check --all

transformer: setup
	$(BIN)/stylized transformer lr-sweep --workers 2
	$(BIN)/stylized transformer compare --preset cpu --workers 2
	$(BIN)/stylized check --all

bridge: setup
	$(BIN)/stylized transformer combined --preset cpu --threads 1
	$(BIN)/stylized transformer predict --preset cpu --threads 1
	$(BIN)/stylized check --all

falsify: setup
	$(BIN)/stylized falsify
	$(BIN)/stylized check --all

figures: setup
	$(BIN)/stylized figures --all

test: setup
	$(BIN)/python -m pytest -q -m "not slow"

test-all: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check stylized simulations tests

bench: setup
	$(BIN)/stylized bench

clean:
	rm -rf $(VENV) .numba_cache .pytest_cache .hypothesis
