"""default_args and tags shared by the acidflow DAG files (wiring only: no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

DEFAULT_ARGS = {
    "owner": "acidflow",
    "retries": 2,
    "retry_delay": timedelta(minutes=1),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
}

START_DATE = datetime(2024, 1, 1, tzinfo=UTC)
TAGS = ["acidflow", "hive-acid"]
