"""The ``hiveacid`` PySpark data source against acidflow's reader, Hive 2.3.10's readers and the metastore.

Real Spark (local[1], the session fixture; the source is found by Spark's own lookup of installed
``pyspark_*`` modules, never registered by hand), real embedded metastore, real files:

- reads: random write histories (insert/update/delete, aborted transactions, minor and major
  compactions) read through Spark equal ``Warehouse.read`` (acidflow's merge-on-read) at the same
  snapshot, with their ROW__IDs; tables written by Hive 2.3.10's own ``OrcRecordUpdater``
  (streaming deltas, original files, aborted transactions) read through Spark equal Hive's reader;
- a reader holding a lease keeps its rows while compaction and the cleaner run;
- writes: one transaction per job; the rows read back through acidflow and through Hive's reader;
  overwrite empties what it did not write; a failing job and a killed job leave nothing visible.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from acid_core.bucket_codec import decode_bucket_property
from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import run_worker
from acid_core.metastore import Column, CompactionType, TableDefinition, TxnState
from acid_core.writeids import ValidWriteIdList
from acid_core.writes.streaming import StreamingConnection
from acid_core.writes.transaction import Warehouse
from pyspark_hiveacid import create_view, held_snapshot
from tests.acid_core.compaction.histories import create_table, random_history, read_rows
from tests.fixtures.hive import Delete, Insert, Update, hive_txn_list

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tests.fixtures.hive import HiveOracle

pytestmark = [pytest.mark.integration("spark"), pytest.mark.slow, pytest.mark.timeout(900)]

SEEDS = [int(s) for s in os.environ.get("ACIDFLOW_SPARK_SEEDS", "3,11").split(",")]


ENGINES = ["jvm", "python"]
"""Both read paths of ``format("hiveacid")``: the JVM reader (the jar is on the session's class
path) and the Python data source it hands ``engine='python'`` reads to."""


def _read(spark: SparkSession, wh: Warehouse, table: str, engine: str = "jvm", **options: str) -> DataFrame:
    reader = spark.read.format("hiveacid").option("warehouse", wh.location).option("engine", engine)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(table)


def _rows(df: DataFrame) -> list[tuple]:
    """Rows as (writeid, bucketid, rowid, columns...) tuples, sorted, as histories.read_rows gives them."""
    out = []
    for row in df.collect():
        record = row.asDict(recursive=True)
        row_id = record.pop("row__id")
        out.append((row_id["writeid"], row_id["bucketid"], row_id["rowid"], *record.values()))
    return sorted(out, key=repr)


def _compact(wh: Warehouse, kind: CompactionType) -> None:
    partitions = wh.metastore.list_partitions("default.t") or [None]
    for partition in partitions:
        wh.metastore.enqueue_compaction("default.t", None if partition is None else partition.name, kind)
    run_worker(wh.metastore)


# -- reads -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("partitioned", "buckets"), [(True, 3), (False, 1)], ids=["part-bucketed", "flat"])
@pytest.mark.parametrize("engine", ENGINES)
def test_read_random_history_equals_acidflow_at_every_stage(
    spark, tmp_path, seed, partitioned, buckets, engine
):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, seed, partitioned=partitioned, buckets=buckets, txns=10)
    columns = "row__id,id,v,p" if partitioned else "row__id,id,v"
    expected = read_rows(history)
    assert _rows(_read(spark, wh, "default.t", engine=engine, columns=columns)) == expected
    assert sorted(r[3:] for r in expected) == [
        (key, *value) for key, value in sorted(history.model.items())
    ], "the reference read disagrees with the model"

    # An old snapshot, given as explicit lists, reads what acidflow reads there.
    old = history.snapshots[len(history.snapshots) // 2]
    write_ids = wh.metastore.get_valid_write_ids("default.t", old)
    at_old = _read(
        spark, wh, "default.t", columns=columns, snapshot=write_ids.to_string(), txns=old.to_string()
    )
    assert _rows(at_old) == read_rows(history, old)

    _compact(wh, CompactionType.MINOR)
    assert _rows(_read(spark, wh, "default.t", engine=engine, columns=columns)) == expected
    _compact(wh, CompactionType.MAJOR)
    run_cleaner(wh.metastore)
    assert _rows(_read(spark, wh, "default.t", engine=engine, columns=columns)) == expected
    wh.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_read_prunes_partitions_and_columns(spark, tmp_path, engine):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 5, partitioned=True, buckets=2, txns=8)
    everything = _read(spark, wh, "default.t", engine=engine)
    assert everything.columns == ["id", "v", "p"]
    all_rows = sorted((k, *v) for k, v in history.model.items())
    want = [row for row in all_rows if row[2] == "a"]
    total = everything.rdd.getNumPartitions()
    # The partitions option: only p=a's buckets are planned.
    only_a = _read(spark, wh, "default.t", engine=engine, partitions="p=a")
    assert sorted(tuple(r) for r in only_a.collect()) == want
    assert only_a.rdd.getNumPartitions() < total
    # Pushed filters on the partition column prune the same way (option pushdown, a fresh load each).
    pushed = _read(spark, wh, "default.t", engine=engine, pushdown="true").where("p = 'a'")
    assert sorted(tuple(r) for r in pushed.collect()) == want
    assert (
        _read(spark, wh, "default.t", engine=engine, pushdown="true").where("p = 'a'").rdd.getNumPartitions()
        < total
    )
    in_or_null = _read(spark, wh, "default.t", engine=engine, pushdown="true").where(
        "p IN ('a') OR p IS NULL"
    )
    assert sorted(tuple(r) for r in in_or_null.collect()) == want
    assert _read(spark, wh, "default.t", engine=engine, pushdown="true").where("p = 'zzz'").count() == 0
    assert _read(spark, wh, "default.t", engine=engine, pushdown="true").where(
        "NOT (p = 'a')"
    ).count() == len(all_rows) - len(want)
    # Column pruning: the columns option and a user schema both read only what they name.
    only_id = _read(spark, wh, "default.t", engine=engine, columns="id")
    assert only_id.columns == ["id"]
    assert sorted(r.id for r in only_id.collect()) == sorted(history.model)
    subset = spark.read.format("hiveacid").schema("v string, p string").option("warehouse", wh.location)
    subset = subset.option("engine", engine)
    assert sorted(tuple(r) for r in subset.load("default.t").collect()) == sorted(history.model.values())
    wh.close()


def test_read_default_reader_stays_correct_when_a_dataframe_is_reused(spark, tmp_path):
    """Spark 4.2.0 reuses a filtered query's planned partitions for a later unfiltered query on the
    same DataFrame; without pushdown the partitions never depend on filters, so both are right."""
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 5, partitioned=True, buckets=2, txns=8)
    df = _read(spark, wh, "default.t")
    assert df.where("p = 'a'").count() == sum(1 for v in history.model.values() if v[1] == "a")
    assert df.count() == len(history.model)
    wh.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_read_an_empty_table_and_a_partition_never_written(spark, tmp_path, engine):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    create_table(wh, "default.t", partitioned=True, buckets=2)
    df = _read(spark, wh, "default.t", engine=engine)
    assert (df.columns, df.count()) == (["id", "v", "p"], 0)
    wh.metastore.add_partition("default.t", {"p": "a"}, str(tmp_path / "wh" / "t" / "p=a"))
    assert _read(spark, wh, "default.t", engine=engine).collect() == []
    wh.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_read_while_a_streaming_batch_is_open_sees_committed_rows_up_to_the_flush(spark, tmp_path, engine):
    """Hive Streaming V2 (``StreamingConnection``): one ``delta_x_y`` holds a committed, an aborted
    and a still-open transaction, and its file is read only up to the length in
    ``bucket_00000_flush_length``; Spark returns the committed rows, as acidflow's reader does."""
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    create_table(wh, "default.t", partitioned=False, buckets=1)

    def rows(ids: list[int]) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int32()), "v": [f"s{i}" for i in ids]})

    with StreamingConnection(wh, "default.t", txns_per_batch=3) as connection:
        connection.begin_transaction()
        connection.write(rows([1, 2]))
        connection.commit_transaction()
        connection.begin_transaction()
        connection.write(rows([3]))
        connection.abort_transaction()
        connection.begin_transaction()
        connection.write(rows([4, 5]))  # open: never visible while it is
        table_dir = Path(wh.metastore.get_table("default.t").location)
        assert list(table_dir.glob("delta_*/bucket_00000_flush_length")), "no streaming side file"
        expected = sorted(tuple(r.values()) for r in wh.read("default.t").to_pylist())
        assert expected == [(1, "s1"), (2, "s2")]
        assert sorted(tuple(r) for r in _read(spark, wh, "default.t", engine=engine).collect()) == expected
        # A writer in the middle of its next stripe: bytes past the last flush are not ORC yet.
        (data,) = table_dir.glob("delta_*/bucket_00000")
        flushed = data.read_bytes()
        data.write_bytes(flushed + b"\x00a stripe being written, after the last flush")
        assert sorted(tuple(r) for r in _read(spark, wh, "default.t", engine=engine).collect()) == expected
        data.write_bytes(flushed)
        connection.commit_transaction()
    assert sorted(tuple(r) for r in _read(spark, wh, "default.t", engine=engine).collect()) == [
        (1, "s1"),
        (2, "s2"),
        (4, "s4"),
        (5, "s5"),
    ]
    wh.close()


