# acidflow: `make run` (the main job) and `make test` (lint, type check, the whole suite).
# Every target creates or refreshes .venv from requirements.txt first, idempotently.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
WAREHOUSE ?= ./warehouse

export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)
export PYTHONDONTWRITEBYTECODE := 1

.DEFAULT_GOAL := help
.PHONY: help install run up test test-trino lint typecheck test-unit test-integration test-all soak bench bench-smoke clean

help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "acidflow needs Python 3.11; set PYTHON=/path/to/python3.11")'
	@command -v java >/dev/null || { echo "acidflow needs a JDK 17 (java on PATH) for Spark and the Hive oracle tests"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-build-isolation --no-deps -e .
	$(BIN)/python -m pyspark_hiveacid.jvm >/dev/null  # the hiveacid JVM reader's jar (javac; cached)
	touch $(STAMP)

# The real Hive Metastores of the tests (tests/fixtures/hms.py), Hive's own code as oracles
# (tests/fixtures/hive_oracles.py), the JVM reader's S3A connector (tests/fixtures/s3a: hadoop-aws
# and its AWS SDK bundle), the MiniDFSCluster of the HDFS tests (tests/fixtures/hdfs.py) and the
# Trino node (tests/fixtures/trino.py) come from Maven Central into Maven's local repository
# (~/.m2): one pom each; re-resolved only when a pom changes.
HIVE_POMS := tests/fixtures/hms31/pom.xml tests/fixtures/hms4/pom.xml tests/fixtures/hive31/pom.xml tests/fixtures/hive4/pom.xml tests/fixtures/s3a/pom.xml tests/fixtures/hdfs/pom.xml tests/fixtures/trino/pom.xml
HIVE_STAMP := $(VENV)/.hive-jars

$(HIVE_STAMP): $(HIVE_POMS)
	@command -v mvn >/dev/null || { echo "the Hive Metastore tests need Maven (apt-get install -y maven)"; exit 1; }
	for pom in $(HIVE_POMS); do mvn -q -B -f $$pom dependency:resolve || exit 1; done
	@mkdir -p $(VENV) && touch $(HIVE_STAMP)

# Toxiproxy (Shopify; Go), the user-space proxy that makes latency, jitter and blackholes for the
# network fault tests (tests/fixtures/toxiproxy.py: this kernel has no tc netem). Built from the Go
# module proxy into .venv/toxiproxy-<version>/ (server and cli); the binary is the stamp.
TOXIPROXY_VERSION := v2.12.0
TOXIPROXY := $(VENV)/toxiproxy-$(TOXIPROXY_VERSION)/server

$(TOXIPROXY):
	@command -v go >/dev/null || { echo "the network fault tests need Go to build Toxiproxy (https://go.dev/dl/)"; exit 1; }
	GOBIN=$(abspath $(VENV))/toxiproxy-$(TOXIPROXY_VERSION) go install \
		github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION) \
		github.com/Shopify/toxiproxy/v2/cmd/cli@$(TOXIPROXY_VERSION)

install: $(STAMP) $(HIVE_STAMP) $(TOXIPROXY) ## Create or refresh .venv from requirements.txt; fetch the Hive Metastore, MiniDFSCluster and Trino jars; build Toxiproxy

run: $(STAMP) ## The main job: a demo warehouse through the sensor, compaction and cleaner DAGs (real Airflow)
	$(BIN)/python -m demo.run_platform run --warehouse $(WAREHOUSE)

up: $(STAMP) ## airflow standalone on localhost:8080 with the DAGs, the plugin and the demo warehouse
	$(BIN)/python -m demo.run_platform up --warehouse $(WAREHOUSE)

lint: $(STAMP) ## ruff (lint and format check) and import-linter (layering)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP) ## mypy --strict on acid_core
	$(BIN)/mypy

# Trino's tests (a Trino node, its own Hive 3.1.3 Metastore on S3, a Spark application) take minutes
# of their own: issue 21 puts them in a second CI target so that `make test` stays near its 45
# minutes; `.ci/run` runs `make test`, then `make test-trino`.
TRINO_TESTS := tests/integration/test_trino.py

test: lint typecheck $(STAMP) $(HIVE_STAMP) $(TOXIPROXY) ## Lint, type check, then the whole suite (integration tests included) except Trino's; ends with the 30 slowest tests
	$(BIN)/python -m pytest --ignore=$(TRINO_TESTS) --durations=30 $(PYTEST_ARGS)

test-trino: $(STAMP) $(HIVE_STAMP) ## Trino's tests (the second CI target)
	$(BIN)/python -m pytest $(TRINO_TESTS) $(PYTEST_ARGS)

test-unit: $(STAMP) ## Only the tests that need no service (quick loop)
	$(BIN)/python -m pytest -m "not integration" $(PYTEST_ARGS)

test-integration: $(STAMP) $(HIVE_STAMP) $(TOXIPROXY) ## Only the integration tests (PostgreSQL, ZooKeeper, Spark, Hive, Airflow)
	$(BIN)/python -m pytest -m integration $(PYTEST_ARGS)

test-all: test test-trino ## What CI runs: make test, then make test-trino

soak: $(STAMP) $(TOXIPROXY) ## The long reliability soak (multi-process kill -9, with and without service faults; figures in bench/RESULTS.md)
	ACIDFLOW_SOAK=long $(BIN)/python -m pytest tests/reliability -s -p no:cacheprovider $(PYTEST_ARGS)

bench: $(STAMP) ## Run the benchmarks (prints ratios; see bench/RESULTS.md)
	$(BIN)/python -m bench

bench-smoke: $(STAMP) $(HIVE_STAMP) ## Every benchmark's CI-sized --smoke run, the Spark ones too (make test leaves those out)
	ACIDFLOW_BENCH_SMOKE=all $(BIN)/python -m pytest tests/bench $(PYTEST_ARGS)

clean: ## Remove the venv, caches and the demo warehouse
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(WAREHOUSE)
