"""Property: the JVM reader of ``format("hiveacid")`` equals the dictionary model of an event history.

The histories and the model are ``tests/acid_core/orc/test_reader_model.py``'s (the property that
acidflow's own merge-on-read is held to): random transactions over several buckets, committed,
aborted or open, on top of optional original files, split-update or *legacy* (Hive 2 without
split-update: operation-1 updates under the same row ID and deletes inside the insert deltas),
some write-ID ranges written as one streaming or compacted delta. Each history is written to a
directory, registered as a table at that location in an embedded metastore, and read through
Spark's JVM reader at a random snapshot (an explicit ValidWriteIdList) with its ROW__IDs: the rows
must be exactly the model's items under the same row IDs, each once, whether the overriding
events are held in memory or streamed from their files (``spark.acidflow.deleteEventsInMemory``).
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_core.metastore import Column, TableDefinition
from acid_core.metastore.factory import open_metastore
from acid_core.writeids import ValidWriteIdList
from tests.acid_core.orc.test_reader_model import History, _model, _snapshot, _write, histories

pytestmark = [pytest.mark.integration("spark"), pytest.mark.slow, pytest.mark.timeout(900)]

_NAMES = itertools.count()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("model-wh"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), data=st.data())
def test_jvm_reader_equals_dict_model(spark, warehouse, history: History, data):
    high_watermark = data.draw(st.integers(0, len(history.txns)), label="high watermark")
    # 0: every bucket's overriding events are streamed from their files (StreamedDeletes).
    in_memory = data.draw(st.sampled_from([10_000_000, 0]), label="delete events in memory")
    name = f"default.m{next(_NAMES)}"
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "t"
        root.mkdir()
        _write(history, root)
        with open_metastore(None, warehouse) as store:
            store.create_table(
                TableDefinition(
                    name,
                    (Column("k", "bigint"), Column("v", "string")),
                    properties={"transactional": "true"},
                    location=str(root),
                )
            )
        snapshot = _snapshot(history, high_watermark)
        named = ValidWriteIdList(
            snapshot.high_watermark, snapshot.open_ids, snapshot.aborted_ids, snapshot.min_open_id, name
        )
        spark.conf.set("spark.acidflow.deleteEventsInMemory", str(in_memory))
        try:
            rows = (
                spark.read.format("hiveacid")
                .option("warehouse", warehouse)
                .option("snapshot", named.to_string())
                .option("columns", "row__id,k,v")
                .option("engine", "jvm")
                .load(name)
                .collect()
            )
        finally:
            spark.conf.unset("spark.acidflow.deleteEventsInMemory")
    got = {(r.row__id.writeid, r.row__id.bucketid, r.row__id.rowid): (r.k, r.v) for r in rows}
    assert len(rows) == len(got), "a row ID came back twice"
    assert got == _model(history, high_watermark)
