"""plan_compaction: table-driven cases (Hive's CompactorMR / query compactors) and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.compaction.initiator import CompactionType
from acid_core.compaction.planner import CompactionPlan, NothingToCompact, is_hive31_names, plan_compaction
from acid_core.errors import InvalidCompactionConfigError
from acid_core.state import AcidDirectoryState
from acid_core.testing.builders import make_listing, make_txn_list
from acid_core.writeids import ValidWriteIdList, to_compactor_write_id_list

TXN = 31


def compactor(hwm, open_ids=(), aborted=()):
    opened = tuple(open_ids)
    reader = ValidWriteIdList(hwm, opened, tuple(aborted), min(opened) if opened else None, "db.t")
    return to_compactor_write_id_list(reader)


def plan(names, kind, write_ids, hive31=False):
    state = AcidDirectoryState.from_listing(make_listing(*names), write_ids, make_txn_list(TXN))
    return plan_compaction(state, kind, write_ids, compaction_txn_id=TXN, hive31_names=hive31)


CASES = {
    # id: (listing, type, compactor (hwm, open, aborted), hive31, expected outputs or None, inputs)
    "minor_two_deltas": (
        ["delta_1_1_0000", "delta_2_2_0000", "delete_delta_2_2_0000"],
        "minor",
        (2, (), ()),
        False,
        ("delta_0000001_0000002_v0000031", "delete_delta_0000001_0000002_v0000031"),
        ("delta_1_1_0000", "delta_2_2_0000", "delete_delta_2_2_0000"),
    ),
    "minor_only_inserts_no_delete_output": (
        ["delta_1_1_0000", "delta_2_2_0000"],
        "minor",
        (2, (), ()),
        False,
        ("delta_0000001_0000002_v0000031",),
        ("delta_1_1_0000", "delta_2_2_0000"),
    ),
    "minor_stops_below_open_write_id": (
        ["delta_1_1_0000", "delta_2_2_0000", "delta_3_3_0000", "delta_4_4_0000"],
        "minor",
        (4, (3,), ()),
        False,
        ("delta_0000001_0000002_v0000031",),
        ("delta_1_1_0000", "delta_2_2_0000"),
    ),
    "minor_skips_aborted_directory": (
        ["delta_1_1_0000", "delta_2_2_0000", "delta_3_3_0000"],
        "minor",
        (3, (), (2,)),
        False,
        ("delta_0000001_0000003_v0000031",),
        ("delta_1_1_0000", "delta_3_3_0000"),
    ),
    "minor_ignores_base_and_originals": (
        ["base_5", "000000_0", "delta_6_6_0000", "delta_7_7_0000"],
        "minor",
        (7, (), ()),
        False,
        ("delta_0000006_0000007_v0000031",),
        ("delta_6_6_0000", "delta_7_7_0000"),
    ),
    "minor_hive31_names": (
        ["delta_1_1_0000", "delete_delta_2_2_0000"],
        "minor",
        (2, (), ()),
        True,
        ("delta_0000001_0000002", "delete_delta_0000001_0000002"),
        ("delta_1_1_0000", "delete_delta_2_2_0000"),
    ),
    "major_base_and_deltas": (
        ["base_3_v0000020", "delta_4_4_0000", "delete_delta_5_5_0000", "delta_5_5_0000"],
        "major",
        (5, (), ()),
        False,
        ("base_0000005_v0000031",),
        ("base_3_v0000020", "delta_4_4_0000", "delta_5_5_0000", "delete_delta_5_5_0000"),
    ),
    "major_folds_in_originals": (
        ["000000_0", "000001_0_copy_1", "delta_1_1_0000"],
        "major",
        (1, (), ()),
        False,
        ("base_0000001_v0000031",),
        ("delta_1_1_0000", "000000_0", "000001_0_copy_1"),
    ),
    "major_below_open_write_id": (
        ["delta_1_1_0000", "delta_2_2_0000", "delta_3_3_0000"],
        "major",
        (3, (2,), ()),
        False,
        ("base_0000001_v0000031",),
        ("delta_1_1_0000",),
    ),
    "major_stops_below_a_streaming_delta_across_the_watermark": (
        # delta_2_3: write 2 committed, 3 still open; hwm 2. base_2 would claim 2's rows it lacks.
        ["delta_1_1_0000", "delta_2_3"],
        "major",
        (3, (3,), ()),
        False,
        ("base_0000001_v0000031",),
        ("delta_1_1_0000",),
    ),
    "major_stops_below_a_straddling_delta_above_the_base": (
        ["base_1_v0000020", "delta_2_2_0000", "delta_3_4"],
        "major",
        (4, (4,), ()),
        False,
        ("base_0000002_v0000031",),
        ("base_1_v0000020", "delta_2_2_0000"),
    ),
    "major_hive31_names": (
        ["delta_1_1_0000"],
        "major",
        (1, (), ()),
        True,
        ("base_0000001",),
        ("delta_1_1_0000",),
    ),
    "minor_single_range_nothing": (
        ["delta_1_1_0000", "delete_delta_1_1_0000"],
        "minor",
        (1, (), ()),
        False,
        None,
        (),
    ),
    "major_only_base_nothing": (["base_5"], "major", (5, (), ()), False, None, ()),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_plan_compaction_cases(case):
    names, kind, (hwm, open_ids, aborted), hive31, outputs, inputs = case
    result = plan(names, kind, compactor(hwm, open_ids, aborted), hive31)
    if outputs is None:
        assert isinstance(result, NothingToCompact)
        return
    assert isinstance(result, CompactionPlan)
    assert result.output_names == outputs
    assert result.input_names == inputs
    assert result.visibility_txn_id == (0 if hive31 else TXN)
    assert result.metadata_marker is (hive31 and kind == "major")


def test_plan_compaction_nothing_reports_cleanable():
    result = plan(["base_5", "delta_1_1_0000", "delta_6_6_0000"], "major", compactor(6, (), (6,)))
    assert result == NothingToCompact(
        "major compaction not needed: only a base, no deltas or original files", cleanable=True
    )


def test_plan_compaction_unknown_type_raises():
    with pytest.raises(InvalidCompactionConfigError, match=r"compaction type='medium'"):
        plan(["delta_1_1_0000"], "medium", compactor(1))


def test_is_hive31_names_case_insensitive():
    assert is_hive31_names({"ACIDFLOW.compactor.HIVE31-names": " TRUE "})
    assert not is_hive31_names({"acidflow.compactor.hive31-names": "false"})


@st.composite
def delta_listings(draw):
    """Per write ID 1..n: a delta, sometimes a delete delta; some write IDs aborted, maybe one open."""
    n = draw(st.integers(2, 12))
    names, aborted = [], []
    for w in range(1, n + 1):
        names.append(f"delta_{w}_{w}_0000")
        if draw(st.booleans()):
            names.append(f"delete_delta_{w}_{w}_0000")
        if draw(st.integers(0, 4)) == 0:
            aborted.append(w)
    open_ids = (draw(st.integers(1, n)),) if draw(st.booleans()) else ()
    aborted = [w for w in aborted if w not in open_ids]
    return names, compactor(n, open_ids, aborted)


@settings(max_examples=200, deadline=None)
@given(delta_listings(), st.sampled_from([CompactionType.MINOR, CompactionType.MAJOR]))
def test_plan_compaction_properties(listing, kind):
    """Every live delta is an input exactly once, and re-planning after the output commits is empty."""
    names, write_ids = listing
    txns = make_txn_list(TXN)
    state = AcidDirectoryState.from_listing(make_listing(*names), write_ids, txns)
    result = plan_compaction(state, kind, write_ids, compaction_txn_id=TXN)
    if isinstance(result, NothingToCompact):
        return
    assert sorted(result.deltas + result.delete_deltas) == sorted(state.deltas)
    assert len(set(result.input_names)) == len(result.input_names)
    for name in result.deltas + result.delete_deltas:
        delta = int(name.split("_")[-2])
        assert delta <= write_ids.high_watermark
    after = AcidDirectoryState.from_listing(
        make_listing(*names, *result.output_names), write_ids, make_txn_list(TXN + 1)
    )
    assert set(result.deltas + result.delete_deltas) <= set(after.obsolete)
    again = plan_compaction(after, kind, write_ids, compaction_txn_id=TXN + 1)
    assert isinstance(again, NothingToCompact)
