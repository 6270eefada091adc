"""Tables written by Hive 3.1.3's and Hive 4.0.1's own ``OrcRecordUpdater``, compacted and cleaned by acidflow.

For each version (the ``hive31`` / ``hive4`` oracle JVMs) a table's history is written file by file
with that version's ``OrcRecordUpdater``, each write under a transaction of acidflow's metastore
(the write IDs its transactions allocate, registered as a writer's lock registers them), so the metastore's snapshot is the truth for everyone:

    write 1  insert 6 rows                       committed  \\ Hive 4: one minor-compacted
    write 2  insert 4 rows                       committed  / delta_1_2_v<T>, T a committed txn
    write 3  update 1 row of write 1, delete 1   committed  (split update: delta + delete_delta)
    write 4  insert 2 rows, delete 1 row          ABORTED
    write 5  insert 2 rows                        left OPEN
    write 6  delete 1 row of write 2              committed

Then acidflow compacts it, minor then major (Hive 3.1 table: ``hive31.names``, no ``_v``; Hive 4:
``_v`` names), and cleans it. Before and after every step, that version's row-mode reader
(``OrcInputFormat.getRecordReader``: ``OrcRawRecordMerger``) and its vectorized
``VectorizedOrcAcidRowBatchReader`` (ROW__ID projected) must return exactly the rows and ROW__IDs
they returned before compaction, and so must ``acidflow read --row-id`` (the CLI, the
metastore's current snapshot) and the library reader. Hive is given the metastore's snapshot as its
drivers give it: the table's ``ValidReaderWriteIdList`` and the ``ValidTxnList``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from acid_core.cli import main as acidflow_main
from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.planner import HIVE31_NAMES
from acid_core.compaction.worker import run_worker
from acid_core.metastore import Column, CompactionType, TableDefinition, WriteOperation
from acid_core.orc.schema import ROW_ID_COLUMN
from acid_core.writes.transaction import Warehouse
from tests.fixtures.hive import Delete, Insert, Update
from tests.fixtures.hive_oracles import hive_snapshot

if TYPE_CHECKING:
    from tests.fixtures.hive_oracles import HiveVersionOracle

pytestmark = pytest.mark.integration("hive")

TABLE = "default.h"
BUCKET0 = 536870912  # BucketCodec.V1.encode(bucket 0, statement 0), as Hive 3+ writes it


def _hive_rows(hive: HiveVersionOracle, wh: Warehouse, location: str, *, vectorized: bool) -> list[tuple]:
    write_ids, txns = hive_snapshot(wh.metastore, TABLE)
    return sorted(hive.read_rows(location, write_ids, txns, vectorized=vectorized))


def _library_rows(wh: Warehouse) -> list[tuple]:
    rows = []
    for record in wh.read(TABLE, with_row_id=True).to_pylist():
        row_id = record[ROW_ID_COLUMN]
        rows.append(
            (
                (row_id["writeid"], row_id["bucketid"], row_id["rowid"]),
                record["id"],
                record["name"],
                record["salary"],
            )
        )
    return sorted(rows)


def _cli_rows(location: str, capsys: pytest.CaptureFixture[str]) -> list[tuple]:
    code = acidflow_main(["read", location, "--row-id"])
    out = capsys.readouterr()
    assert code == 0, out.err
    rows = []
    for line in out.out.splitlines():
        record = json.loads(line)
        row_id = record["row__id"]
        rows.append(
            (
                (row_id["writeid"], row_id["bucketid"], row_id["rowid"]),
                record["id"],
                record["name"],
                record["salary"],
            )
        )
    return sorted(rows)


def _write_history(hive: HiveVersionOracle, wh: Warehouse, location: str) -> dict[str, int]:
    """The history of the module docstring; returns the transaction ids by role."""
    metastore = wh.metastore
    txn_of: dict[str, int] = {}

    def begin(role: str, operation: WriteOperation = WriteOperation.INSERT) -> int:
        # What Hive's writer registers (its lock's TXN_COMPONENTS): without it an aborted
        # transaction looks empty to housekeeping, which forgets it and its write turns valid.
        txn = metastore.open_txn()
        txn_of[role] = txn
        return int(metastore.add_write_component(txn, TABLE, None, operation))

    first = [Insert(1, (i, f"n{i}", i * 10)) for i in range(1, 7)]
    second = [Insert(2, (i, f"n{i}", i * 10)) for i in range(7, 11)]
    assert begin("w1") == 1
    assert begin("w2") == 2
    if hive.has_visibility_suffixes:
        # Hive 4's compactor output for writes 1-2: one delta with the compactor's txn as _v suffix.
        compactor_txn = metastore.open_txn()
        metastore.commit_txn(txn_of["w1"])
        metastore.commit_txn(txn_of["w2"])
        written = hive.write_events(
            location,
            first + second,
            min_write_id=1,
            max_write_id=2,
            statement_id=None,
            visibility_txn_id=compactor_txn,
        )
        assert written == [f"delta_0000001_0000002_v{compactor_txn:07d}/bucket_00000"]
        metastore.commit_txn(compactor_txn)
    else:
        hive.write_events(location, first)
        hive.write_events(location, second)
        metastore.commit_txn(txn_of["w1"])
        metastore.commit_txn(txn_of["w2"])

    assert begin("w3", WriteOperation.UPDATE) == 3
    written = hive.write_events(
        location, [Update(3, (1, BUCKET0, 0), (1, "n1-updated", 11)), Delete(3, (1, BUCKET0, 1))]
    )
    assert sorted(written) == [
        "delete_delta_0000003_0000003_0000/bucket_00000",
        "delta_0000003_0000003_0000/bucket_00000",
    ]
    metastore.commit_txn(txn_of["w3"])

    assert begin("w4") == 4
    hive.write_events(
        location, [Insert(4, (40, "aborted", 0)), Insert(4, (41, "aborted", 0)), Delete(4, (1, BUCKET0, 2))]
    )
    metastore.abort_txn(txn_of["w4"])

    assert begin("w5") == 5
    hive.write_events(location, [Insert(5, (50, "open", 0)), Insert(5, (51, "open", 0))])  # never committed

    assert begin("w6", WriteOperation.DELETE) == 6
    hive.write_events(location, [Delete(6, (2, BUCKET0, 0))])
    metastore.commit_txn(txn_of["w6"])
    return txn_of


def _check_reads(hive, wh, location, expected, capsys, when):
    assert _hive_rows(hive, wh, location, vectorized=False) == expected, f"Hive row mode {when}"
    assert _hive_rows(hive, wh, location, vectorized=True) == expected, f"Hive vectorized {when}"
    assert _library_rows(wh) == expected, f"acidflow's reader {when}"
    assert _cli_rows(location, capsys) == expected, f"acidflow read {when}"


LEFT_AFTER_CLEAN = ["base_0000004", "delete_delta_0000006_0000006_0000", "delta_0000005_0000005_0000"]


@pytest.mark.timeout(600)  # a JVM start (~25 s) and 22 reads through Hive on a loaded machine
@pytest.mark.parametrize("version", ["hive31", "hive4"])
def test_hive_written_table_compacted_and_cleaned_reads_the_same(
    version: str, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hive: HiveVersionOracle = request.getfixturevalue(version)
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    properties = {"transactional": "true"}
    if not hive.has_visibility_suffixes:
        properties[HIVE31_NAMES] = "true"
    wh.metastore.create_table(
        TableDefinition(
            TABLE,
            columns=(Column("id", "int"), Column("name", "string"), Column("salary", "int")),
            properties=properties,
        )
    )
    location = wh.metastore.get_table(TABLE).location
    txn_of = _write_history(hive, wh, location)

    expected = _hive_rows(hive, wh, location, vectorized=False)
    ids = sorted(row[1] for row in expected)
    # id 2 deleted by write 3, id 7 by write 6, id 1 updated by write 3; write 4 aborted, 5 open
    assert ids == [1, 3, 4, 5, 6, 8, 9, 10]
    assert (1, "n1-updated", 11) in [row[1:] for row in expected]
    assert _hive_rows(hive, wh, location, vectorized=True) == expected
    assert _library_rows(wh) == expected
    assert _cli_rows(location, capsys) == expected

    for kind in (CompactionType.MINOR, CompactionType.MAJOR):
        wh.metastore.enqueue_compaction(TABLE, None, kind)
        [outcome] = run_worker(wh.metastore)
        assert outcome.status == "compacted", outcome.message
        assert all(("_v" in name) == hive.has_visibility_suffixes for name in outcome.outputs), (
            outcome.outputs
        )
        _check_reads(hive, wh, location, expected, capsys, f"after the {kind} compaction")

    def acid_dirs() -> list[str]:
        return sorted(
            p.name.split("_v")[0] for p in Path(location).iterdir() if not p.name.startswith((".", "_"))
        )

    compacted = acid_dirs()
    run_cleaner(wh.metastore)
    # Write 5's transaction is older than both compactions: Hive's cleaner waits for it, so does ours.
    assert acid_dirs() == compacted
    _check_reads(hive, wh, location, expected, capsys, "after a clean that waited")

    wh.metastore.abort_txn(txn_of["w5"])
    run_cleaner(wh.metastore)
    # base_4 (writes 1-4, the major compaction stopped below the open write 5) and what came after
    # it; every directory the base covers is gone.
    assert acid_dirs() == LEFT_AFTER_CLEAN, acid_dirs()
    _check_reads(hive, wh, location, expected, capsys, "after the clean")
    wh.close()