def test_read_bad_snapshot_option_names_the_value(spark, tmp_path):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    random_history(wh, 1, partitioned=False, buckets=1, txns=2)
    with pytest.raises(Exception, match=r"Invalid hiveacid option snapshot='yesterday'; expected 'latest'"):
        _read(spark, wh, "default.t", snapshot="yesterday").collect()
    with pytest.raises(Exception, match=r"No such reader lease 99"):
        _read(spark, wh, "default.t", snapshot="99").collect()
    # The JVM reader's errors reach PySpark as one line (its IllegalArgumentException), no JVM stack.
    from pyspark.errors import IllegalArgumentException

    for options, expected in [
        (
            {"snapshot": "yesterday"},
            "acidflow: error: Invalid hiveacid option snapshot='yesterday'; expected",
        ),
        ({"bogus": "1"}, "acidflow: error: Invalid hiveacid option bogus='1'; expected one of"),
    ]:
        with pytest.raises(IllegalArgumentException) as raised:
            _read(spark, wh, "default.t", **options).collect()
        assert str(raised.value).startswith(expected)
        assert len(str(raised.value).splitlines()) == 1
    with pytest.raises(IllegalArgumentException, match=r"^acidflow: error: No such table 'default.nope'"):
        _read(spark, wh, "default.nope").collect()
    wh.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_read_lease_keeps_rows_through_compaction_and_cleaning(spark, tmp_path, engine):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 9, partitioned=False, buckets=2, txns=8)
    before = read_rows(history)
    with held_snapshot("default.t", warehouse=wh.location) as snapshot:
        options = {"columns": "row__id,id,v", "snapshot": str(snapshot.lease_id)}
        assert _rows(_read(spark, wh, "default.t", engine=engine, **options)) == before
        live = wh.read("default.t", with_row_id=True)
        with wh.transaction(heartbeat_seconds=None) as txn:
            txn.delete("default.t", live.slice(0, 2).select(["row__id"]))
            txn.insert("default.t", pa.table({"id": pa.array([900], pa.int32()), "v": ["new"]}))
        _compact(wh, CompactionType.MAJOR)
        run_cleaner(wh.metastore)
        table_dir = Path(wh.metastore.get_table("default.t").location)
        assert any(p.name.startswith("delta_") for p in table_dir.iterdir()), "the cleaner ignored the lease"
        assert _rows(_read(spark, wh, "default.t", engine=engine, **options)) == before
    after = read_rows(history)
    assert after != before
    run_cleaner(wh.metastore)
    assert _rows(_read(spark, wh, "default.t", engine=engine, columns="row__id,id,v")) == after
    wh.close()


