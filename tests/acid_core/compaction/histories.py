"""Random write histories through the real write path (Warehouse + Transaction), for compaction tests.

A history is a sequence of transactions on one table (optionally partitioned by ``p`` and
bucketed): inserts, deletes and updates of live rows, each transaction committed, aborted or left
open. After every transaction the snapshot (ValidTxnList) is recorded, with the rows a naive dict
model says it must read, so tests can compare reads before and after compaction and cleaning.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from acid_core.fs import file_io_for
from acid_core.metastore import Column, TableDefinition
from acid_core.orc.reader import scan_table
from acid_core.orc.schema import ROW_ID_COLUMN

if TYPE_CHECKING:
    from acid_core.writeids import ValidTxnList
    from acid_core.writes.transaction import Warehouse

Row = tuple  # (writeid, bucketid, rowid, id, v[, p])


@dataclass
class History:
    warehouse: Warehouse
    table: str
    partitioned: bool
    snapshots: list[ValidTxnList] = field(default_factory=list)
    open_txns: list[object] = field(default_factory=list)
    model: dict[int, tuple] = field(default_factory=dict)  # id -> (v[, p]) of committed rows


def model_rows(history: History) -> list[tuple]:
    """The naive model's rows (id, v[, p]), sorted."""
    return sorted((key, *value) for key, value in history.model.items())


def data_rows(rows: list[Row]) -> list[tuple]:
    """Rows without their ROW__ID, sorted."""
    return sorted(row[3:] for row in rows)


def rows_of(table: pa.Table) -> list[Row]:
    """Rows with their ROW__ID as sorted tuples."""
    out = []
    for record in table.to_pylist():
        row_id = record.pop(ROW_ID_COLUMN)
        out.append((row_id["writeid"], row_id["bucketid"], row_id["rowid"], *record.values()))
    return sorted(out, key=repr)


def read_rows(history: History, txns: ValidTxnList | None = None) -> list[Row]:
    return rows_of(history.warehouse.read(history.table, txns, with_row_id=True))


def read_rows_at(history: History, write_ids, txns) -> list[Row]:
    """Rows read with an explicit write-ID list and transaction list (a reader holding an old
    write-ID snapshot while newer transactions, such as compactions, committed)."""
    ms = history.warehouse.metastore
    table = ms.get_table(history.table)
    io, _ = file_io_for(table.location)
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    locations = [(p.values[0], p.location) for p in ms.list_partitions(table.full_name)] or [
        (None, table.location)
    ]
    out: list[Row] = []
    for value, location in locations:
        _, path = file_io_for(location)
        for row in rows_of(scan_table(io, path, write_ids, txns, with_row_id=True, schema=schema)):
            out.append(row if value is None else (*row, value))
    return sorted(out, key=repr)


def create_table(wh: Warehouse, name: str, *, partitioned: bool, buckets: int, properties=None) -> None:
    wh.metastore.create_table(
        TableDefinition(
            name,
            columns=(Column("id", "int"), Column("v", "string")),
            partition_keys=(Column("p", "string"),) if partitioned else (),
            bucket_columns=("id",) if buckets > 1 else (),
            num_buckets=buckets if buckets > 1 else -1,
            properties={"transactional": "true", **(properties or {})},
        )
    )


def _data(ids: list[int], tag: str, partitioned: bool, rng: random.Random) -> pa.Table:
    columns = {"id": pa.array(ids, pa.int32()), "v": pa.array([f"{tag}-{i}" for i in ids])}
    if partitioned:
        columns["p"] = pa.array([rng.choice(["a", "b"]) for _ in ids])
    return pa.table(columns)


def random_history(
    wh: Warehouse,
    seed: int,
    *,
    table: str = "default.t",
    partitioned: bool = True,
    buckets: int = 3,
    txns: int = 14,
    leave_open: bool = False,
    properties=None,
) -> History:
    """Write a random history; returns it with a snapshot after every transaction."""
    rng = random.Random(seed)
    create_table(wh, table, partitioned=partitioned, buckets=buckets, properties=properties)
    history = History(wh, table, partitioned)
    next_id = 1
    for index in range(txns):
        outcome = rng.choice(["commit", "commit", "commit", "abort"])
        if leave_open and index == txns // 2:
            outcome = "open"
        live = wh.read(table, with_row_id=True)
        txn = wh.transaction(heartbeat_seconds=None).begin()
        kind = rng.choice(["insert", "insert", "delete", "update"]) if live.num_rows else "insert"
        changes: dict[int, tuple | None] = {}
        if kind == "insert":
            count = rng.randint(1, 12)
            data = _data(list(range(next_id, next_id + count)), f"i{index}", partitioned, rng)
            txn.insert(table, data)
            for record in data.to_pylist():
                key = record.pop("id")
                changes[key] = tuple(record.values())
            next_id += count
        else:
            picked = sorted(rng.sample(range(live.num_rows), rng.randint(1, min(4, live.num_rows))))
            chosen = live.take(pa.array(picked, pa.int64()))
            if kind == "delete":
                keep = [ROW_ID_COLUMN, "p"] if partitioned else [ROW_ID_COLUMN]
                txn.delete(table, chosen.select(keep))
                changes.update(dict.fromkeys(chosen.column("id").to_pylist()))
            else:
                values = pa.array([f"u{index}-{i}" for i in chosen.column("id").to_pylist()])
                chosen = chosen.set_column(chosen.schema.get_field_index("v"), "v", values)
                txn.update(table, chosen)
                for record in chosen.drop_columns([ROW_ID_COLUMN]).to_pylist():
                    key = record.pop("id")
                    changes[key] = tuple(record.values())
        if outcome == "commit":
            txn.commit()
            for key, value in changes.items():
                if value is None:
                    history.model.pop(key, None)
                else:
                    history.model[key] = value
        elif outcome == "abort":
            txn.abort()
        else:
            history.open_txns.append(txn)
        history.snapshots.append(wh.metastore.get_valid_txns())
    return history
