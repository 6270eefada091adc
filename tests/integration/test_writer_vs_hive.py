"""Files written by acidflow's event-file writer, read by Apache Hive 2.3.10's own ACID readers.

The oracle (tests/fixtures/hive.py) runs Hive's ``OrcInputFormat`` row-mode reader (the
``OrcRawRecordMerger``) and its ``VectorizedOrcAcidRowBatchReader`` over a table directory at a
snapshot. The expected rows come from an independent dictionary model of the same history
(inserts, deletes and updates per transaction), never from acidflow's reader; each test reads at
every high watermark of its history.

Hive 2.3 is transaction-id based and split-update only with ``transactional_properties=default``
(which the oracle sets); the row type is the oracle's ``struct<id:int, name:string, salary:int>``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pyarrow as pa
import pyorc
import pytest

from acid_core.bucket_codec import encode_bucket_property
from acid_core.fs import LocalFileIO
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, sort_events, write_acid_dir
from acid_core.paths import BaseDir, DeleteDeltaDir, DeltaDir
from tests.fixtures.hive import hive_txn_list

pytestmark = [pytest.mark.integration("hive"), pytest.mark.slow]

ROW_TYPE = RowType.of([("id", "int"), ("name", "string"), ("salary", "int")])
Key = tuple[int, int, int]
Row = tuple[int, str, int]


@dataclass
class History:
    """A table's history and the dictionary model of what every snapshot contains."""

    bucket_count: int
    # txn -> {key: row} inserted by that txn; txn -> keys deleted by that txn
    inserted: dict[int, dict[Key, Row]] = field(default_factory=dict)
    deleted: dict[int, set[Key]] = field(default_factory=dict)

    def visible(self, high_watermark: int) -> list[tuple[Key, int, str, int]]:
        rows: dict[Key, Row] = {}
        for txn in sorted(self.inserted):
            if txn <= high_watermark:
                rows.update(self.inserted[txn])
        for txn, keys in self.deleted.items():
            if txn <= high_watermark:
                for key in keys:
                    rows.pop(key, None)
        return sorted((key, *row) for key, row in rows.items())


class Writer:
    """Writes a history with acidflow's writer and records it in the model."""

    def __init__(
        self,
        table_dir: str,
        bucket_count: int,
        stripe_size: int = 64 * 1024 * 1024,
        compression: str = "zlib",
    ) -> None:
        self.table_dir = table_dir
        self.file_io = LocalFileIO()
        self.history = History(bucket_count)
        self.stripe_size = stripe_size
        self.compression = compression

    def insert(self, txn: int, rows_by_bucket: dict[int, list[Row]], *, base: bool = False) -> None:
        batches = {}
        inserted = self.history.inserted.setdefault(txn, {})
        for bucket_id, rows in rows_by_bucket.items():
            batch = pa.record_batch(
                {
                    "id": pa.array([r[0] for r in rows], pa.int32()),
                    "name": pa.array([r[1] for r in rows], pa.string()),
                    "salary": pa.array([r[2] for r in rows], pa.int32()),
                }
            )
            # Several batches per bucket, so files are written as streams.
            events = insert_events(batch, write_id=txn, bucket_id=bucket_id, row_type=ROW_TYPE)
            batches[bucket_id] = [events.slice(i, 1000) for i in range(0, events.num_rows, 1000)]
            bucket = encode_bucket_property(bucket_id)
            inserted.update({(txn, bucket, i): row for i, row in enumerate(rows)})
        directory = BaseDir(txn) if base else DeltaDir(txn, txn, 0)
        write_acid_dir(
            self.file_io,
            self.table_dir,
            directory,
            batches,
            ROW_TYPE,
            stripe_size=self.stripe_size,
            compression=self.compression,
        )

    def delete(self, txn: int, keys: list[Key]) -> None:
        by_bucket: dict[int, list[Key]] = {}
        for key in keys:
            by_bucket.setdefault((key[1] >> 16) & 0x0FFF, []).append(key)
        batches = {
            bucket_id: sort_events(
                delete_events(tuple(zip(*bucket_keys, strict=True)), write_id=txn, row_type=ROW_TYPE)
            ).to_batches()
            for bucket_id, bucket_keys in by_bucket.items()
        }
        write_acid_dir(self.file_io, self.table_dir, DeleteDeltaDir(txn, txn, 0), batches, ROW_TYPE)
        self.history.deleted.setdefault(txn, set()).update(keys)


def _assert_hive_reads_model(hive, writer: Writer, high_watermarks) -> None:
    for high_watermark in high_watermarks:
        expected = writer.history.visible(high_watermark)
        for vectorized in (False, True):
            rows = hive.read_rows(
                writer.table_dir,
                hive_txn_list(high_watermark),
                vectorized=vectorized,
                bucket_count=writer.history.bucket_count,
            )
            assert sorted(rows) == expected, f"high watermark {high_watermark}, vectorized={vectorized}"


