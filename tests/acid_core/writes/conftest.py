from __future__ import annotations

import pytest

from acid_core.metastore import Column, InMemoryMetastore, TableDefinition
from acid_core.writes import Warehouse


@pytest.fixture
def warehouse(tmp_path):
    root = str(tmp_path / "wh")
    with Warehouse(root, InMemoryMetastore(warehouse=root), heartbeat_seconds=None) as wh:
        yield wh


EMPLOYEE = (Column("id", "int"), Column("name", "string"), Column("salary", "int"))


def create(wh, name="employee", columns=EMPLOYEE, **kwargs):
    kwargs.setdefault("properties", {"transactional": "true"})
    return wh.metastore.create_table(TableDefinition(name, columns, **kwargs))
