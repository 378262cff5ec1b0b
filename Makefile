# Cairn: `make run` and `make test` work on a machine that has never seen this repository.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test lint typecheck bench install clean

$(BIN)/python:
	$(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first, pinned to the CPU build; the rest resolves against it.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

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

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .cairn .pytest_cache
