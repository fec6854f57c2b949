# Fresh machine with only Python, pip and make:
#   make all    set up .venv; every paper check, the C6 transformer comparison, the bridge, every figure
#   make test   set up .venv and run the test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: all setup checks figures transformer bridge test test-all lint bench clean

all: checks transformer bridge figures

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,transformer,dask]"
	touch $@

checks: setup
	$(BIN)/stylized check --all

transformer: setup
	$(BIN)/stylized transformer compare --preset cpu --threads 1

bridge: setup
	$(BIN)/stylized transformer combined --preset cpu --threads 1
	$(BIN)/stylized transformer predict --preset cpu --threads 1
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
