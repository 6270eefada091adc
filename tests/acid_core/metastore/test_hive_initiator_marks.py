"""The initiator's marks in HMS mode: kept in acidflow's side store; changes asked by write ID.

The Thrift side is ``RecordedHmsConnection`` (the marks and the Thrift-only rule make no call);
the side store is a real ``SqlMetastore`` on SQLite in ``tmp_path``. The backend-database rule and
real servers: ``tests/integration/test_hms_initiator_skip.py``.
"""

from __future__ import annotations

import pytest

from acid_core.errors import EmbeddedMetastoreLocationError
from acid_core.metastore.hive.metastore import HiveMetastore
from acid_core.metastore.port import InitiatorMark, PartitionChanges
from acid_core.metastore.sql.metastore import SqlMetastore
from acid_core.writeids import parse_valid_compactor_write_id_list
from tests.acid_core.metastore.test_hive_shapes import _hive4

MARK = InitiatorMark("db.t", 1_000.0, "f" * 32, "db.t:5:9223372036854775807::")


def _unavailable():
    raise EmbeddedMetastoreLocationError("s3://bucket/warehouse", "side store")


def test_hms_marks_live_in_the_side_store_and_survive_a_new_adapter(tmp_path):
    url = f"sqlite:///{tmp_path / 'side.sqlite'}"

    def side_store():
        return SqlMetastore(url, warehouse=str(tmp_path))

    with HiveMetastore(_hive4(), lease_store=side_store) as first:
        assert first.load_initiator_marks() == {}
        first.commit_initiator_mark(MARK)
    with HiveMetastore(_hive4(), lease_store=side_store) as restarted:
        assert restarted.load_initiator_marks() == {"db.t": MARK}


@pytest.mark.parametrize("side_store", [None, _unavailable], ids=["switched-off", "cannot-open"])
def test_hms_marks_without_a_side_store_are_none_and_dropped(side_store, caplog):
    with HiveMetastore(_hive4(), lease_store=side_store) as store:
        store.commit_initiator_mark(MARK)
        assert store.load_initiator_marks() == {}
        store.commit_initiator_mark(MARK)
    # said once, not once per table
    assert caplog.text.count("side store is not available") == (0 if side_store is None else 1)


def _list(text):
    return None if text is None else parse_valid_compactor_write_id_list(text)


@pytest.mark.parametrize(
    ("previous", "current", "whole_table"),
    [
        ("db.t:5:9223372036854775807::", "db.t:5:9223372036854775807::", False),
        ("db.t:5:9223372036854775807::", "db.t:6:9223372036854775807::", True),
        # an aborted write: the aborted rules may change with time alone, its partition is unknown
        ("db.t:5:9223372036854775807::", "db.t:6:9223372036854775807::6", True),
        ("db.t:6:9223372036854775807::6", "db.t:6:9223372036854775807::6", True),
        # cleaned: the aborted ID left the list (valid now): listed once more, then skipped
        ("db.t:6:9223372036854775807::6", "db.t:6:9223372036854775807::", True),
        (None, "db.t:5:9223372036854775807::", True),
        ("db.t:5:9223372036854775807::", None, True),
        ("db.t:9:9223372036854775807::", "db.t:5:9223372036854775807::", True),
    ],
    ids=[
        "unchanged",
        "written",
        "aborted",
        "aborted-before",
        "aborted-cleaned",
        "no-mark",
        "no-list",
        "lower",
    ],
)
def test_hms_partition_changes_by_thrift_alone_are_per_table(previous, current, whole_table):
    with HiveMetastore(_hive4(), lease_store=None) as store:
        changes = store.list_partition_changes(
            "db.t", 0.0, previous_write_ids=_list(previous), write_ids=_list(current)
        )
    assert changes == PartitionChanges(frozenset(), frozenset(), whole_table=whole_table)
