"""Every value acidflow's event writer is given comes back from the file: all Hive types, nulls at
every level, sliced and re-batched input.

The expected values are the Python values hypothesis drew (never acidflow's reader, and not another
reader of the same file: all ORC readers agree on a wrongly written file, which is how pyarrow's
nested-struct loss, ``acid_core.orc.nested_nulls``, went unseen while engines were compared with
each other). The file is read with pyarrow's ORC reader.
"""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.orc as orc
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.fs import LocalFileIO
from acid_core.orc.schema import RowType
from acid_core.orc.writer import insert_events, write_event_file

ROW_TYPE = RowType.of(
    [
        ("ti", "tinyint"),
        ("i", "int"),
        ("bi", "bigint"),
        ("bo", "boolean"),
        ("d", "double"),
        ("s", "string"),
        ("vc", "varchar(5)"),
        ("c", "char(3)"),
        ("dec", "decimal(12,3)"),
        ("dt", "date"),
        ("ts", "timestamp"),
        ("bin", "binary"),
        ("arr", "array<int>"),
        ("arr_st", "array<struct<a:int,b:string>>"),
        ("m", "map<string,array<bigint>>"),
        ("st", "struct<x:string,inner:struct<y:int,z:array<string>>>"),
    ]
)


def _maybe(strategy):
    return st.one_of(st.none(), strategy)


_SMALL_STRUCT = st.fixed_dictionaries({"a": _maybe(st.integers(-5, 5)), "b": _maybe(st.text(max_size=3))})
_ROW = st.fixed_dictionaries(
    {
        "ti": _maybe(st.integers(-128, 127)),
        "i": _maybe(st.integers(-(2**31), 2**31 - 1)),
        "bi": _maybe(st.integers(-(2**63), 2**63 - 1)),
        "bo": _maybe(st.booleans()),
        "d": _maybe(st.floats(allow_nan=False)),
        "s": _maybe(st.text(max_size=8)),
        "vc": _maybe(st.text(max_size=5)),
        "c": _maybe(st.text(alphabet="abc", min_size=3, max_size=3)),
        "dec": _maybe(st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False)),
        "dt": _maybe(st.dates(min_value=datetime.date(1, 1, 1), max_value=datetime.date(9999, 12, 31))),
        "ts": _maybe(
            st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1))
        ),
        "bin": _maybe(st.binary(max_size=4)),
        "arr": _maybe(st.lists(_maybe(st.integers(-9, 9)), max_size=3)),
        "arr_st": _maybe(st.lists(_maybe(_SMALL_STRUCT), max_size=3)),
        "m": _maybe(
            st.lists(
                st.tuples(st.text(max_size=2), _maybe(st.lists(_maybe(st.integers(0, 9)), max_size=2))),
                max_size=2,
                unique_by=lambda kv: kv[0],
            )
        ),
        "st": _maybe(
            st.fixed_dictionaries(
                {
                    "x": _maybe(st.text(max_size=3)),
                    "inner": _maybe(
                        st.fixed_dictionaries(
                            {
                                "y": _maybe(st.integers(0, 9)),
                                "z": _maybe(st.lists(_maybe(st.text(max_size=2)), max_size=2)),
                            }
                        )
                    ),
                }
            )
        ),
    }
)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(_ROW, min_size=1, max_size=40),
    cut=st.integers(0, 39),
    batch_rows=st.integers(1, 17),
)
def test_every_value_written_reads_back_property(tmp_path_factory, rows, cut, batch_rows):
    cut = min(cut, len(rows) - 1)
    table = pa.Table.from_pylist(rows, schema=pa.schema(ROW_TYPE.to_arrow())).slice(cut)
    events = insert_events(table, write_id=2, bucket_id=0, row_type=ROW_TYPE)
    batches = [events.slice(i, batch_rows) for i in range(0, events.num_rows, batch_rows)]
    path = tmp_path_factory.mktemp("values") / "bucket_00000"
    write_event_file(LocalFileIO(), str(path), batches, ROW_TYPE)
    read = orc.ORCFile(str(path)).read().column("row").to_pylist()
    assert read == [_as_written(row) for row in rows[cut:]]


def _as_written(row: dict) -> dict:
    """The row as an ORC reader returns it: char(3) padded (all drawn at full length), decimals at
    their scale, timestamps without a zone."""
    expected = dict(row)
    if expected["dec"] is not None:
        expected["dec"] = expected["dec"].quantize(decimal.Decimal("0.001"))
    return expected