def _hive_table(wh: Warehouse, name: str, location: Path, buckets: int = 2) -> None:
    wh.metastore.create_table(
        TableDefinition(
            name,
            columns=(Column("id", "int"), Column("name", "string"), Column("salary", "int")),
            bucket_columns=("id",),
            num_buckets=buckets,
            properties={"transactional": "true"},
            location=str(location),
        )
    )


def _hive_rows(rows) -> list[tuple]:
    return sorted(
        (
            (row_id[0], decode_bucket_property(row_id[1]).bucket_id, row_id[2]),
            id_,
            name,
            salary,
        )
        for row_id, id_, name, salary in rows
    )


def _spark_hive_rows(df: DataFrame) -> list[tuple]:
    return sorted(
        (
            (r.row__id.writeid, decode_bucket_property(r.row__id.bucketid).bucket_id, r.row__id.rowid),
            r.id,
            r.name,
            r.salary,
        )
        for r in df.collect()
    )


def _hive_history(hive: HiveOracle, table_dir: Path, rng: random.Random) -> tuple[int, set[int]]:
    """Transactions written by Hive's OrcRecordUpdater: inserts, updates and deletes of live rows."""
    top = rng.randint(3, 6)
    aborted = {t for t in range(2, top + 1) if rng.random() < 0.25}
    next_id = 0
    for txn in range(1, top + 1):
        live = (
            [
                r[0]
                for r in hive.read_rows(
                    table_dir, hive_txn_list(txn - 1, aborted & set(range(txn))), bucket_count=2
                )
            ]
            if txn > 1
            else []
        )
        for bucket in (0, 1):
            mine = sorted(r for r in live if r is not None and r[1] == bucket)
            targets = sorted(rng.sample(mine, min(len(mine), rng.randint(0, 2))))
            events: list[Insert | Update | Delete] = []
            for _ in range(rng.randint(1, 3)):
                next_id += 1
                events.append(Insert(txn, (next_id, rng.choice(["a", "b", None]), rng.randint(0, 99))))
            for target in targets:
                if rng.random() < 0.5:
                    events.append(Delete(txn, target))
                else:
                    next_id += 1
                    events.append(Update(txn, target, (next_id, "upd", txn)))
            hive.write_events(table_dir, events, bucket=bucket)
    return top, aborted


def _snapshot_option(table: str, high_watermark: int, aborted: set[int]) -> str:
    visible_aborted = tuple(sorted(a for a in aborted if a <= high_watermark))
    return ValidWriteIdList(high_watermark, aborted_ids=visible_aborted, table_name=table).to_string()


