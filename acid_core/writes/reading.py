"""Reading a table for a transaction: every selected partition at a snapshot, plain or ACID.

::

    read_table(wh, table, write_ids, txns, with_row_id, with_partition_columns, partitions)
        ACID (full or insert-only): merge-on-read of each partition directory (``orc.reader``)
        plain: the ORC files of each directory; partition columns appended from the partition values

``PartitionPrefix`` selects partitions by a leading prefix of the partition keys.
Not here: the snapshot (the caller's transaction), writing. Errors: the reader's and the metastore's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as paorc

from acid_core.directory import load_directory_state
from acid_core.errors import (
    InvalidPartitionError,
)
from acid_core.metastore import (
    Partition,
    Table,
    TableType,
)
from acid_core.orc.reader import scan_table
from acid_core.orc.schema import ROW_ID_COLUMN, ROW_ID_TYPE, row_schema
from acid_core.paths import is_hidden_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from acid_core.fs import FileIO
    from acid_core.writeids import ValidTxnList, ValidWriteIdList
    from acid_core.writes.transaction import Warehouse

from acid_core.writes.rows import is_null_partition_value, partition_arrow_type

__all__ = ["PartitionPrefix", "in_row_id_order", "read_table"]

PartitionPrefix = tuple[tuple[str, str], ...]
"""Values of a leading prefix of a table's partition keys: ``(("p", "1"),)`` selects ``p=1/..``."""


def _data_schema(table: Table) -> pa.Schema:
    return row_schema((c.name, c.type) for c in table.columns)


def _output_schema(table: Table, with_row_id: bool, with_partition_columns: bool) -> pa.Schema:
    fields: list[pa.Field[Any]] = [pa.field(ROW_ID_COLUMN, ROW_ID_TYPE)] if with_row_id else []
    fields.extend(_data_schema(table))
    if with_partition_columns:
        fields.extend(pa.field(k.name, partition_arrow_type(k.type)) for k in table.partition_keys)
    return pa.schema(fields)


def _is_selected(table: Table, values: Sequence[str], partitions: Sequence[PartitionPrefix]) -> bool:
    """Whether a partition's ``values`` (in key order) start with one of the ``partitions`` prefixes."""
    keys = [k.name.lower() for k in table.partition_keys]
    for prefix in partitions:
        pinned = {k.lower(): v for k, v in prefix}
        if set(pinned) - set(keys) or keys[: len(pinned)] != [k for k in keys if k in pinned]:
            raise InvalidPartitionError(
                table.full_name, dict(prefix), f"a leading prefix of the partition keys {keys}"
            )
        if all(values[keys.index(k)] == v for k, v in pinned.items()):
            return True
    return False


def _table_locations(
    wh: Warehouse, table: Table, partitions: Sequence[PartitionPrefix] | None = None
) -> list[tuple[Partition | None, str]]:
    if not table.partition_keys:
        return [(None, table.location)]
    listed = wh.metastore.list_partitions(table.full_name)
    if partitions is None:
        return [(p, p.location) for p in listed]
    return [(p, p.location) for p in listed if _is_selected(table, p.values, partitions)]


def _plain_files(file_io: FileIO, directory: str) -> list[str]:
    files = []
    for info in file_io.list_tree(directory):
        relative = info.path[len(directory.rstrip("/")) + 1 :]
        if info.is_dir or any(is_hidden_name(part) for part in relative.split("/")) or info.size == 0:
            continue
        files.append(info.path)
    return sorted(files)


def _read_plain_files(file_io: FileIO, paths: Sequence[str], schema: pa.Schema) -> pa.Table:
    tables = []
    for path in paths:
        with file_io.open_input(path) as handle:
            data = paorc.ORCFile(handle).read()
        # Files map onto the table's columns by position, as Hive reads ORC with positional schema.
        columns = [
            data.column(i) if i < data.num_columns else pa.nulls(data.num_rows) for i in range(len(schema))
        ]
        tables.append(
            pa.Table.from_arrays(
                [c.cast(f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
            )
        )
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _read_location(
    wh: Warehouse,
    table: Table,
    location: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList,
    with_row_id: bool,
) -> pa.Table:
    file_io, path = wh.table_dir(location)
    data_schema = _data_schema(table)
    if file_io.info(path) is None:
        return _output_schema(table, with_row_id, False).empty_table()
    if table.table_type is TableType.ACID:
        return scan_table(file_io, path, write_ids, txns, with_row_id=with_row_id, schema=data_schema)
    if table.table_type is TableType.INSERT_ONLY:
        state = load_directory_state(file_io, path, write_ids, txns)
        dirs = ([state.base] if state.base else []) + list(state.deltas)
        paths = [p for d in dirs for p in _plain_files(file_io, file_io.join(path, d))]
        paths += [file_io.join(path, *f.split("/")) for f in state.original_files]
        rows = _read_plain_files(file_io, paths, data_schema)
    else:
        rows = _read_plain_files(file_io, _plain_files(file_io, path), data_schema)
    if with_row_id:
        rows = rows.add_column(0, pa.field(ROW_ID_COLUMN, ROW_ID_TYPE), pa.nulls(rows.num_rows, ROW_ID_TYPE))
    return rows


def read_table(
    wh: Warehouse,
    table: Table,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList,
    with_row_id: bool,
    with_partition_columns: bool,
    partitions: Sequence[PartitionPrefix] | None = None,
) -> pa.Table:
    """The rows of ``table`` at the snapshot, from the selected partitions (merge-on-read for ACID)."""
    schema = _output_schema(table, with_row_id, with_partition_columns)
    parts = []
    for partition, location in _table_locations(wh, table, partitions):
        rows = _read_location(wh, table, location, write_ids, txns, with_row_id)
        if with_partition_columns and partition is not None:
            for key, value in zip(table.partition_keys, partition.values, strict=True):
                shown = None if is_null_partition_value(value) else value
                constant = pa.array([shown] * rows.num_rows, pa.string()).cast(partition_arrow_type(key.type))
                rows = rows.append_column(key.name, constant)
        parts.append(rows.cast(schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def in_row_id_order(rows: pa.Table) -> pa.Table:
    """``rows`` sorted by ``row__id`` (writeid, bucketid, rowid), Hive's reading order."""
    # Hive's UPDATE plan sorts by ROW__ID before the writer, so new rows follow their old IDs.
    row_ids = rows.column(ROW_ID_COLUMN)
    keys = pa.table({name: pc.struct_field(row_ids, [i]) for i, name in enumerate(("w", "b", "r"))})
    order = pc.sort_indices(keys, sort_keys=[("w", "ascending"), ("b", "ascending"), ("r", "ascending")])
    return rows.take(order)
