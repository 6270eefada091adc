"""Fixtures of the compaction tests."""

from __future__ import annotations

import pytest

from acid_core.writes.transaction import Warehouse


@pytest.fixture
def wh(tmp_path):
    """A warehouse with a SQLite metastore in ``tmp_path`` (no heartbeat thread)."""
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield warehouse
    warehouse.close()
