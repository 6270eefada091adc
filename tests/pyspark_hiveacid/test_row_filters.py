"""Row filters pushed on data columns: pyarrow expressions with exactly Spark's three-valued logic.

Pure: pyspark's Filter values are built directly, no Spark session. The model is SQL evaluated row
by row in Python (``_evaluate``, the partition pruning's evaluator); a row passes a WHERE clause
only where the predicate is true, so ``NOT`` of an unknown drops the row too.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from pyspark_hiveacid.source import _evaluate, _row_filter

TYPES = {
    "i": ("i", pa.int32()),
    "s": ("S", pa.string()),
    "d": ("d", pa.date32()),
    "f": ("f", pa.float64()),
}

_ints = st.one_of(st.none(), st.integers(-3, 3))
_COMPARE = [EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual]


def _filters(depth: int = 2) -> st.SearchStrategy:
    leaf = st.one_of(
        st.builds(lambda c, v: c(("i",), v), st.sampled_from(_COMPARE), st.integers(-3, 3)),
        st.builds(lambda v: EqualNullSafe(("i",), v), _ints),
        st.builds(lambda vs: In(("i",), tuple(vs)), st.lists(st.integers(-3, 3), min_size=1, max_size=4)),
        st.just(IsNull(("i",))),
        st.just(IsNotNull(("i",))),
    )
    return st.recursive(leaf, lambda inner: st.builds(Not, inner), max_leaves=depth)


@given(values=st.lists(_ints, max_size=12), f=_filters())
def test_row_filter_integer_predicates_equal_sql_three_valued_logic(values, f):
    expression = _row_filter(f, TYPES)
    assert expression is not None
    table = pa.table({"i": pa.array(values, pa.int32())})
    kept = table.filter(expression).column("i").to_pylist()
    assert kept == [v for v in values if _evaluate(f, {"i": v}) is True]


@pytest.mark.parametrize(
    ("f", "expected"),
    [
        (StringStartsWith(("s",), "ab"), ["ab", "abc"]),
        (StringEndsWith(("s",), "c"), ["abc", "xc"]),
        (StringContains(("s",), "b"), ["ab", "abc"]),
        (Not(StringStartsWith(("s",), "ab")), ["xc"]),  # the null stays out under NOT
        (EqualTo(("s",), "xc"), ["xc"]),
        (Not(EqualNullSafe(("s",), "xc")), ["ab", "abc", None]),
    ],
    ids=["starts", "ends", "contains", "not-starts-null-dropped", "equal", "not-null-safe-keeps-null"],
)
def test_row_filter_string_predicates_keep_what_spark_keeps(f, expected):
    table = pa.table({"S": pa.array(["ab", "abc", None, "xc"], pa.string())})
    assert table.filter(_row_filter(f, TYPES)).column("S").to_pylist() == expected


def test_row_filter_dates_compare_as_dates():
    table = pa.table({"d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 3, 1), None], pa.date32())})
    f = GreaterThan(("d",), dt.date(2024, 2, 1))
    assert table.filter(_row_filter(f, TYPES)).column("d").to_pylist() == [dt.date(2024, 3, 1)]


@pytest.mark.parametrize(
    "f",
    [
        EqualTo(("f",), 1.0),  # floats: Spark orders NaN above everything, pyarrow does not
        EqualTo(("i",), "1"),  # a value of another type: Spark's cast rules, not ours
        EqualTo(("i",), True),
        GreaterThan(("d",), dt.datetime(2024, 1, 1, 12, 0)),  # a timestamp, not a date
        EqualTo(("p",), 1),  # not a data column
        In(("i",), tuple(range(65))),  # longer than an OR chain is worth
        StringStartsWith(("i",), "1"),
        Not(EqualTo(("f",), 1.0)),
    ],
    ids=[
        "float",
        "string-for-int",
        "bool-for-int",
        "timestamp-for-date",
        "unknown",
        "long-in",
        "match-int",
        "not-float",
    ],
)
def test_row_filter_without_an_exact_translation_stays_with_spark(f):
    assert _row_filter(f, TYPES) is None
