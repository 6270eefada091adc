"""assign_buckets: the vectorized integer path gives the same buckets as the row-by-row hash."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from acid_core.metastore import Column, Table, TableType
from acid_core.writes import assign_buckets
from acid_core.writes.bucketing import bucket_hash_code, bucket_number

_TYPES = {
    "tinyint": (pa.int8(), 8),
    "smallint": (pa.int16(), 16),
    "int": (pa.int32(), 32),
    "bigint": (pa.int64(), 64),
}


def _table(types, buckets, version):
    columns = tuple(Column(f"c{i}", t) for i, t in enumerate(types))
    return Table(
        "default",
        "t",
        "/nowhere",
        columns,
        (),
        tuple(c.name for c in columns),
        buckets,
        {"transactional": "true", "bucketing_version": str(version)},
        TableType.ACID,
        False,
        None,
        0.0,
    )


@st.composite
def _rows(draw):
    types = draw(st.lists(st.sampled_from(sorted(_TYPES)), min_size=1, max_size=3))
    count = draw(st.integers(0, 30))
    arrays = {}
    for i, kind in enumerate(types):
        arrow_type, bits = _TYPES[kind]
        values = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        arrays[f"c{i}"] = pa.array(
            draw(st.lists(st.none() | values, min_size=count, max_size=count)), arrow_type
        )
    return types, pa.table(arrays) if arrays else None


@given(_rows(), st.sampled_from([1, 2]), st.integers(1, 64))
def test_vectorized_integer_buckets_equal_the_scalar_hash(data, version, buckets):
    types, rows = data
    table = _table(types, buckets, version)
    expected = [
        bucket_number(bucket_hash_code(list(values), types, version), buckets)
        for values in zip(*(rows.column(c).to_pylist() for c in rows.column_names), strict=True)
    ]
    assert assign_buckets(table, rows) == expected


def test_string_columns_use_the_row_by_row_hash():
    table = _table(["int", "string"], 8, 2)
    rows = pa.table({"c0": pa.array([1, None], pa.int32()), "c1": ["Tom", "é"]})
    assert assign_buckets(table, rows) == [
        bucket_number(bucket_hash_code([1, "Tom"], ["int", "string"]), 8),
        bucket_number(bucket_hash_code([None, "é"], ["int", "string"]), 8),
    ]
