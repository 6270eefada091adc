"""The rebalance rules (Hive 4's ``CompactionQueryBuilderForRebalance``): even spread, row IDs, ORDER BY."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.compaction.initiator import CompactionType, InitiatorConfig, PartitionFacts, decide_compaction
from acid_core.compaction.rebalance import (
    MAX_REBALANCE_BUCKETS,
    OrderKey,
    bucket_of_position,
    bucket_property,
    bucket_slice,
    check_bucket_count,
    format_order_by,
    parse_order_by,
    rows_per_bucket,
)
from acid_core.errors import InvalidCompactionConfigError, InvalidRebalanceError


@pytest.mark.parametrize(
    ("rows", "buckets", "sizes"),
    [
        (
            18,
            4,
            [5, 5, 5, 3],
        ),  # TestCrudCompactorOnTez#testRebalanceCompactionOfNotPartitionedImplicitlyBucketedTable
        (18, 3, [6, 6, 6]),  # ...OfPartitionedImplicitlyBucketedTable
        (5, 4, [2, 2, 1, 0]),  # ceil(5/4) = 2: the last bucket gets nothing, as rowId DIV 2 never reaches 3
        (0, 2, [0, 0]),
        (1, 1, [1]),
    ],
    ids=["hive-18-into-4", "hive-18-into-3", "short-last-empty", "empty", "one"],
)
def test_bucket_slice_hive_examples_sizes(rows, buckets, sizes):
    assert [stop - start for start, stop in (bucket_slice(k, rows, buckets) for k in range(buckets))] == sizes


def test_bucket_property_is_v1_statement_zero_as_hive_tests_print():
    # The "bucketid" values of Hive's expected rows: 536870912, 536936448, 537001984, 537067520.
    assert [bucket_property(k) for k in range(4)] == [536870912, 536936448, 537001984, 537067520]


@given(rows=st.integers(0, 10_000), buckets=st.integers(1, 64))
def test_bucket_slice_even_spread_property(rows, buckets):
    """Slices are contiguous, cover every row once, none above ceil(R/n), only the last non-empty short."""
    slices = [bucket_slice(k, rows, buckets) for k in range(buckets)]
    size = rows_per_bucket(rows, buckets)
    position = 0
    sizes = []
    for start, stop in slices:
        assert start == position or (start == stop == rows)
        position = max(position, stop)
        sizes.append(stop - start)
    assert sum(sizes) == rows
    assert all(s <= size for s in sizes)
    non_empty = [s for s in sizes if s]
    assert all(s == size for s in non_empty[:-1])


@given(rows=st.integers(1, 5_000), buckets=st.integers(1, 64), data=st.data())
def test_bucket_of_position_agrees_with_slice_property(rows, buckets, data):
    position = data.draw(st.integers(0, rows - 1))
    bucket = bucket_of_position(position, rows, buckets)
    start, stop = bucket_slice(bucket, rows, buckets)
    assert start <= position < stop


@pytest.mark.parametrize("value", [0, -1, MAX_REBALANCE_BUCKETS + 1], ids=["zero", "negative", "above-v1"])
def test_check_bucket_count_out_of_range_raises(value):
    with pytest.raises(
        InvalidRebalanceError, match=rf"number of buckets {value}; expected an integer from 1"
    ):
        check_bucket_count(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ORDER BY b DESC", (OrderKey("b", True, False),)),
        ("order by `A`", (OrderKey("a", False, True),)),
        ("b asc nulls last, a desc nulls first", (OrderKey("b", False, False), OrderKey("a", True, True))),
        (None, ()),
        ("  ", ()),
    ],
    ids=["desc", "quoted-case", "nulls", "none", "blank"],
)
def test_parse_order_by_table(text, expected):
    assert parse_order_by(text, ["a", "b"]) == expected


@given(
    keys=st.lists(
        st.builds(OrderKey, st.sampled_from(["a", "b", "c"]), st.booleans(), st.booleans()), max_size=3
    )
)
def test_format_order_by_round_trip_property(keys):
    assert parse_order_by(format_order_by(keys), ["a", "b", "c"]) == tuple(keys)


def test_parse_order_by_unknown_column_names_it():
    with pytest.raises(InvalidRebalanceError) as raised:
        parse_order_by("ORDER BY x", ["a", "b"])
    assert str(raised.value) == (
        "Invalid rebalance compaction ORDER BY column 'x'; expected one of the table's columns ['a', 'b']; "
        "hint: ALTER TABLE t COMPACT 'rebalance' [ORDER BY c [ASC|DESC], ..] [CLUSTERED INTO n BUCKETS]"
    )


def test_parse_order_by_expression_refused():
    with pytest.raises(InvalidRebalanceError, match=r"ORDER BY key 'a \+ 1'"):
        parse_order_by("ORDER BY a + 1", ["a"])


# --- the initiator's rule 7 (acidflow.compactor.rebalance.buckets, off by default) ------------------

_NO_BASE = PartitionFacts("db.t", None, base_bytes=0, delta_bytes=500, delta_count=12)
_OVERRIDE = "compactorthreshold.acidflow.compactor.rebalance.buckets"


@pytest.mark.parametrize(
    ("facts", "properties", "expected"),
    [
        (_NO_BASE, {}, (CompactionType.MAJOR, 0)),
        (_NO_BASE, {_OVERRIDE: "4"}, (CompactionType.REBALANCE, 4)),
        (_NO_BASE, {_OVERRIDE: "0"}, (CompactionType.MAJOR, 0)),
        (replace(_NO_BASE, bucketed=True), {_OVERRIDE: "4"}, (CompactionType.MAJOR, 0)),
        (replace(_NO_BASE, insert_only=True), {_OVERRIDE: "4"}, (CompactionType.MAJOR, 0)),
        (replace(_NO_BASE, base_bytes=10_000, delta_count=12), {_OVERRIDE: "4"}, (CompactionType.MINOR, 0)),
    ],
    ids=[
        "off-by-default",
        "major-becomes-rebalance",
        "zero-is-off",
        "bucketed",
        "insert-only",
        "minor-stays",
    ],
)
def test_decide_compaction_rebalance_setting(facts, properties, expected):
    decision = decide_compaction(facts, InitiatorConfig(), table_properties=properties)
    assert (decision.compaction_type, decision.number_of_buckets) == expected


def test_decide_compaction_rebalance_setting_config_default_and_message():
    decision = decide_compaction(_NO_BASE, InitiatorConfig(rebalance_buckets=2))
    assert decision.compaction_type is CompactionType.REBALANCE
    assert decision.message.endswith("; rebalanced into 2 buckets (acidflow.compactor.rebalance.buckets)")


def test_decide_compaction_rebalance_setting_above_v1_raises():
    with pytest.raises(InvalidCompactionConfigError, match=r"rebalance.buckets='5000'; expected 0 \(off\)"):
        decide_compaction(_NO_BASE, InitiatorConfig(), table_properties={_OVERRIDE: "5000"})
