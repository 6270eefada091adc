"""Nested columns that acidflow wrote, read by Hive 3.1.3's and Hive 4.0.1's own ACID reader.

Every user column of an ORC event file lies inside ``row``, and pyarrow's ORC writer loses the
values of a struct below the top level that holds nulls (``acid_core.orc.nested_nulls``): nested
columns are where acidflow's bytes and Hive's reading of them can part. The table has a struct, a
struct in a struct, an array of structs and a map of structs, with nulls at every level:

    write 1-3  insert 3 x 200 rows                   acidflow's writer
    write 4    update the nested values of 40 rows   split update: delta + delete_delta
    write 5    delete 30 rows
    then       a minor compaction, a major compaction, a clean (acidflow's worker and cleaner)

After every step that version's row-mode ACID reader (``OrcInputFormat.getRecordReader``:
``OrcRawRecordMerger``, the table's columns given as a Hive driver gives them) must return exactly
the rows the test built (its own Python values, never acidflow's reader), each value rendered by
Hive's ``SerDeUtils.getJSONString``, and each row with the ROW__ID acidflow's reader gives it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.planner import HIVE31_NAMES
from acid_core.compaction.worker import run_worker
from acid_core.metastore import Column, CompactionType, TableDefinition
from acid_core.orc.schema import ROW_ID_COLUMN
from acid_core.writes.transaction import Warehouse
from tests.fixtures.hive_oracles import hive_snapshot

if TYPE_CHECKING:
    from tests.fixtures.hive_oracles import HiveVersionOracle

pytestmark = pytest.mark.integration("hive")

TABLE = "default.nested"
COLUMNS = (
    ("id", "bigint"),
    ("addr", "struct<city:string,zip:int>"),
    ("deep", "struct<inner:struct<x:int>,y:int>"),
    ("tags", "array<struct<city:string,zip:int>>"),
    ("props", "map<string,struct<city:string,zip:int>>"),
)
_ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.int32())])
_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("addr", _ADDRESS),
        ("deep", pa.struct([("inner", pa.struct([("x", pa.int32())])), ("y", pa.int32())])),
        ("tags", pa.list_(_ADDRESS)),
        ("props", pa.map_(pa.string(), _ADDRESS)),
    ]
)
_ROWS = 600


def _row(i: int, salt: str = "") -> dict[str, Any]:
    """Nulls at every level, each with its own period, so that neighbouring values differ."""
    return {
        "id": i,
        "addr": None if i % 3 == 0 else {"city": f"c{i}{salt}", "zip": i},
        "deep": None if i % 5 == 0 else {"inner": None if i % 2 else {"x": i % 7}, "y": i % 11},
        "tags": None if i % 4 == 0 else [None, {"city": f"t{salt}", "zip": i % 13}],
        "props": None if i % 6 == 0 else [("k", None if i % 2 else {"city": f"p{salt}", "zip": i % 17})],
    }


def _updated(i: int) -> dict[str, Any]:
    """Row ``i`` with other nested values, nulls where the insert had values and the reverse."""
    row = _row(i + 1, salt="-u")
    return {**row, "id": i}


def _as_hive(row: dict[str, Any]) -> dict[str, Any]:
    """A row as Hive's JSON has it: a map as an object."""
    return {**row, "props": None if row["props"] is None else dict(row["props"])}


def _check(
    hive: HiveVersionOracle, wh: Warehouse, location: str, expected: dict[int, dict], when: str
) -> None:
    read = hive.read_typed_rows(location, *hive_snapshot(wh.metastore, TABLE), COLUMNS)
    assert len(read) == len(expected), f"Hive {hive.version} {when}: {len(read)} rows"
    by_id = {values["id"]: (row_id, values) for row_id, values in read}
    for i, row in sorted(expected.items()):
        assert by_id[i][1] == _as_hive(row), f"Hive {hive.version} {when}: row {i}"
    ours = wh.read(TABLE, with_row_id=True).to_pylist()
    row_ids = {
        r["id"]: (r[ROW_ID_COLUMN]["writeid"], r[ROW_ID_COLUMN]["bucketid"], r[ROW_ID_COLUMN]["rowid"])
        for r in ours
    }
    assert {i: row_id for i, (row_id, _) in by_id.items()} == row_ids, f"ROW__IDs {when}"


@pytest.mark.timeout(600)  # a JVM start (~25 s) and 5 reads through Hive on a loaded machine
@pytest.mark.parametrize("version", ["hive31", "hive4"])
def test_nested_columns_acidflow_wrote_read_the_same_in_hive(
    version: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    hive: HiveVersionOracle = request.getfixturevalue(version)
    properties = {"transactional": "true"}
    if not hive.has_visibility_suffixes:
        properties[HIVE31_NAMES] = "true"
    wh = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    try:
        wh.metastore.create_table(
            TableDefinition(TABLE, columns=tuple(Column(n, t) for n, t in COLUMNS), properties=properties)
        )
        location = wh.metastore.get_table(TABLE).location
        expected = {i: _row(i) for i in range(_ROWS)}
        for start in range(0, _ROWS, 200):
            with wh.transaction(heartbeat_seconds=None) as txn:
                rows = [expected[i] for i in range(start, start + 200)]
                txn.insert(TABLE, pa.Table.from_pylist(rows, schema=_SCHEMA))
        _check(hive, wh, location, expected, "after the inserts")

        live = wh.read(TABLE, with_row_id=True)
        position = {i: n for n, i in enumerate(live.column("id").to_pylist())}
        changed = [i for i in range(_ROWS) if i % 15 == 1]
        updates = pa.Table.from_pylist([_updated(i) for i in changed], schema=_SCHEMA)
        row_ids = live.column(ROW_ID_COLUMN).take(pa.array([position[i] for i in changed]))
        with wh.transaction(heartbeat_seconds=None) as txn:
            txn.update(TABLE, updates.append_column(ROW_ID_COLUMN, row_ids))
        expected.update({i: _updated(i) for i in changed})
        doomed = [i for i in range(_ROWS) if i % 20 == 7]
        with wh.transaction(heartbeat_seconds=None) as txn:
            txn.delete(TABLE, live.take(pa.array([position[i] for i in doomed])).select([ROW_ID_COLUMN]))
        for i in doomed:
            del expected[i]
        _check(hive, wh, location, expected, "after the update and the delete")

        for kind in (CompactionType.MINOR, CompactionType.MAJOR):
            wh.metastore.enqueue_compaction(TABLE, None, kind)
            [outcome] = run_worker(wh.metastore)
            assert outcome.status == "compacted", outcome.message
            _check(hive, wh, location, expected, f"after the {kind} compaction")
        assert [r.status for r in run_cleaner(wh.metastore)] == ["cleaned", "cleaned"]
        assert [
            p.name.split("_v")[0] for p in Path(location).iterdir() if not p.name.startswith((".", "_"))
        ] == ["base_0000005"]
        _check(hive, wh, location, expected, "after the clean")
    finally:
        wh.close()
