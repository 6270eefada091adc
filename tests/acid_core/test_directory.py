"""load_directory_state / list_partition over real directory trees (tmp_path) and the mock store."""

from __future__ import annotations

import pyarrow.fs as pa_fs
import pytest

from acid_core.directory import list_partition, load_directory_state
from acid_core.errors import InvalidPathError, NotEnoughHistoryError, StorageError
from acid_core.fs import LocalFileIO, PyArrowFileIO
from acid_core.testing.builders import make_txn_list, make_write_id_list, write_partition_tree
from acid_core.writeids import ValidWriteIdList

COMPACTED = b'{"thisFileVersion":"0","dataFormat":"compacted"}'
EVERYTHING = ValidWriteIdList()


@pytest.fixture(params=["local", "pyarrow-mock"])
def store(request, tmp_path):
    """(file_io, partition path): a real directory, or pyarrow's in-memory object-store stand-in."""
    if request.param == "local":
        return LocalFileIO(), str(tmp_path / "t" / "p=1")
    return PyArrowFileIO(pa_fs._MockFileSystem()), "warehouse/db/t/p=1"


PARTITION = [
    "base_0000002/bucket_00000",
    "base_0000002/_orc_acid_version",
    "base_0000004/bucket_00000",
    "base_0000004/_metadata_acid",
    "delta_0000001_0000004/bucket_00000",
    "delta_0000005_0000005_0000/bucket_00000",
    "delta_0000005_0000005_0000/bucket_00000_flush_length",
    "delete_delta_0000005_0000005_0000/bucket_00000",
    "delta_0000006_0000006_0000/bucket_00000",
    "delta_0000007_0000007_0000/bucket_00000",
    "_orc_acid_version",
    ".hive-staging_hive_2026/-ext-10000/000000_0",
    "_tmp_space.db",
]


def test_load_directory_state_of_a_partition(store):
    file_io, root = store
    write_partition_tree(file_io, root, PARTITION, contents={"base_0000004/_metadata_acid": COMPACTED})
    state = load_directory_state(file_io, root, make_write_id_list(7, open_ids=(7,), aborted_ids=(6,)))
    assert state.base == "base_0000004"
    assert state.deltas == ("delete_delta_0000005_0000005_0000", "delta_0000005_0000005_0000")
    assert set(state.obsolete) == {"base_0000002", "delta_0000001_0000004"}
    assert state.aborted == ("delta_0000006_0000006_0000",)
    assert state.ignored == (
        ".hive-staging_hive_2026",
        "_orc_acid_version",
        "_tmp_space.db",
        "delta_0000007_0000007_0000",
    )
    assert state.original_files == ()


def test_original_subdirectories_are_listed_recursively(store):
    file_io, root = store
    write_partition_tree(
        file_io,
        root,
        [
            "000000_0",
            "000001_0_copy_1",
            "HIVE_UNION_SUBDIR_1/000000_0",
            "HIVE_UNION_SUBDIR_1/nested/000002_0",
            # AcidUtils.acidHiddenFileFilter applies at every level of an original directory
            "HIVE_UNION_SUBDIR_1/_SUCCESS",
            "HIVE_UNION_SUBDIR_1/.staging/000009_0",
            "_SUCCESS",
        ],
        contents={"000000_0": b"", "HIVE_UNION_SUBDIR_1/000000_0": b"abc"},
    )
    entries, metadata = list_partition(file_io, root)
    rows = {tuple(entry)[:3] for entry in entries}
    assert ("HIVE_UNION_SUBDIR_1/000000_0", False, 3) in rows
    assert ("HIVE_UNION_SUBDIR_1/nested/000002_0", False, 1) in rows
    assert metadata == {}
    state = load_directory_state(file_io, root, EVERYTHING)
    assert state.base is None
    assert state.original_files == (
        "000000_0",
        "000001_0_copy_1",
        "HIVE_UNION_SUBDIR_1/000000_0",
        "HIVE_UNION_SUBDIR_1/nested/000002_0",
    )
    assert state.original_directories == ("HIVE_UNION_SUBDIR_1",)
    assert state.ignored == ("_SUCCESS",)
    skipped = load_directory_state(file_io, root, EVERYTHING, ignore_empty_files=True)
    assert "000000_0" not in skipped.original_files


def test_metadata_is_read_only_for_bases_without_visibility_suffix(store):
    file_io, root = store
    write_partition_tree(
        file_io,
        root,
        [
            "base_0000003/_metadata_acid",
            "base_0000003_v0000009/_metadata_acid",
            "delta_0000001_0000001_0000/_metadata_acid",
        ],
        contents=dict.fromkeys(
            [
                "base_0000003/_metadata_acid",
                "base_0000003_v0000009/_metadata_acid",
                "delta_0000001_0000001_0000/_metadata_acid",
            ],
            COMPACTED,
        ),
    )
    _, metadata = list_partition(file_io, root)
    assert metadata == {"base_0000003": COMPACTED.decode()}