def test_hive_reads_inserts_deletes_and_updates_at_every_high_watermark(hive, tmp_path):
    writer = Writer(str(tmp_path / "t"), bucket_count=2)
    writer.insert(1, {0: [(1, "ann", 100), (2, "bob", 200), (3, "cy", 300)], 1: [(4, "dee", 400)]})
    writer.insert(2, {0: [(5, "eve", 500)], 1: [(6, "fay", 600), (7, "gus", 700)]})
    b0, b1 = encode_bucket_property(0), encode_bucket_property(1)
    writer.delete(3, [(1, b0, 1), (2, b1, 0)])  # bob and fay
    # An update as split-update writes it: a delete of the old version, an insert of the new one.
    writer.delete(4, [(1, b0, 0)])
    writer.insert(4, {0: [(1, "ann", 150)]})
    _assert_hive_reads_model(hive, writer, range(5))


def test_hive_reads_a_base_and_multi_stripe_files(hive, tmp_path):
    rng = random.Random(3)
    writer = Writer(str(tmp_path / "t"), bucket_count=1, stripe_size=64 * 1024)
    rows = [(i, f"name-{rng.random():.12f}", rng.randrange(10**6)) for i in range(30_000)]
    writer.insert(5, {0: rows}, base=True)
    with (tmp_path / "t" / "base_0000005" / "bucket_00000").open("rb") as f:
        assert pyorc.Reader(f).num_of_stripes >= 2, "the key index must cover several stripes"
    bucket = encode_bucket_property(0)
    writer.delete(6, sorted((5, bucket, i) for i in rng.sample(range(30_000), 500)))
    writer.insert(7, {0: rows[:20_000]})
    _assert_hive_reads_model(hive, writer, (5, 6, 7))


def _read_rows_split_by_stripes(hive, table_dir: str, valid_txns: str, max_split_size: int):
    """Hive's row-mode reader over ETL splits of at most ``max_split_size`` bytes (py4j, Hive's classes).

    The oracle's ``read_rows`` uses one split per file (BI). With ETL splits Hive cuts a file at
    stripe boundaries, and ``OrcRawRecordMerger.discoverKeyBounds`` takes each split's key range
    from ``hive.acid.key.index``: the delete events a split applies are those inside its range, so
    a wrong key index loses or duplicates deletes. The job settings mirror the oracle's
    ``HiveAcidEvents.readerConf``.
    """
    jvm = hive.jvm
    job = jvm.org.apache.hadoop.mapred.JobConf(jvm.acidflow.hive.HiveAcidOracle.newConf())
    settings = {
        "bucket_count": "1",
        "transactional": "true",
        "transactional_properties": "default",
        "hive.transactional.table.scan": "true",
        "hive.txn.operational.properties": "1",  # AcidOperationalProperties.getDefault(): split update
        "schema.evolution.columns": "id,name,salary",
        "schema.evolution.columns.types": "int,string,int",
        "columns": "id,name,salary",
        "columns.types": "int:string:int",
        "hive.vectorized.execution.enabled": "false",
        "hive.exec.orc.split.strategy": "ETL",
        "hive.orc.splits.include.fileid": "false",
        "mapreduce.input.fileinputformat.split.maxsize": str(max_split_size),
        "mapreduce.input.fileinputformat.split.minsize": "1",
        "hive.txn.valid.txns": valid_txns,
        "mapred.input.dir": f"file:{table_dir}",
    }
    for key, value in settings.items():
        job.set(key, value)
    input_format = jvm.org.apache.hadoop.hive.ql.io.orc.OrcInputFormat()
    splits = list(input_format.getSplits(job, 1))
    rows = []
    for split in splits:
        reader = input_format.getRecordReader(split, job, jvm.org.apache.hadoop.mapred.Reporter.NULL)
        key, value = reader.createKey(), reader.createValue()
        try:
            while reader.next(key, value):
                row_id = reader.getRecordIdentifier()
                # OrcStruct.toString of the row: "{id, name, salary}" (names here hold no ", ").
                id_, name, salary = value.toString()[1:-1].split(", ")
                rows.append(
                    (
                        (row_id.getTransactionId(), row_id.getBucketId(), row_id.getRowId()),
                        int(id_),
                        name,
                        int(salary),
                    )
                )
        finally:
            reader.close()
    return len(splits), rows


def test_hive_splits_at_stripes_use_the_key_index(hive, tmp_path):
    rng = random.Random(5)
    # Uncompressed, so that stripes follow the small stripe size closely: about 1000 rows each.
    writer = Writer(str(tmp_path / "t"), bucket_count=1, stripe_size=16 * 1024, compression="none")
    rows = [(i, f"name-{rng.random():.12f}", rng.randrange(10**6)) for i in range(12_000)]
    writer.insert(5, {0: rows}, base=True)
    bucket = encode_bucket_property(0)
    writer.delete(6, sorted((5, bucket, i) for i in rng.sample(range(12_000), 300)))
    for high_watermark in (5, 6):
        split_count, read = _read_rows_split_by_stripes(
            hive, writer.table_dir, hive_txn_list(high_watermark), max_split_size=10_000
        )
        assert split_count >= 5, "the base must be read as several stripe-aligned splits"
        assert sorted(read) == writer.history.visible(high_watermark)
