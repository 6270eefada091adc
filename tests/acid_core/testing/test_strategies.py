"""acid_core.testing.strategies: every drawn value is one Hive could produce."""

from __future__ import annotations

from hypothesis import given

from acid_core.paths import parse_acid_dir
from acid_core.testing import strategies as acid_st
from acid_core.writeids import parse_valid_write_id_list


@given(acid_st.valid_write_id_lists())
def test_write_id_lists_are_well_formed(write_ids):
    assert not set(write_ids.open_ids) & set(write_ids.aborted_ids)
    assert all(1 <= i <= write_ids.high_watermark for i in write_ids.exceptions)
    assert write_ids.min_open_id == min(write_ids.open_ids, default=None)
    assert parse_valid_write_id_list(write_ids.to_string()) == write_ids


@given(acid_st.partition_listings())
def test_partition_listings_have_unique_parseable_names(listing_and_snapshot):
    listing, _ = listing_and_snapshot
    paths = [entry.path for entry in listing]
    assert len(paths) == len(set(paths))
    for entry in listing:
        if entry.is_dir and entry.path.startswith(("base_", "delta_", "delete_delta_")):
            parse_acid_dir(entry.path)


@given(acid_st.partition_cases())
def test_partition_cases_mark_only_bases_as_compacted(case):
    names = {entry.path for entry in case.listing}
    assert set(case.metadata_files) <= names
    assert all(name.startswith("base_") and "_v" not in name for name in case.metadata_files)
    assert all(text == acid_st.COMPACTED_METADATA for text in case.metadata_files.values())
