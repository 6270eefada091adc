"""acid_core.testing.builders: defaults and the trees they write."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acid_core.fs import LocalFileIO
from acid_core.paths import BaseDir, DeleteDeltaDir, DeltaDir
from acid_core.state import ListingEntry
from acid_core.testing.builders import (
    make_base_dir,
    make_delete_delta_dir,
    make_delta_dir,
    make_listing,
    make_listing_from_files,
    make_txn_list,
    make_write_id_list,
    write_partition_tree,
)

if TYPE_CHECKING:
    from pathlib import Path


def test_name_builders_defaults():
    assert make_base_dir() == BaseDir(1)
    assert make_base_dir(5, 9).to_name() == "base_0000005_v0000009"
    assert make_delta_dir(3) == DeltaDir(3, 3, 0)
    assert make_delta_dir(3, 7, None).to_name() == "delta_0000003_0000007"
    assert make_delete_delta_dir(4) == DeleteDeltaDir(4, 4, 0)


def test_snapshot_builders_set_min_open_to_lowest_open():
    assert make_write_id_list(7, open_ids=(6, 5), aborted_ids=(3,)).to_string() == "default.t:7:5:5,6:3"
    assert make_write_id_list(7, table_name=None).to_string() == "null:7:9223372036854775807::"
    assert make_txn_list(9, open_ids=(8,), aborted_ids=(2,)).to_string() == "9:8:8:2"


def test_make_listing_marks_acid_names_and_trailing_slash_as_directories():
    assert make_listing(
        "base_5", "delta_1_1", "000000_0", "subdir/", "subdir/000001_0", sizes={"000000_0": 9}
    ) == [
        ListingEntry("base_5", True, 0),
        ListingEntry("delta_1_1", True, 0),
        ListingEntry("000000_0", False, 9),
        ListingEntry("subdir", True, 0),
        ListingEntry("subdir/000001_0", False, 1),
    ]


def test_make_listing_from_files_implies_directories():
    assert make_listing_from_files("delta_1_1/bucket_0", "a/b/c", "000000_0", sizes={"a/b/c": 0}) == [
        ListingEntry("delta_1_1", True, 0),
        ListingEntry("a", True, 0),
        ListingEntry("a/b", True, 0),
        ListingEntry("delta_1_1/bucket_0", False, 500),
        ListingEntry("a/b/c", False, 0),
        ListingEntry("000000_0", False, 500),
    ]


def test_write_partition_tree_writes_files_and_directories(tmp_path: Path):
    root = tmp_path / "t"
    write_partition_tree(
        LocalFileIO(),
        str(root),
        ["base_0000001", "delta_1_1/bucket_0", "empty/", "000000_0"],
        contents={"000000_0": b"abc"},
    )
    assert (root / "base_0000001").is_dir()
    assert (root / "delta_1_1" / "bucket_0").read_bytes() == b"x"
    assert (root / "empty").is_dir()
    assert (root / "000000_0").read_bytes() == b"abc"