@pytest.mark.parametrize("engine", ENGINES)
def test_read_hive_written_tables_equal_hive_reader(spark, hive, tmp_path, engine):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    rng = random.Random(SEEDS[0])
    compared = 0
    cases: list[tuple[str, Path, int, set[int]]] = []
    for index in range(3):
        table_dir = tmp_path / f"h{index}"
        top, aborted = _hive_history(hive, table_dir, rng)
        cases.append((f"default.h{index}", table_dir, top, aborted))
    # A streaming delta (several transactions in one file, one of them aborted) and original files.
    streaming = tmp_path / "streaming"
    hive.write_events(streaming, [Insert(1, (1, "s1", 1))])
    events = [Insert(3, (2, "t3", 3)), Insert(4, (3, "t4", 4)), Insert(5, (4, "t5", 5))]
    hive.write_events(streaming, events, min_txn=3, max_txn=5, statement_id=None)
    cases.append(("default.streaming", streaming, 5, {4}))
    originals = tmp_path / "originals"
    hive.write_original_file(originals / "000000_0", [(1, "a", 1), (2, "b", 2), (3, "c", 3)])
    hive.write_original_file(originals / "000001_0", [(4, "d", 4), (5, "e", 5)])
    hive.write_events(originals, [Delete(7, (0, 0, 1))], bucket=0)
    hive.write_events(originals, [Update(7, (0, 1, 0), (4, "D", 40)), Delete(7, (0, 1, 1))], bucket=1)
    cases.append(("default.originals", originals, 7, set()))
    for name, table_dir, top, aborted in cases:
        _hive_table(wh, name, table_dir)
        for high_watermark in sorted({max(1, top // 2), top}):
            snapshot = hive_txn_list(high_watermark, [a for a in aborted if a <= high_watermark])
            theirs = _hive_rows(hive.read_rows(table_dir, snapshot, bucket_count=2))
            df = _read(
                spark,
                wh,
                name,
                engine=engine,
                columns="row__id,id,name,salary",
                snapshot=_snapshot_option(name, high_watermark, aborted),
            )
            assert _spark_hive_rows(df) == theirs, f"{name} at {high_watermark}, aborted {sorted(aborted)}"
            compared += len(theirs)
    assert compared >= 20, compared
    wh.close()


def test_sql_view_reads_the_table(spark, tmp_path):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 4, partitioned=True, buckets=1, txns=5)
    create_view(spark, "t_view", "default.t", warehouse=wh.location)
    result = spark.sql("SELECT p, count(*) AS n FROM t_view GROUP BY p ORDER BY p").collect()
    expected: dict[str, int] = {}
    for _v, p in history.model.values():
        expected[p] = expected.get(p, 0) + 1
    assert {r.p: r.n for r in result} == expected
    wh.close()


# -- writes ------------------------------------------------------------------------------------------


def _people(spark: SparkSession, ids: range, tag: str, partitions: int = 2) -> DataFrame:
    rows = [(i, f"{tag}-{i}", i * 10) for i in ids]
    return spark.createDataFrame(rows, "id int, name string, salary int").repartition(partitions)


def test_write_append_commits_one_transaction_hive_reads_it(spark, hive, tmp_path):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    location = tmp_path / "people"
    _hive_table(wh, "default.people", location)
    writer = _people(spark, range(1, 41), "w1").write.format("hiveacid").option("warehouse", wh.location)
    writer.mode("append").save("default.people")
    _people(spark, range(41, 51), "w2", partitions=1).write.format("hiveacid").option(
        "warehouse", wh.location
    ).mode("append").save("default.people")
    # Bucketed table: task k writes delta_w_w_k with Hive's bucket of each row.
    names = sorted(p.name for p in location.iterdir())
    assert names == ["delta_0000001_0000001_0000", "delta_0000001_0000001_0001", "delta_0000002_0000002_0000"]
    expected = sorted((i, f"w1-{i}" if i <= 40 else f"w2-{i}", i * 10) for i in range(1, 51))
    ours = wh.read("default.people")
    assert (
        sorted(zip(*(ours.column(c).to_pylist() for c in ("id", "name", "salary")), strict=True)) == expected
    )
    theirs = hive.read_rows(location, hive_txn_list(2), bucket_count=2)
    assert sorted(r[1:] for r in theirs) == expected
    assert len({r[0] for r in theirs}) == 50, "two rows share a ROW__ID"
    from acid_core.writes.rows import assign_buckets

    table = wh.metastore.get_table("default.people")
    for row_id, id_, _name, _salary in theirs:
        hashed = assign_buckets(table, pa.table({"id": pa.array([id_], pa.int32())}))[0]
        assert decode_bucket_property(row_id[1]).bucket_id == hashed, id_
    wh.close()


def test_write_partitioned_append_then_overwrite(spark, tmp_path):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    random_history(wh, 2, partitioned=True, buckets=1, txns=3)
    first = spark.createDataFrame(
        [(1000 + i, f"x{i}", "a" if i % 2 else "new") for i in range(20)], "id int, v string, p string"
    )
    first.repartition(3).write.format("hiveacid").option("warehouse", wh.location).mode("append").save(
        "default.t"
    )
    rows = wh.read("default.t")
    assert {r["id"] for r in rows.to_pylist() if r["id"] >= 1000} == set(range(1000, 1020))
    assert "p=new" in {p.name for p in wh.metastore.list_partitions("default.t")}
    ids_before = {r["id"] for r in rows.to_pylist()}
    assert _rows(_read(spark, wh, "default.t", columns="row__id,id,v,p")) == sorted(
        (
            (
                r["row__id"]["writeid"],
                r["row__id"]["bucketid"],
                r["row__id"]["rowid"],
                r["id"],
                r["v"],
                r["p"],
            )
            for r in wh.read("default.t", with_row_id=True).to_pylist()
        ),
        key=repr,
    )
    assert len(ids_before) > 20

    second = spark.createDataFrame([(7, "only", "c")], "id int, v string, p string")
    second.write.format("hiveacid").option("warehouse", wh.location).mode("overwrite").save("default.t")
    assert [(r.id, r.v, r.p) for r in _read(spark, wh, "default.t").collect()] == [(7, "only", "c")]
    assert wh.read("default.t").to_pylist() == [{"id": 7, "v": "only", "p": "c"}]
    wh.close()


def test_write_failing_task_aborts_and_leaves_nothing_visible(spark, tmp_path):
    from pyspark.sql import functions as F

    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 6, partitioned=False, buckets=1, txns=4)
    before = read_rows(history)
    aborted_before = {t.txn_id for t in wh.metastore.show_transactions() if t.state is TxnState.ABORTED}

    @F.udf("string")
    def explode_on_20(value):
        if value == "v-20":
            raise ValueError("boom on row 20")
        return value

    table_dir = Path(wh.metastore.get_table("default.t").location)
    known = {d.name for d in table_dir.iterdir()}
    # No shuffle: the UDF runs inside the write tasks; task 0 (rows 0-14) writes its file, task 1 fails.
    df = spark.range(0, 30, numPartitions=2).selectExpr(
        "cast(id + 2000 as int) as id", "concat('v-', id) as v"
    )
    with pytest.raises(Exception, match="boom on row 20"):
        df.withColumn("v", explode_on_20("v")).write.format("hiveacid").option("warehouse", wh.location).mode(
            "append"
        ).save("default.t")
    written = [d for d in table_dir.iterdir() if d.name not in known]
    assert any((d / "bucket_00000").exists() for d in written), "task 0 wrote no file"
    assert read_rows(history) == before
    after = wh.metastore.show_transactions()
    assert len({t.txn_id for t in after if t.state is TxnState.ABORTED} - aborted_before) == 1
    assert [t for t in after if t.state is TxnState.OPEN] == []
    wh.close()


_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from pyspark.sql import SparkSession, functions as F
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.python.filterPushdown.enabled", "true").getOrCreate())

    @F.udf("string")
    def slow(value):
        time.sleep(0.05)
        return value

    df = spark.range(0, 100000, numPartitions=4).selectExpr("cast(id as int) as id", "cast(id as string) as v")
    print("writing", flush=True)
    df.withColumn("v", slow("v")).write.format("hiveacid").option("warehouse", sys.argv[1]).mode("append").save("default.t")
    print("finished", flush=True)
    """
)


def _driver_env() -> dict[str, str]:
    """The environment of a PySpark driver script run by a test: this interpreter, this checkout."""
    root = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    }


def test_write_killed_job_leaves_nothing_visible(tmp_path):
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 8, partitioned=False, buckets=1, txns=4)
    before = read_rows(history)
    script = tmp_path / "writer.py"
    script.write_text(_KILLED_WRITER)
    env = _driver_env()
    process = subprocess.Popen(
        [sys.executable, str(script), wh.location],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    table_dir = Path(wh.metastore.get_table("default.t").location)
    known = {p.name for p in table_dir.iterdir()}
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline:
            if any(t.state is TxnState.OPEN for t in wh.metastore.show_transactions()):
                break
            assert process.poll() is None, "the writer ended before its transaction opened"
            time.sleep(0.5)
        else:
            pytest.fail("the Spark writer never opened its transaction")
        time.sleep(3)  # let tasks write some files
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the driver and its JVM, as kill -9
        process.wait()
    assert read_rows(history) == before
    open_txns = [t.txn_id for t in wh.metastore.show_transactions() if t.state is TxnState.OPEN]
    assert len(open_txns) == 1
    # The reaper aborts the silent transaction; its files are never read and the cleaner may drop them.
    assert wh.metastore.abort_timed_out_txns(0.0) == open_txns
    assert read_rows(history) == before
    assert {p.name for p in table_dir.iterdir()} >= known
    wh.close()


def _spark_filters(df: DataFrame) -> bool:
    """Whether Spark's executed plan still has a Filter node (RuntimeFilters of the scan are not one)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return re.search(r"(?m)^[\s:+\-*()0-9]*Filter ", plan) is not None


@pytest.mark.parametrize("engine", ENGINES)
def test_read_pushed_data_filters_apply_after_the_delete_merge(spark, tmp_path, engine):
    """Filters on data columns run on the merged rows: a deleted or updated-away row never comes
    back; with the Python source Spark drops its own Filter for exactly the filters acidflow
    declared handled, with the JVM reader Spark keeps it."""
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 13, partitioned=True, buckets=2, txns=12)
    live = sorted((k, *v) for k, v in history.model.items())
    gone = sorted(set(range(1, max(history.model) + 1)) - set(history.model))[:64]
    assert gone, "the history deleted nothing"
    cases = [
        (f"id IN ({', '.join(map(str, gone))})", lambda r: False),
        ("id <= 10 AND p = 'a'", lambda r: r[0] <= 10 and r[2] == "a"),
        ("v LIKE 'u%'", lambda r: r[1].startswith("u")),
        ("NOT (id = 3) AND v IS NOT NULL", lambda r: r[0] != 3),
    ]
    for where, keep in cases:
        df = _read(spark, wh, "default.t", engine=engine, pushdown="true").where(where)
        assert sorted(tuple(r) for r in df.collect()) == [r for r in live if keep(r)], where
        # The Python source declares the exact filters handled; the JVM reader gives every filter
        # back and Spark's generated code applies it to the merged rows.
        assert _spark_filters(df) == (engine == "jvm"), where
    # A predicate acidflow cannot evaluate exactly stays with Spark (and is still right).
    df = _read(spark, wh, "default.t", engine=engine, pushdown="true").where("length(v) > 2")
    assert sorted(tuple(r) for r in df.collect()) == [r for r in live if len(r[1]) > 2]
    assert _spark_filters(df)
    wh.close()


