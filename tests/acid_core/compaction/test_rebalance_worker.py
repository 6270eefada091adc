"""Rebalance compaction end to end on the embedded defaults: SQL, queue, worker, cleaner.

The expected rows of ``test_rebalance_reproduces_hive4_partitioned_test`` are those of Hive 4's
``TestCrudCompactorOnTez#testRebalanceCompactionOfPartitionedImplicitlyBucketedTable`` (its data:
write ID 1 spread by Tez over three bucket files, then six single-row inserts into bucket 0).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from acid_core.errors import InvalidRebalanceError
from acid_core.fs import LocalFileIO
from acid_core.metastore import CompactionState, CompactionType
from acid_core.orc.schema import RowType
from acid_core.orc.writer import insert_events, write_acid_dir
from acid_core.paths import DeltaDir
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse


@pytest.fixture
def session(tmp_path):
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    yield SqlSession(warehouse)
    warehouse.close()


def _rows(session, table="t"):
    (result,) = session.execute(f"SELECT row__id, * FROM {table}")
    return [
        (r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"], r["a"], r["b"])
        for r in result.rows.to_pylist()
    ]


def _files(location):
    io = LocalFileIO()
    return sorted(
        info.path[len(location) + 1 :]
        for info in io.list_tree(location)
        if not info.is_dir and info.name.startswith("bucket_")
    )


def _hive_layout(session):
    """Hive's test table: (a string, b int) partitioned by ds; ds=tomorrow as Hive's test leaves it."""
    session.execute(
        "CREATE TABLE t (a STRING, b INT) PARTITIONED BY (ds STRING) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')"
    )
    session.execute(
        "INSERT INTO t PARTITION (ds='tomorrow') VALUES "
        + ", ".join(f"('{a}', {b})" for a in ("2", "3", "1") for b in (1, 2, 3, 4))
    )
    metastore = session.warehouse.metastore
    [partition] = metastore.list_partitions("default.t")
    location = partition.location
    io = LocalFileIO()
    # Write ID 1 as Tez wrote it in Hive's test: bucket 0 holds '2', bucket 1 '3', bucket 2 '1'.
    delta = DeltaDir(1, 1, 0)
    io.delete_dir(io.join(location, delta.to_name()))
    row_type = RowType.of([("a", "string"), ("b", "int")])
    batches = {
        bucket: [
            insert_events(
                pa.table({"a": [a] * 4, "b": pa.array([1, 2, 3, 4], pa.int32())}),
                write_id=1,
                bucket_id=bucket,
            )
        ]
        for bucket, a in enumerate(("2", "3", "1"))
    }
    write_acid_dir(io, location, delta, batches, row_type)
    for value in range(12, 18):
        session.execute(f"INSERT INTO t PARTITION (ds='tomorrow') VALUES ('{value}', {value})")
    return location


V1 = [536870912, 536936448, 537001984, 537067520]


def test_rebalance_reproduces_hive4_partitioned_test(session):
    location = _hive_layout(session)
    (result,) = session.execute("ALTER TABLE t PARTITION (ds='tomorrow') COMPACT 'rebalance' AND WAIT")
    assert result.message == "Compaction 1 (rebalance, default.t partition ds=tomorrow): ready for cleaning"
    expected = (
        [(1, V1[0], i, "2", i + 1) for i in range(4)]
        + [(1, V1[0], 4, "3", 1), (1, V1[0], 5, "3", 2)]
        + [(1, V1[1], 6, "3", 3), (1, V1[1], 7, "3", 4)]
        + [(1, V1[1], 8 + i, "1", i + 1) for i in range(4)]
        + [(w, V1[2], 10 + w, str(10 + w), 10 + w) for w in range(2, 8)]
    )
    assert sorted(_rows(session)) == sorted(expected)
    base = [name for name in _files(location) if name.startswith("base_")]
    # No CLUSTERED INTO: as many buckets as the partition has bucket IDs (3), as Hive counts them.
    assert base == [
        "base_0000007_v0000008/bucket_00000",
        "base_0000007_v0000008/bucket_00001",
        "base_0000007_v0000008/bucket_00002",
    ]


def test_rebalance_clustered_into_spreads_evenly_and_applies_deletes(session):
    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    session.execute("INSERT INTO t VALUES " + ", ".join(f"('r{i}', {i})" for i in range(20)))
    session.execute("DELETE FROM t WHERE b % 4 = 0")  # 15 rows stay
    session.execute("INSERT INTO t VALUES ('late', 100)")
    before = sorted(r[3:] for r in _rows(session))
    session.execute("ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 4 BUCKETS AND WAIT")
    rows = _rows(session)
    assert sorted(r[3:] for r in rows) == before
    by_bucket = {}
    for write_id, bucket, row_id, *_ in rows:
        by_bucket.setdefault(bucket, []).append((write_id, row_id))
    assert {b: len(v) for b, v in by_bucket.items()} == {V1[0]: 4, V1[1]: 4, V1[2]: 4, V1[3]: 4}
    assert sorted(row_id for v in by_bucket.values() for _, row_id in v) == list(range(16))
    assert by_bucket[V1[3]][-1] == (3, 15)  # the last insert keeps its write ID, last position


def test_rebalance_order_by_takes_the_highest_write_id(session):
    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    for b in (5, None, 7, 6):
        session.execute(f"INSERT INTO t VALUES ('x', {'NULL' if b is None else b})")
    session.execute("ALTER TABLE t COMPACT 'rebalance' ORDER BY b DESC CLUSTERED INTO 2 BUCKETS AND WAIT")
    info = session.warehouse.metastore.get_compaction(1)
    assert (info.compaction_type, info.number_of_buckets, info.order_by) == (
        CompactionType.REBALANCE,
        2,
        "ORDER BY b DESC NULLS LAST",
    )
    # DESC puts nulls last (Hive's default); every row gets MAX(writeId) = 4.
    assert sorted(_rows(session), key=lambda r: r[2]) == [
        (4, V1[0], 0, "x", 7),
        (4, V1[0], 1, "x", 6),
        (4, V1[1], 2, "x", 5),
        (4, V1[1], 3, "x", None),
    ]


def test_rebalance_of_a_base_alone_supersedes_it_and_cleaner_removes_the_old(session):
    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    session.execute("INSERT INTO t VALUES " + ", ".join(f"('r{i}', {i})" for i in range(6)))
    session.execute("ALTER TABLE t COMPACT 'major' AND WAIT")
    before = sorted(r[3:] for r in _rows(session))
    session.execute("ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 3 BUCKETS AND WAIT")
    from acid_core.compaction.cleaner import run_cleaner

    run_cleaner(session.warehouse.metastore)
    location = session.warehouse.metastore.get_table("default.t").location
    assert _files(location) == [f"base_0000001_v0000004/bucket_0000{k}" for k in range(3)]
    assert sorted(r[3:] for r in _rows(session)) == before


def test_rebalance_explicitly_bucketed_table_refused_with_hive_message(session):
    session.execute(
        "CREATE TABLE t (a STRING, b INT) CLUSTERED BY (a) INTO 4 BUCKETS STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')"
    )
    session.execute("INSERT INTO t VALUES ('11', 11), ('22', 22)")
    (result,) = session.execute("ALTER TABLE t COMPACT 'rebalance' AND WAIT")
    assert result.message == (
        "Compaction 1 (rebalance, default.t): refused: Cannot execute rebalancing compaction on bucketed tables."
    )
    assert session.warehouse.metastore.get_compaction(1).state is CompactionState.REFUSED


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            "ALTER TABLE t COMPACT 'rebalance' ORDER BY nope",
            "Invalid rebalance compaction ORDER BY column 'nope'; expected one of the table's columns ['a', 'b']",
        ),
        (
            "ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 0 BUCKETS",
            "Invalid rebalance compaction number of buckets 0; expected an integer from 1 to 4096",
        ),
        (
            "ALTER TABLE t COMPACT 'major' CLUSTERED INTO 2 BUCKETS",
            "Invalid rebalance compaction clause for a 'major' compaction 'CLUSTERED INTO'",
        ),
    ],
    ids=["unknown-column", "zero-buckets", "clause-on-major"],
)
def test_rebalance_bad_clause_one_line_nothing_queued(session, statement, message):
    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    with pytest.raises(InvalidRebalanceError) as raised:
        session.execute(statement)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)
    assert session.warehouse.metastore.show_compactions() == []


def test_show_compactions_type_rebalance_filter(session):
    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    session.execute("ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 2 BUCKETS")
    (shown,) = session.execute("SHOW COMPACTIONS TYPE 'rebalance'")
    assert [(r["type"], r["state"]) for r in shown.rows.to_pylist()] == [("REBALANCE", "initiated")]


def test_initiator_queues_rebalance_when_the_table_setting_is_on(session):
    from acid_core.compaction.backlog import run_initiator

    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    for value in range(11):  # 11 deltas, no base: Hive's "no base" major
        session.execute(f"INSERT INTO t VALUES ('v{value}', {value})")
    metastore = session.warehouse.metastore
    session.execute(
        "ALTER TABLE t SET TBLPROPERTIES ('compactorthreshold.acidflow.compactor.rebalance.buckets'='2')"
    )
    [entry] = run_initiator(metastore)
    info = metastore.get_compaction(entry.compaction_id)
    assert (info.compaction_type, info.number_of_buckets) == (CompactionType.REBALANCE, 2)
    session.execute(
        "ALTER TABLE t UNSET TBLPROPERTIES ('compactorthreshold.acidflow.compactor.rebalance.buckets')"
    )
    session.execute(f"ABORT COMPACTIONS {entry.compaction_id}")
    [entry] = run_initiator(metastore)
    assert metastore.get_compaction(entry.compaction_id).compaction_type is CompactionType.MAJOR


def test_cli_compact_type_rebalance_buckets_and_bad_option(session, capsys):
    from acid_core.cli import main as acidflow

    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    session.execute("INSERT INTO t VALUES ('x', 1), ('y', 2), ('z', 3)")
    warehouse = session.warehouse.location
    args = ["compact", "--warehouse", warehouse, "--table", "t", "--executor", "embedded"]
    assert acidflow([*args, "--type", "major", "--buckets", "3"]) == 1
    assert "expected --buckets and --order-by only with --type rebalance" in capsys.readouterr().err
    assert session.warehouse.metastore.show_compactions() == []
    assert acidflow([*args, "--type", "rebalance", "--buckets", "3", "--order-by", "b DESC"]) == 0
    assert [r[1:] for r in sorted(_rows(session), key=lambda r: r[2])] == [
        (V1[0], 0, "z", 3),
        (V1[1], 1, "y", 2),
        (V1[2], 2, "x", 1),
    ]


def test_rebalance_later_task_skips_files_before_its_slice_rows_as_hive(session):
    """Task 1 of 2 does not read the deltas whose rows all come before its slice.

    Four inserts of 3 rows (write IDs 1-4) and deletes in the first and last: 10 rows, 5 per
    bucket. The count pass marks where each write ID starts (positions 0, 2, 5, 8); task 1's slice
    starts at 5, write ID 3, so the files of deltas 1 and 2 are dropped from its second read. The
    rows and ROW__IDs are still Hive 4's: old ROW__ID order, position p in bucket p // 5, row ID p.
    """
    from acid_core.compaction.bucket_merge import _count_with_marks, _drop_files_before
    from acid_core.compaction.rebalance import bucket_of_position
    from acid_core.orc.files import plan_scan
    from acid_core.orc.reader import scan
    from acid_core.writeids import ValidWriteIdList

    session.execute("CREATE TABLE t (a STRING, b INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    for write_id in range(1, 5):
        session.execute(
            "INSERT INTO t VALUES " + ", ".join(f"('w{write_id}', {write_id * 10 + i})" for i in range(3))
        )
    session.execute("DELETE FROM t WHERE b IN (11, 40)")
    before = sorted(_rows(session))
    location = session.warehouse.metastore.get_table("default.t").location
    io, snapshot = LocalFileIO(), ValidWriteIdList(high_watermark=5)
    total, marks = _count_with_marks(scan(io, location, snapshot, columns=[], with_row_id=True, ordered=True))
    assert (total, [(position, key[0]) for position, key in marks]) == (10, [(0, 1), (2, 2), (5, 3), (8, 4)])
    plan = plan_scan(io, location, snapshot)
    kept = _drop_files_before(io, location, plan, marks[2][1])
    assert [f.path[len(location) + 1 :] for f in kept.data_files] == [
        "delta_0000003_0000003_0000/bucket_00000",
        "delta_0000004_0000004_0000/bucket_00000",
    ]
    assert kept.delete_files == plan.delete_files

    session.execute("ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 2 BUCKETS AND WAIT")
    expected = [
        (write_id, V1[bucket_of_position(p, 10, 2)], p, a, b)
        for p, (write_id, _bucket, _row_id, a, b) in enumerate(before)
    ]
    assert sorted(_rows(session)) == expected
