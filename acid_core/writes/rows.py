"""Where each written row goes: its partition and its bucket (Hive's hash), pure Arrow and NumPy.

::

    partition_values_of(table, rows)   one tuple of partition values per row (None: Hive's default
                                       partition, __HIVE_DEFAULT_PARTITION__)
    assign_buckets(table, rows)        one bucket number per row: Hive's ObjectInspectorUtils hash of
                                       the CLUSTERED BY columns (bucketing_version 1 or 2), 0 if unbucketed
    group_indices(keys)                the row positions of each distinct key, in first-seen order

Not here: writing files (``transaction``), the hash itself for one value (``bucketing``).
Errors: ``SqlTypeError``-family errors of ``bucketing`` for a column type Hive cannot bucket by.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acid_core.orc.schema import RowType, hive_to_arrow, parse_hive_type
from acid_core.writes.bucketing import bucket_hash_code, bucket_number, bucketing_version_of

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from acid_core.metastore import (
        Table,
    )


__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "assign_buckets",
    "group_indices",
    "partition_arrow_type",
    "is_null_partition_value",
    "partition_values_of",
    "row_type_of",
]

_K = TypeVar("_K", bound="Hashable")

HIVE_DEFAULT_PARTITION: Final = "__HIVE_DEFAULT_PARTITION__"


def is_null_partition_value(value: str | None) -> bool:
    """Whether a partition value read from the metastore is null.

    The metastore keeps a null key as ``""`` (``format_partition_name``: null or empty is the default
    partition); Hive has no empty partition value, and names the directory
    ``__HIVE_DEFAULT_PARTITION__``. All three read as null.

    >>> [is_null_partition_value(v) for v in (None, "", HIVE_DEFAULT_PARTITION, "a")]
    [True, True, True, False]
    """
    return value is None or value in ("", HIVE_DEFAULT_PARTITION)


def row_type_of(table: Table) -> RowType:
    """The table's data columns as an ACID ``RowType``."""
    return RowType.of([(c.name, c.type) for c in table.columns])


def partition_arrow_type(hive_type: str) -> pa.DataType:
    """The Arrow type of a partition (or data) column of Hive type ``hive_type``."""
    return hive_to_arrow(parse_hive_type(hive_type))


def _partition_text(value: object) -> str | None:
    # Hive formats dynamic partition values with the value's toString.
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return str(value.isoformat()).replace("T", " ")
    return str(value)


def partition_values_of(table: Table, rows: pa.Table) -> list[tuple[str | None, ...]]:
    """Each row's partition values as Hive's path strings (None for null), in key order."""
    columns = [rows.column(key.name).to_pylist() for key in table.partition_keys]
    return [tuple(_partition_text(v) for v in values) for values in zip(*columns, strict=True)]


_U32: Final = np.uint64(0xFFFFFFFF)
_INT_WIDTHS: Final = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8}


def _rotl(values: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint64]:
    return ((values << np.uint64(bits)) | (values >> np.uint64(32 - bits))) & _U32


def _mix(k: npt.NDArray[np.uint64], h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    k = _rotl((k * np.uint64(0xCC9E2D51)) & _U32, 15)
    h = h ^ ((k * np.uint64(0x1B873593)) & _U32)
    return (_rotl(h, 13) * np.uint64(5) + np.uint64(0xE6546B64)) & _U32


def _murmur_ints(values: npt.NDArray[np.int64], width: int) -> npt.NDArray[np.uint64]:
    """Murmur3.hash32 of each value's big-endian bytes (width 2, 4 or 8), vectorized; as uint32."""
    unsigned = values.astype(np.uint64)
    h = np.full(values.shape, 104729, dtype=np.uint64)
    if width == 8:
        # Two blocks; a block is read little-endian, so each big-endian half is byte-swapped.
        high = ((unsigned >> np.uint64(32)) & _U32).astype(np.uint32).byteswap().astype(np.uint64)
        low = (unsigned & _U32).astype(np.uint32).byteswap().astype(np.uint64)
        h = _mix(high, h)
        h = _mix(low, h)
    elif width == 4:
        h = _mix((unsigned & _U32).astype(np.uint32).byteswap().astype(np.uint64), h)
    else:  # 2 bytes: Java's tail, with each byte sign-extended before it is shifted
        first = ((values >> 8) & 0xFF).astype(np.int64)
        second = (values & 0xFF).astype(np.int64)
        first = np.where(first > 127, first - 256, first)
        second = np.where(second > 127, second - 256, second)
        k1 = ((second << 8) ^ first).astype(np.uint64) & _U32
        k1 = (_rotl((k1 * np.uint64(0xCC9E2D51)) & _U32, 15) * np.uint64(0x1B873593)) & _U32
        h = h ^ k1
    h = h ^ np.uint64(width)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & _U32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & _U32
    h ^= h >> np.uint64(16)
    return h


def _field_hashes(
    column: pa.ChunkedArray[Any], hive_type: str, version: int
) -> npt.NDArray[np.uint64] | None:
    """Per-row field hashes (uint32 values) for integer columns, vectorized; None for other types."""
    base = hive_type.strip().lower()
    if base not in _INT_WIDTHS:
        return None
    filled = cast("pa.ChunkedArray[Any]", pc.fill_null(column, pa.scalar(0, column.type)))
    values: npt.NDArray[np.int64] = filled.to_numpy().astype(np.int64)
    if version == 1:
        if base == "bigint":
            unsigned = values.astype(np.uint64)
            hashes = (unsigned ^ (unsigned >> np.uint64(32))) & _U32
        else:
            hashes = values.astype(np.uint64) & _U32
    elif base == "tinyint":
        hashes = values.astype(np.uint64) & _U32
    else:
        hashes = _murmur_ints(values, _INT_WIDTHS[base])
    if column.null_count:
        nulls = cast("pa.ChunkedArray[Any]", pc.is_null(column)).to_numpy()
        hashes = np.where(nulls, np.uint64(0), hashes).astype(np.uint64)
    return cast("npt.NDArray[np.uint64]", hashes)


def assign_buckets(table: Table, rows: pa.Table) -> list[int]:
    """The bucket ID of each row: Hive's bucketing hash, or 0 when the table is not bucketed.

    Integer bucketing columns are hashed vectorized (numpy); other types row by row with
    ``bucketing.bucket_hash_code``. Both give Hive's values.
    """
    if table.num_buckets <= 0 or not table.bucket_columns:
        return [0] * rows.num_rows
    version = bucketing_version_of(dict(table.properties))
    types_by_name = {c.name: c.type for c in (*table.columns, *table.partition_keys)}
    hive_types = [types_by_name[name] for name in table.bucket_columns]
    fields = [
        _field_hashes(rows.column(n), t, version)
        for n, t in zip(table.bucket_columns, hive_types, strict=True)
    ]
    if all(f is not None for f in fields):
        h = np.zeros(rows.num_rows, dtype=np.uint64)
        for field_hash in fields:
            assert field_hash is not None  # noqa: S101 - checked above
            h = (h * np.uint64(31) + field_hash) & _U32
        buckets = (h & np.uint64(0x7FFFFFFF)) % np.uint64(table.num_buckets)
        return [int(b) for b in buckets.tolist()]
    columns = [rows.column(name).to_pylist() for name in table.bucket_columns]
    return [
        bucket_number(bucket_hash_code(values, hive_types, version), table.num_buckets)
        for values in zip(*columns, strict=True)
    ]


def group_indices(keys: Sequence[_K]) -> dict[_K, list[int]]:
    """The positions of each distinct key, keys in first-seen order."""
    groups: dict[_K, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    return groups