def _slow_udf(seconds: float):
    """A string UDF that takes ``seconds`` per row: a query that runs long enough to act during it."""
    from pyspark.sql import functions as F

    @F.udf("string")
    def slow(value):
        time.sleep(seconds)
        return value

    return slow


def test_read_jvm_lease_lives_while_the_query_runs_and_is_released_after(spark, tmp_path):
    """The JVM reader's ``latest`` lease: renewed by the driver while its query runs (it outlives its
    TTL several times), released when the query's SQL execution ends (not left to expire)."""

    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 4, partitioned=False, buckets=1, txns=3)
    assert len(history.model) >= 5
    watcher = Warehouse.open(wh.location, heartbeat_seconds=None)  # its own metastore connection
    seen: list[tuple[float, tuple[int, ...]]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            leases = tuple(lease.lease_id for lease in watcher.metastore.list_leases("default.t"))
            seen.append((time.monotonic(), leases))
            time.sleep(0.1)

    slow = _slow_udf(1.0)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        df = _read(spark, wh, "default.t", lease_ttl="2").select("id", slow("v").alias("v"))
        rows = df.collect()
        finished = time.monotonic()
        assert sorted((r.id, r.v) for r in rows) == sorted((k, *v) for k, v in history.model.items())
        assert finished - started > 2 * 2, "the query did not outlast its lease's TTL"
        deadline = time.monotonic() + 10
        while watcher.metastore.list_leases("default.t") and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        done.set()
        thread.join()
    assert watcher.metastore.list_leases("default.t") == [], "the lease was not released after the query"
    held = [at for at, leases in seen if leases and started + 2.5 < at < finished - 0.5]
    assert held, "the lease expired while the query still ran"
    assert len({ids for _, ids in seen if ids}) == 1, "one query, one lease"
    watcher.close()
    wh.close()


_NO_JAR_READER = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate())
    reader = spark.read.format("hiveacid").option("warehouse", sys.argv[1])
    print("ROWS", sorted(tuple(r) for r in reader.load("default.t").collect()), flush=True)
    try:
        reader.option("engine", "jvm").load("default.t").collect()
    except Exception as e:
        print("JVM", str(e).splitlines()[0] if "engine='jvm'" not in str(e) else "refused: engine='jvm'", flush=True)
    """
)


def test_read_without_the_jar_is_the_python_source_and_engine_jvm_is_refused(tmp_path):
    """A session without acidflow's jar: ``format("hiveacid")`` is the Python source (Spark's lookup
    of ``pyspark_*`` modules), which reads the same rows and refuses ``engine='jvm'`` by name."""
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 6, partitioned=False, buckets=2, txns=4)
    script = tmp_path / "reader.py"
    script.write_text(_NO_JAR_READER)
    env = _driver_env()
    done = subprocess.run(
        [sys.executable, str(script), wh.location], env=env, capture_output=True, text=True, timeout=600
    )
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines() if " " in line}
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines["ROWS"] == repr(sorted((k, *v) for k, v in history.model.items()))
    assert lines["JVM"] == "refused: engine='jvm'"
    wh.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_read_latest_lease_keeps_its_files_while_compaction_and_cleaning_run_mid_query(
    spark, tmp_path, engine
):
    """A query's own ``latest`` snapshot: compaction and the cleaner run while its tasks still read
    (one bucket after another in ``local[1]``, each slowed by a UDF); the cleaner keeps every file the
    lease reads, so the later tasks open them and the query returns the rows of its snapshot."""

    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    history = random_history(wh, 21, partitioned=False, buckets=3, txns=8)
    before = sorted((k, *v) for k, v in history.model.items())
    watcher = Warehouse.open(wh.location, heartbeat_seconds=None)
    table_dir = Path(wh.metastore.get_table("default.t").location)
    deltas = {p.name for p in table_dir.iterdir() if p.name.startswith(("delta_", "delete_delta_"))}
    assert deltas
    kept: list[bool] = []

    def compact_and_clean_once_the_query_holds_its_lease() -> None:
        deadline = time.monotonic() + 120
        while not watcher.metastore.list_leases("default.t") and time.monotonic() < deadline:
            time.sleep(0.1)
        with watcher.transaction(heartbeat_seconds=None) as txn:
            live = watcher.read("default.t", with_row_id=True)
            txn.delete("default.t", live.slice(0, 3).select(["row__id"]))
        _compact(watcher, CompactionType.MAJOR)
        run_cleaner(watcher.metastore)
        kept.append(deltas <= {p.name for p in table_dir.iterdir()})

    slow = _slow_udf(0.15)
    thread = threading.Thread(target=compact_and_clean_once_the_query_holds_its_lease, daemon=True)
    thread.start()
    rows = _read(spark, wh, "default.t", engine=engine, lease_ttl="30").select("id", slow("v")).collect()
    thread.join(timeout=300)
    assert kept == [True], "the cleaner removed files of a snapshot a running query reads"
    assert sorted(tuple(r) for r in rows) == before
    if engine == "jvm":  # released when the query ended: now the cleaner removes what it kept
        deadline = time.monotonic() + 10
        while watcher.metastore.list_leases("default.t") and time.monotonic() < deadline:
            time.sleep(0.1)
        run_cleaner(watcher.metastore)
        assert not deltas & {p.name for p in table_dir.iterdir()}
    watcher.close()
    wh.close()


def test_write_stream_through_foreach_batch_one_transaction_per_micro_batch(spark, tmp_path):
    """Structured Streaming into an ACID table (the README's recipe): ``foreachBatch`` appends each
    micro-batch through ``hiveacid``, one transaction (one write ID, one delta) per batch; a batch
    that fails leaves an aborted transaction and nothing visible, and the restarted query writes it
    once from its checkpoint."""
    from pyspark.sql import functions as F

    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    create_table(wh, "default.t", partitioned=False, buckets=1)
    incoming, checkpoint = tmp_path / "incoming", tmp_path / "checkpoint"
    incoming.mkdir()
    for n in range(3):
        (incoming / f"part-{n}.json").write_text(
            "".join(f'{{"id": {n * 10 + i}, "v": "s{n}"}}\n' for i in range(4))
        )
    failing = {"batch": 1}

    def append(batch, batch_id: int) -> None:
        if batch_id == failing["batch"]:
            batch = batch.withColumn("v", F.expr("raise_error('micro-batch failed')"))
        batch.write.format("hiveacid").option("warehouse", wh.location).mode("append").save("default.t")

    def run() -> None:
        stream = (
            spark.readStream.schema("id int, v string").option("maxFilesPerTrigger", 1).json(str(incoming))
        )
        query = stream.writeStream.foreachBatch(append).option("checkpointLocation", str(checkpoint))
        query.trigger(availableNow=True).start().awaitTermination()

    with pytest.raises(Exception, match="micro-batch failed"):
        run()
    first = wh.read("default.t").to_pylist()  # batch 0: one file's 4 rows (the source picks the file)
    assert len(first) == 4
    assert len({r["v"] for r in first}) == 1
    aborted = [t for t in wh.metastore.show_transactions() if t.state is TxnState.ABORTED]
    assert len(aborted) == 1
    failing["batch"] = -1
    run()  # restarted from the checkpoint: batch 1 again, then batch 2
    rows = sorted((r["id"], r["v"]) for r in wh.read("default.t").to_pylist())
    assert rows == sorted((n * 10 + i, f"s{n}") for n in range(3) for i in range(4))
    table_dir = Path(wh.metastore.get_table("default.t").location)
    assert len([p for p in table_dir.iterdir() if p.name.startswith("delta_")]) >= 3
    write_ids = {r["row__id"]["writeid"] for r in wh.read("default.t", with_row_id=True).to_pylist()}
    assert len(write_ids) == 3, "one transaction per micro-batch"
    wh.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_read_equal_events_in_one_file_once_and_events_out_of_order_refused(spark, tmp_path, engine):
    """One rule on both read paths and in acidflow's own reader (Hive's OrcRawRecordMerger)."""
    from tests.acid_core.orc.acid_files import bucket_property, write_events

    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    create_table(wh, "default.t", partitioned=False, buckets=1)
    with wh.transaction(heartbeat_seconds=None) as txn:
        txn.insert("default.t", pa.table({"id": pa.array([0], pa.int32()), "v": ["x"]}))
    bucket = tmp_path / "wh" / "t" / "delta_0000001_0000001_0000" / "bucket_00000"
    b0, row_type = bucket_property(0), "struct<id:int,v:string>"
    repeated = [(0, 1, b0, 0, 1, (1, "a")), (0, 1, b0, 0, 1, (1, "copy")), (0, 1, b0, 1, 1, (2, "b"))]
    write_events(bucket, repeated, row_type=row_type)
    rows = sorted((r["id"], r["v"]) for r in _read(spark, wh, "default.t", engine=engine).collect())
    assert rows == [(1, "a"), (2, "b")]
    backwards = [(0, 1, b0, 0, 1, (1, "a")), (0, 1, b0, 2, 1, (3, "c")), (0, 1, b0, 1, 1, (2, "b"))]
    write_events(bucket, backwards, row_type=row_type)
    with pytest.raises(Exception, match="Corrupt ACID data at") as caught:
        _read(spark, wh, "default.t", engine=engine).collect()
    assert (
        f"Corrupt ACID data at '{bucket}': event 2 has row ID (writeid=1, bucketid={b0}, rowid=1) after "
        f"(writeid=1, bucketid={b0}, rowid=2); expected events in (writeid, bucketid, rowid) order"
    ) in str(caught.value)
    wh.close()


@pytest.mark.integration("hdfs")
@pytest.mark.parametrize("engine", ENGINES)
def test_read_a_table_on_hdfs_at_every_stage(spark, tmp_path, hdfs_env, engine):
    """``format("hiveacid")`` reads a table whose location is ``hdfs://`` (the JVM reader through the
    Hadoop client in PySpark's jars, the Python one through hdfs-native) before and after compaction."""
    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    wh = Warehouse.open(hdfs_env.warehouse, metastore, heartbeat_seconds=None)
    history = random_history(wh, 3, partitioned=True, buckets=2, txns=6)
    assert wh.metastore.get_table("default.t").location.startswith("hdfs://")
    expected = read_rows(history)

    def read():
        reader = spark.read.format("hiveacid").option("warehouse", hdfs_env.warehouse)
        reader = reader.option("metastore", metastore).option("engine", engine)
        return _rows(reader.option("columns", "row__id,id,v,p").load("default.t"))

    assert read() == expected
    _compact(wh, CompactionType.MAJOR)
    run_cleaner(wh.metastore)
    assert read() == expected
    wh.close()


