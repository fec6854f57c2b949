# Fresh machine with only Python, pip and make:
#   make all          set up .venv; every paper check, every figure, and a reproduction spot-check that
#                     retrains one committed transformer run (rope, seed 0, cpu preset) and compares it
#                     with the committed numbers: under 10 minutes on 2 cores (measured in the README)
#   make test         set up .venv and run the test suite
#   make transformer  retrain every C6 variant and seed from scratch into build/transformer/ and compare,
#                     then the far-mass control variants and the bridge there (26 C6 runs, not timed from scratch;
#                     18 runs took 25 min + 50 for the controls on 2 cores; committed results untouched)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: all setup checks spot-check falsify figures transformer lr-sweep compare bridge retrieval property fuzz test test-all lint bench clean

all: checks figures spot-check

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,transformer,dask]"
	touch $@

checks: setup
	$(BIN)/stylized check --all

spot-check: setup
	$(BIN)/stylized spot-check --threads 1

# Full retraining: every variant and seed, into a scratch folder (the committed checkpoints stay).
transformer: setup
	$(BIN)/stylized transformer compare --preset cpu --workers 2 --results-dir build/transformer --figure build/transformer/transformer_ppl_ratio.png
	$(BIN)/stylized transformer combined --preset cpu --workers 2 --threads 1 --results-dir build/transformer
	$(BIN)/stylized transformer bridge --preset cpu --threads 1 --results-dir build/transformer --figure build/transformer/transformer_bridge.png

# The committed C6 artefacts: the table-lr sweep, then the comparison (retrains only what is missing).
lr-sweep: setup
	$(BIN)/stylized transformer lr-sweep --workers 2

compare: setup
	$(BIN)/stylized transformer compare --preset cpu --workers 2
	$(BIN)/stylized check --all

# Issue 14: the far-mass control variants (3 seeds), then the bridge forecast from L <= L_train.
bridge: setup
	$(BIN)/stylized transformer combined --preset cpu --workers 2 --threads 1
	$(BIN)/stylized transformer bridge --preset cpu --threads 1
	$(BIN)/stylized check --all

# Issue 17: far-context use of every C6 checkpoint, and passkey retrieval (trains its own runs).
retrieval: setup
	$(BIN)/stylized transformer far-context --preset cpu --workers 2 --threads 1
	$(BIN)/stylized transformer passkey --preset cpu --workers 2 --threads 1
	$(BIN)/stylized check --all

property: setup
	$(BIN)/python -m pytest -q -m property

fuzz: setup
	$(BIN)/python -m pytest -q -m slow tests/cli/test_fuzz_cli.py tests/harness/test_fuzz_api.py tests/transformer/train/test_file_faults_slow.py tests/transformer/test_file_faults_slow_options.py

falsify: setup
	$(BIN)/stylized falsify
	$(BIN)/stylized check --all

figures: setup
	$(BIN)/stylized figures --all

# What CI runs (.ci/run calls exactly this): the documentation build with warnings as errors (which executes
# every example in docs/examples/), then the test suite.
test: setup docs
	$(BIN)/python -m pytest -q -m "not slow"

test-all: setup
	$(BIN)/python -m pytest -q

# The documentation site (docs/README.md): API reference, one page per claim, tutorials; every example in
# docs/examples/ and every docstring example runs, and any warning fails the build.
.PHONY: docs
docs: $(VENV)/.docs-installed
	$(BIN)/python -m sphinx -W --keep-going -b html -d build/docs/doctrees docs build/docs/html

$(VENV)/.docs-installed: $(VENV)/.installed pyproject.toml
	$(BIN)/python -m pip install -q -e ".[docs]"
	touch $@

lint: setup
	$(BIN)/ruff check stylized simulations tests

bench: setup
	$(BIN)/stylized bench

clean:
	rm -rf $(VENV) .numba_cache .pytest_cache .hypothesis build
