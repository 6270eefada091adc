# acidflow: `make run` (the main job) and `make test` (lint, type check, the whole suite).
# Every target creates or refreshes .venv from requirements.txt first, idempotently.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
COVERAGE_FAIL_UNDER ?= 80
WAREHOUSE ?= ./warehouse

export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
export PYTHONDONTWRITEBYTECODE := 1

.DEFAULT_GOAL := help
.PHONY: help install run test lint typecheck test-unit test-integration test-all coverage bench clean

help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "acidflow needs Python 3.11; set PYTHON=/path/to/python3.11")'
	@command -v java >/dev/null || { echo "acidflow needs a JDK 17 (java on PATH) for Spark and the Hive oracle tests"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-build-isolation --no-deps -e .
	touch $(STAMP)

install: $(STAMP) ## Create or refresh .venv from requirements.txt

run: $(STAMP) ## The main job on embedded defaults (a demo warehouse in $(WAREHOUSE))
	$(BIN)/python -m acid_core.demo --warehouse $(WAREHOUSE)

lint: $(STAMP) ## ruff (lint and format check) and import-linter (layering)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP) ## mypy --strict on acid_core
	$(BIN)/mypy

test: lint typecheck $(STAMP) ## Lint, type check, then the whole suite (integration tests included)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-unit: $(STAMP) ## Only the tests that need no service (quick loop)
	$(BIN)/python -m pytest -m "not integration" $(PYTEST_ARGS)

test-integration: $(STAMP) ## Only the integration tests (PostgreSQL, ZooKeeper, Spark, Hive, Airflow)
	$(BIN)/python -m pytest -m integration $(PYTEST_ARGS)

test-all: test ## Same as test

coverage: $(STAMP) ## The suite under coverage, failing under COVERAGE_FAIL_UNDER percent
	$(BIN)/python -m pytest --cov=acid_core --cov-fail-under=$(COVERAGE_FAIL_UNDER) $(PYTEST_ARGS)

bench: $(STAMP) ## Run the benchmarks (prints ratios; see bench/RESULTS.md)
	$(BIN)/python -m bench

clean: ## Remove the venv, caches and the demo warehouse
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(WAREHOUSE)
