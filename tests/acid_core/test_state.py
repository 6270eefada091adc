"""AcidDirectoryState.from_listing: table-driven rules and properties.

The Hive TestAcidUtils port is in test_state_hive_cases.py; this file covers the rest of Hive 4's
AcidUtils.getAcidState (hidden names, originals, ignoreEmptyFiles, _metadata_acid, malformed
names) and the invariants every result must satisfy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given

from acid_core.errors import InvalidPathError, NotEnoughHistoryError
from acid_core.paths import (
    BaseDir,
    DeltaDir,
    is_acid_dir_name,
    parse_acid_dir,
    parse_base_dir,
    parse_delta_dir,
)
from acid_core.state import AcidDirectoryState, ListingEntry, is_compacted_metadata
from acid_core.testing import strategies as acid_st
from acid_core.testing.builders import make_listing, make_listing_from_files, make_write_id_list
from acid_core.writeids import LONG_MAX, ValidTxnList, ValidWriteIdList, parse_valid_txn_list

if TYPE_CHECKING:
    from collections.abc import Iterable

EVERYTHING = ValidWriteIdList()  # Hive's new ValidReaderWriteIdList(): every write ID valid
MAX = str(LONG_MAX)


def _state(
    *names: str, write_ids: ValidWriteIdList = EVERYTHING, txns: ValidTxnList | None = None, **kwargs: Any
) -> AcidDirectoryState:
    return AcidDirectoryState.from_listing(make_listing(*names), write_ids, txns, **kwargs)


# --------------------------------------------------------------------------------------------
# Hidden names, originals, entries inside ACID directories.
# --------------------------------------------------------------------------------------------


def test_hidden_names_are_ignored():
    # getAcidState lists with HIDDEN_FILES_PATH_FILTER: "_" and "." names are never looked at
    state = AcidDirectoryState.from_listing(
        [
            ListingEntry("_orc_acid_version", False, 1),
            ListingEntry("_metadata_acid", False, 40),
            ListingEntry(".hive-staging_hive_1", True),
            ListingEntry("_tmp.delta_1_1", True),
            ListingEntry("delta_0000001_0000001_0000", True),
        ],
        EVERYTHING,
    )
    assert state.ignored == (".hive-staging_hive_1", "_metadata_acid", "_orc_acid_version", "_tmp.delta_1_1")
    assert state.deltas == ("delta_0000001_0000001_0000",)


def test_entries_inside_acid_directories_are_not_children():
    state = AcidDirectoryState.from_listing(
        make_listing_from_files(
            "base_0000005/bucket_00000",
            "base_0000005/_orc_acid_version",
            "delta_0000006_0000006_0000/bucket_00000",
            "delta_0000006_0000006_0000/bucket_00000_flush_length",
        ),
        EVERYTHING,
    )
    assert state.base == "base_0000005"
    assert state.deltas == ("delta_0000006_0000006_0000",)
    assert state.obsolete == state.aborted == state.original_files == state.ignored == ()


def test_a_file_named_like_an_acid_directory_is_an_original_file():
    # getChildState: "if (!childWithId.getFileStatus().isDirectory())" comes first: any file is
    # an original file, whatever its name.
    state = AcidDirectoryState.from_listing(
        [ListingEntry("base_x", False, 3), ListingEntry("delta_oops", False, 3)], EVERYTHING
    )
    assert state.original_files == ("base_x", "delta_oops")


def test_originals_without_base_are_read_sorted_with_their_directories():
    state = AcidDirectoryState.from_listing(
        [
            *make_listing_from_files(
                "000001_0", "000000_0_copy_1", "000000_0", "sub/000002_0", "sub/deeper/000003_0"
            ),
            ListingEntry("empty_dir", True),
        ],
        EVERYTHING,
    )
    assert state.original_files == (
        "000000_0",
        "000000_0_copy_1",
        "000001_0",
        "sub/000002_0",
        "sub/deeper/000003_0",
    )
    assert state.original_directories == ("empty_dir", "sub")
    assert state.obsolete == ()


def test_originals_with_base_are_obsolete():
    # getAcidState: "If we have a base, the original files are obsolete" (files and directories)
    state = AcidDirectoryState.from_listing(
        make_listing_from_files("000000_0", "sub/000001_0", "base_0000003/bucket_00000"), EVERYTHING
    )
    assert state.base == "base_0000003"
    assert state.original_files == ()
    assert state.original_directories == ()
    assert set(state.obsolete) == {"000000_0", "sub"}


def test_ignore_empty_files_skips_zero_length_originals():
    # getChildState: "if (!ignoreEmptyFiles || childWithId.getFileStatus().getLen() != 0)"
    listing = make_listing_from_files(
        "000000_0", "000001_0", "sub/000002_0", sizes={"000001_0": 0, "sub/000002_0": 0}
    )
    kept = AcidDirectoryState.from_listing(listing, EVERYTHING)
    assert kept.original_files == ("000000_0", "000001_0", "sub/000002_0")
    skipped = AcidDirectoryState.from_listing(listing, EVERYTHING, ignore_empty_files=True)
    assert skipped.original_files == ("000000_0",)
    assert "000001_0" in skipped.ignored


# --------------------------------------------------------------------------------------------
# Deltas: reading order, twins, statements, the high watermark.
# --------------------------------------------------------------------------------------------

DELTA_CASES = [
    # id, names, write-id list, deltas read in order, obsolete
    (
        "hive_order_min_asc_max_desc_stmt_asc",
        ["delta_5_5_1", "delta_5_10", "delta_5_5_0", "delta_1_4", "delta_11_11"],
        EVERYTHING,
        ("delta_1_4", "delta_5_10", "delta_11_11"),
        {"delta_5_5_0", "delta_5_5_1"},
    ),
    (
        "multi_statement_transaction",
        ["delta_0000003_0000003_0002", "delta_0000003_0000003_0000", "delta_0000003_0000003_0001"],
        EVERYTHING,
        ("delta_0000003_0000003_0000", "delta_0000003_0000003_0001", "delta_0000003_0000003_0002"),
        set(),
    ),
    (
        "twins_insert_and_delete",
        ["delta_0000004_0000004_0000", "delete_delta_0000004_0000004_0000"],
        EVERYTHING,
        ("delete_delta_0000004_0000004_0000", "delta_0000004_0000004_0000"),
        set(),
    ),
    (
        "minor_compacted_without_statement_sorts_first",
        ["delta_0000003_0000003_0000", "delta_0000003_0000003"],
        EVERYTHING,
        ("delta_0000003_0000003",),
        {"delta_0000003_0000003_0000"},
    ),
    (
        "straddling_the_high_watermark_is_read",
        ["delta_8_12", "delta_13_13"],
        make_write_id_list(10),
        ("delta_8_12",),
        set(),
    ),
    (
        "partly_aborted_range_is_read",
        ["delta_1_3"],
        make_write_id_list(3, aborted_ids=(2,)),
        ("delta_1_3",),
        set(),
    ),
]


@pytest.mark.parametrize(
    ("names", "write_ids", "deltas", "obsolete"),
    [c[1:] for c in DELTA_CASES],
    ids=[c[0] for c in DELTA_CASES],
)
def test_deltas_read_in_hive_order(names, write_ids, deltas, obsolete):
    state = _state(*names, write_ids=write_ids)
    assert state.deltas == deltas
    assert set(state.obsolete) == obsolete


def test_delta_whose_new_write_ids_are_all_open_is_ignored_not_lost():
    """findBestWorkingDeltas skips a delta whose IDs past what is covered are all invalid.

    delta_1_3 covers 1..3; delta_2_5 adds only 4 and 5, both open: Hive neither reads it nor
    lists it as obsolete (the cleaner must keep it). Every top-level name must still land in one
    category, and the only one that fits is ``ignored``.
    """
    state = _state("delta_1_3", "delta_2_5", write_ids=make_write_id_list(10, open_ids=(4, 5)))
    assert state.deltas == ("delta_1_3",)
    assert "delta_2_5" not in state.obsolete
    assert state.ignored == ("delta_2_5",)


def test_delta_beyond_the_high_watermark_after_coverage_is_ignored():
    # Hive's testBaseDeltas: delta_90_120 after delta_050_105 with hwm 100 is neither read nor
    # obsolete.
    state = _state("base_49", "delta_050_105", "delta_90_120", write_ids=make_write_id_list(100))
    assert state.deltas == ("delta_050_105",)
    assert "delta_90_120" in state.ignored


# --------------------------------------------------------------------------------------------
# Bases and _metadata_acid.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"thisFileVersion":"0","dataFormat":"compacted"}',
        '{"thisFileVersion": "0", "dataFormat": "compacted"}',
        '{"dataFormat":"compacted","thisFileVersion":"0"}',
    ],
    ids=["compact", "spaced", "reordered"],
)
def test_is_compacted_metadata_accepts_hive_marker(text):
    assert is_compacted_metadata("base_0000005", text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "is not JSON"),
        ("", "is not JSON"),
        ('{"thisFileVersion":"1","dataFormat":"compacted"}', "unexpected metadata version in "),
        ('{"dataFormat":"compacted"}', "unexpected metadata version in "),
        ('["thisFileVersion"]', "unexpected metadata version in "),
        ('{"thisFileVersion":"0","dataFormat":"raw"}', "unexpected dataFormat in "),
    ],
    ids=["garbage", "empty", "version_1", "no_version", "a_list", "raw_format"],
)
def test_is_compacted_metadata_corrupt_raises_naming_the_file(text, problem):
    with pytest.raises(InvalidPathError) as info:
        is_compacted_metadata("base_0000005", text)
    message = str(info.value)
    assert message.startswith(f"Invalid ACID name 'base_0000005/_metadata_acid': {problem}")
    assert message.endswith('expected {"thisFileVersion": "0", "dataFormat": "compacted"}')


def test_corrupt_metadata_in_listing_raises():
    with pytest.raises(InvalidPathError, match=r"'base_0000005/_metadata_acid': is not JSON"):
        _state("base_0000005", metadata_files={"base_0000005": "{{"})


def test_newest_valid_base_wins_and_older_are_obsolete():
    state = _state("base_0000002", "base_0000009", "base_0000005")
    assert state.base == "base_0000009"
    assert set(state.obsolete) == {"base_0000002", "base_0000005"}
    assert state.base_dir == BaseDir(9)


@pytest.mark.parametrize(
    "name",
    ["base_x", "base_", "base_5_vq", "delta_1", "delta_7_3", "delete_delta_a_b", "delta_1_2_3_4"],
)
def test_malformed_acid_directory_raises(name):
    # Hive's ParsedBaseLight.parseBase / ParsedDeltaLight.parse throw NumberFormatException: an
    # ACID-looking directory that does not parse is an error, never skipped.
    with pytest.raises(InvalidPathError) as info:
        _state("delta_0000001_0000001_0000", name)
    assert repr(name) in str(info.value)


def test_visibility_suffix_needs_a_txn_list_entry():
    names = ("base_0000005_v0000020", "delta_0000001_0000005_v0000020")
    committed = _state(*names, txns=parse_valid_txn_list(f"30:{MAX}::"))
    assert committed.base == "base_0000005_v0000020"
    running = _state(*names, txns=parse_valid_txn_list("30:20:20:"))
    assert running.base is None
    assert set(running.ignored) == set(names)
    above = _state(*names, txns=parse_valid_txn_list(f"19:{MAX}::"))
    assert set(above.ignored) == set(names)


# --------------------------------------------------------------------------------------------
# Output shape.
# --------------------------------------------------------------------------------------------


def test_to_json_dict_shape():
    state = AcidDirectoryState.from_listing(
        make_listing_from_files(
            "base_0000002/bucket_00000",
            "delta_0000001_0000001_0000/bucket_00000",
            "delta_0000003_0000003_0000/bucket_00000",
            "delta_0000004_0000004_0000/bucket_00000",
        ),
        make_write_id_list(4, aborted_ids=(4,)),
    )
    assert state.to_json_dict() == {
        "base": "base_0000002",
        "deltas": ["delta_0000003_0000003_0000"],
        "obsolete": ["delta_0000001_0000001_0000"],
        "aborted": ["delta_0000004_0000004_0000"],
        "original_files": [],
    }
    assert state.delta_dirs == (DeltaDir(3, 3, 0),)


def test_empty_listing_is_empty_state():
    state = AcidDirectoryState.from_listing([], EVERYTHING)
    assert state.to_json_dict() == {
        "base": None,
        "deltas": [],
        "obsolete": [],
        "aborted": [],
        "original_files": [],
    }
    assert state.base_dir is None


# --------------------------------------------------------------------------------------------
# Properties.
# --------------------------------------------------------------------------------------------


def _top_level(names: Iterable[str]) -> list[str]:
    return [name for name in names if "/" not in name]


@given(acid_st.partition_listings())
def test_every_top_level_name_lands_in_exactly_one_place(listing_and_snapshot):
    listing, write_ids = listing_and_snapshot
    state = AcidDirectoryState.from_listing(listing, write_ids)
    placed = [
        *([] if state.base is None else [state.base]),
        *state.deltas,
        *state.obsolete,
        *state.aborted,
        *_top_level(state.original_files),
        *state.original_directories,
        *state.ignored,
    ]
    expected = sorted(entry.path for entry in listing if "/" not in entry.path)
    assert sorted(placed) == expected  # each exactly once: no name lost, none placed twice


@given(acid_st.partition_listings())
def test_aborted_write_ids_are_never_read(listing_and_snapshot):
    listing, write_ids = listing_and_snapshot
    state = AcidDirectoryState.from_listing(listing, write_ids)
    for name in state.deltas:
        delta = parse_delta_dir(name)
        ids = range(delta.min_write_id, delta.max_write_id + 1)
        assert any(write_ids.is_write_id_valid(i) for i in ids), name  # something visible in it
        assert not all(write_ids.is_write_id_aborted(i) for i in ids), name
    for name in state.aborted:
        assert name not in state.deltas
        assert name != state.base
    if state.base is not None:
        assert not write_ids.is_write_id_aborted(parse_base_dir(state.base).write_id)


@given(acid_st.partition_listings())
def test_every_visible_write_id_in_a_listed_delta_is_read(listing_and_snapshot):
    """No lost rows: a committed write ID found in any delta is covered by the base or a read delta."""
    listing, write_ids = listing_and_snapshot
    state = AcidDirectoryState.from_listing(listing, write_ids)
    base_id = None if state.base is None else parse_base_dir(state.base).write_id
    read = [parse_delta_dir(name) for name in state.deltas]
    for entry in listing:
        if not entry.is_dir or not entry.path.startswith(("delta_", "delete_delta_")):
            continue
        delta = parse_delta_dir(entry.path)
        for write_id in range(delta.min_write_id, delta.max_write_id + 1):
            if not write_ids.is_write_id_valid(write_id) or (base_id is not None and write_id <= base_id):
                continue
            readers = [r for r in read if r.min_write_id <= write_id <= r.max_write_id]
            assert readers, f"write ID {write_id} of {entry.path} is visible but not read: {state}"


@given(acid_st.partition_listings())
def test_deltas_are_in_hive_sort_order(listing_and_snapshot):
    listing, write_ids = listing_and_snapshot
    state = AcidDirectoryState.from_listing(listing, write_ids)

    def key(name):
        delta = parse_delta_dir(name)
        statement = -1 if delta.statement_id is None else delta.statement_id
        return (delta.min_write_id, -delta.max_write_id, statement, name)

    assert list(state.deltas) == sorted(state.deltas, key=key)


@given(acid_st.partition_listings())
def test_result_does_not_depend_on_listing_order(listing_and_snapshot):
    listing, write_ids = listing_and_snapshot
    forward = AcidDirectoryState.from_listing(listing, write_ids)
    backward = AcidDirectoryState.from_listing(list(reversed(listing)), write_ids)
    assert forward == backward


@given(acid_st.partition_cases())
def test_visibility_and_metadata_keep_the_partition(case):
    """With _vT suffixes and _metadata_acid markers: still one place per name, or not enough history."""
    try:
        state = AcidDirectoryState.from_listing(
            case.listing, case.write_ids, case.txns, metadata_files=case.metadata_files
        )
    except NotEnoughHistoryError:
        # only compactor output (a _v suffix or a _metadata_acid marker) erases history
        assert any(
            entry.path.startswith("base_") and ("_v" in entry.path or entry.path in case.metadata_files)
            for entry in case.listing
        )
        return
    placed = [
        *([] if state.base is None else [state.base]),
        *state.deltas,
        *state.obsolete,
        *state.aborted,
        *_top_level(state.original_files),
        *state.original_directories,
        *state.ignored,
    ]
    assert sorted(placed) == sorted(entry.path for entry in case.listing if "/" not in entry.path)
    for name in [*state.deltas, *([] if state.base is None else [state.base])]:
        visibility = parse_acid_dir(name).visibility_txn_id
        assert visibility == 0 or case.txns.is_txn_valid(visibility), name  # AcidUtils.isDirUsable
    for entry in case.listing:
        visibility = parse_acid_dir(entry.path).visibility_txn_id if is_acid_dir_name(entry.path) else 0
        if visibility and case.txns.is_txn_aborted(visibility):
            assert entry.path in state.aborted