def test_valid_metadata_marks_a_compacted_base_so_history_matters(store):
    # AcidUtils.isCompactedBase: _metadata_acid says "compacted" -> a base invalid for the snapshot
    # raises ACID_NOT_ENOUGH_HISTORY; without the marker it is an insert-overwrite base and is skipped.
    file_io, root = store
    write_partition_tree(
        file_io,
        root,
        ["base_0000010/bucket_00000", "base_0000010/_metadata_acid"],
        contents={"base_0000010/_metadata_acid": COMPACTED},
    )
    with pytest.raises(NotEnoughHistoryError, match=r"\(12,5\)"):
        load_directory_state(file_io, root, make_write_id_list(12, open_ids=(5,)))
    file_io.delete_file(file_io.join(root, "base_0000010", "_metadata_acid"))
    state = load_directory_state(file_io, root, make_write_id_list(12, open_ids=(5, 10)))
    assert state.base is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"not json at all", "is not JSON"),
        (b'{"thisFileVersion":"7","dataFormat":"compacted"}', "unexpected metadata version in "),
        (b'{"thisFileVersion":"0","dataFormat":"lost"}', "unexpected dataFormat in "),
    ],
    ids=["garbage", "version", "format"],
)
def test_corrupt_metadata_raises_naming_the_file(store, text, problem):
    file_io, root = store
    write_partition_tree(
        file_io, root, ["base_0000004/_metadata_acid"], contents={"base_0000004/_metadata_acid": text}
    )
    with pytest.raises(InvalidPathError) as info:
        load_directory_state(file_io, root, EVERYTHING)
    assert str(info.value).startswith(f"Invalid ACID name 'base_0000004/_metadata_acid': {problem}")


def test_visibility_suffix_is_checked_against_txns(store):
    file_io, root = store
    write_partition_tree(
        file_io, root, ["base_0000004_v0000012/bucket_00000", "delta_0000001_0000004/bucket_00000"]
    )
    running = load_directory_state(file_io, root, EVERYTHING, make_txn_list(20, open_ids=(12,)))
    assert running.base is None
    assert running.deltas == ("delta_0000001_0000004",)
    done = load_directory_state(file_io, root, EVERYTHING, make_txn_list(20))
    assert done.base == "base_0000004_v0000012"
    assert done.obsolete == ("delta_0000001_0000004",)


def test_malformed_acid_directory_raises_naming_it(store):
    file_io, root = store
    write_partition_tree(file_io, root, ["delta_0000001_0000001_0000/bucket_00000", "delta_x_1/bucket_00000"])
    with pytest.raises(InvalidPathError) as info:
        load_directory_state(file_io, root, EVERYTHING)
    assert "'delta_x_1'" in str(info.value)


def test_base_deleted_between_listing_and_marker_read_counts_as_unmarked(store):
    """A cleaner deletes an obsolete base after the listing, before its ``_metadata_acid`` is read
    (the HMS fault soak's minor compaction failed so): the state is decided without it, as Hive's
    ``isCompacted`` reads a missing marker; a marker that is there but unreadable still raises."""
    file_io, root = store
    tree = ["base_0000002/bucket_00000", "base_0000002/_metadata_acid", *PARTITION[2:5]]
    write_partition_tree(
        file_io,
        root,
        tree,
        contents={"base_0000002/_metadata_acid": COMPACTED, "base_0000004/_metadata_acid": COMPACTED},
    )
    obsolete = file_io.join(root, "base_0000002")
    read_bytes = file_io.read_bytes

    def cleaner_first(path):
        if path.startswith(obsolete):
            file_io.delete_dir(obsolete)
        return read_bytes(path)

    file_io.read_bytes = cleaner_first
    state = load_directory_state(file_io, root, make_write_id_list(7))
    assert state.base == "base_0000004"
    assert set(state.obsolete) == {"base_0000002", "delta_0000001_0000004"}

    def unreadable(path):
        raise StorageError(f"Cannot read {path!r}: permission denied")

    file_io.read_bytes = unreadable
    with pytest.raises(StorageError, match="permission denied"):
        load_directory_state(file_io, root, make_write_id_list(7))


def test_missing_directory_raises_storage_error(store):
    file_io, root = store
    missing = file_io.join(root, "nope")
    with pytest.raises(StorageError) as info:
        load_directory_state(file_io, missing, EVERYTHING)
    assert str(info.value) == f"Directory {missing!r} does not exist; expected a table or partition directory"


def test_local_and_mock_stores_agree(tmp_path):
    states = []
    for file_io, root in (
        (LocalFileIO(), str(tmp_path / "p")),
        (PyArrowFileIO(pa_fs._MockFileSystem()), "w/p"),
    ):
        write_partition_tree(
            file_io,
            root,
            [*PARTITION, "000000_0", "sub/000001_0"],
            contents={"base_0000004/_metadata_acid": COMPACTED},
        )
        states.append(load_directory_state(file_io, root, make_write_id_list(6, aborted_ids=(6,))))
    assert states[0] == states[1]
