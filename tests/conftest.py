"""Suite-wide pytest configuration: service fixtures (as plugins) and hypothesis profiles."""

from __future__ import annotations

import logging
import os

from hypothesis import HealthCheck, Verbosity, settings

# Service fixtures live in tests/fixtures/<service>.py; each starts its service if it is not running.
pytest_plugins: list[str] = [
    "tests.fixtures.airflow",
    "tests.fixtures.browser",
    "tests.fixtures.hdfs",
    "tests.fixtures.hive",
    "tests.fixtures.hive_oracles",
    "tests.fixtures.hms",
    "tests.fixtures.mariadb",
    "tests.fixtures.netns",
    "tests.fixtures.postgres",
    "tests.fixtures.s3",
    "tests.fixtures.spark",
    "tests.fixtures.storage",
    "tests.fixtures.toxiproxy",
    "tests.fixtures.zookeeper",
    # after zookeeper: it imports its free_port
    "tests.fixtures.spark_cluster",
    "tests.fixtures.trino",
    "tests.fixtures.webhook",
]

# py4j logs "Closing down clientserver connection" at INFO from an atexit hook, after pytest has
# closed its capture streams: a "--- Logging error ---" traceback at the end of every run. Its
# warnings and errors still show.
logging.getLogger("py4j").setLevel(logging.WARNING)

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("debug", max_examples=10, deadline=None, verbosity=Verbosity.verbose)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