@pytest.mark.integration("hdfs")
def test_write_append_and_overwrite_a_table_on_hdfs_read_back_and_compacted(
    spark, tmp_path, hdfs_env, capsys
):
    """``format("hiveacid")`` appends to and overwrites a partitioned, bucketed table on ``hdfs://``.

    The Python writers open the table through hdfs-native in Spark's Python workers; each job is one
    transaction whose deltas the NameNode lists; the JVM reader (Hadoop's HDFS client) and
    ``acidflow read`` see the same rows after each write, and after a major compaction and the cleaner.
    """
    from acid_core.cli import main as acidflow

    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    wh = Warehouse.open(hdfs_env.warehouse, metastore, heartbeat_seconds=None)
    create_table(wh, "default.t", partitioned=True, buckets=2)

    def write(rows, mode):
        # An overwrite of a bucketed table is one write task (each bucket is one file of base_w).
        df = spark.createDataFrame(rows, "id int, v string, p string").repartition(
            2 if mode == "append" else 1
        )
        writer = df.write.format("hiveacid").option("warehouse", hdfs_env.warehouse)
        writer.option("metastore", metastore).mode(mode).save("default.t")

    def jvm_rows():
        reader = spark.read.format("hiveacid").option("warehouse", hdfs_env.warehouse)
        reader = reader.option("metastore", metastore).option("engine", "jvm")
        return sorted((r.id, r.v, r.p) for r in reader.load("default.t").collect())

    def cli_rows():
        rows = []
        for partition in ("p=a", "p=b"):
            location = f"{hdfs_env.warehouse}/t/{partition}"
            assert acidflow(["read", location, "--metastore", metastore, "--format", "jsonl"]) == 0
            out = capsys.readouterr().out
            rows += [(r["id"], r["v"], partition[2:]) for r in map(json.loads, out.splitlines())]
        return sorted(rows)

    def acid_dirs():
        # From the NameNode's own listing: warehouse/t/p=x/<dir>/bucket_N (not the cleaner's _acidflow_*)
        paths = [p for p in hdfs_env.paths("warehouse/t") if p.count("/") >= 4 and "/_" not in p]
        return sorted({"/".join(p.split("/")[2:4]) for p in paths})

    first = [(i, f"one-{i}", "ab"[i % 2]) for i in range(12)]
    write(first, "append")
    second = [(i, f"two-{i}", "ab"[i % 2]) for i in range(12, 16)]
    write(second, "append")
    # One transaction per job: write IDs 1 and 2, a delta per write task (delta_w_w_<task>) and partition.
    assert {(d.split("/")[0], d.split("/")[1][:22]) for d in acid_dirs()} == {
        (p, f"delta_000000{w}_000000{w}_") for p in ("p=a", "p=b") for w in (1, 2)
    }
    expected = sorted(first + second)
    assert jvm_rows() == expected
    assert cli_rows() == expected

    third = [(100, "three-a", "a"), (101, "three-b", "b")]
    write(third, "overwrite")
    assert jvm_rows() == sorted(third)
    assert cli_rows() == sorted(third)
    fourth = [(200, "four-a", "a"), (201, "four-b", "b")]
    write(fourth, "append")
    expected = sorted(third + fourth)
    # The overwrite is a base_3 in each partition; the deltas it hides stay until the cleaner runs.
    assert [d for d in acid_dirs() if "/base_" in d] == ["p=a/base_0000003", "p=b/base_0000003"]

    _compact(wh, CompactionType.MAJOR)
    run_cleaner(wh.metastore)
    after = acid_dirs()
    assert len(after) == 2, after
    assert [d[:20] for d in after] == ["p=a/base_0000004_v00", "p=b/base_0000004_v00"], after
    assert jvm_rows() == expected
    assert cli_rows() == expected
    wh.close()
