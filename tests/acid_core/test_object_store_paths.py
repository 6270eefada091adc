"""Path safety on object stores and HDFS: only inside the table's own location, for URIs too.

``s3://b/t`` and ``s3://b/t2`` share a key prefix but not a directory; another bucket, the bucket
root and another table's prefix are refused by the LOCATION rules (``check_location``), the
cleaner's ledger check (``cleaner._inside``, store-local paths ``bucket/key``) and the filesystem's
last guard (``fs._refuse_unsafe_target``). Store-local paths drop an HDFS name node, so a partition
on another name node than its table is refused before any path is compared (``store_key``).
``s3a://`` and ``s3n://`` (the LOCATIONs Hive, Spark and Trino write) are the store ``s3://`` names:
``s3a://b/t`` is the table ``s3://b/t``, ``s3a://b/t2`` is not inside it.
"""

from __future__ import annotations

import pytest

from acid_core.compaction.cleaner import _check_same_store, _inside
from acid_core.errors import InvalidLocationError, UnsafeCleanError, UnsafeFileOperationError
from acid_core.fs import SUPPORTED_SCHEMES, LocalFileIO, _refuse_unsafe_target, store_key
from acid_core.locations import (
    Occupant,
    check_location,
    format_location,
    is_inside,
    is_inside_path,
    is_same_location,
    parse_location,
)

_OCCUPANTS = [
    Occupant("database", "default", "s3://b/wh", True),
    Occupant("table", "default.t", "s3://b/wh/t"),
    Occupant("database", "h", "hdfs://nn:8020/wh", True),
    Occupant("table", "h.t", "hdfs://nn:8020/wh/t"),
]


@pytest.mark.parametrize(
    ("candidate", "problem"),
    [
        ("s3://b", "it is a filesystem root"),
        ("s3://b/", "it is a filesystem root"),
        ("s3://other", "it is a filesystem root"),
        ("s3://b/wh", "warehouse"),
        ("s3://b/wh/t", "default.t"),
        ("s3://b/wh/t/x", "inside the location 's3://b/wh/t' of table default.t"),
        ("s3://b/wh/../x", "'..'"),
        ("hdfs://nn:8020/", "it is a filesystem root"),
        ("hdfs://nn:8020/wh/t/p=1", "inside the location 'hdfs://nn:8020/wh/t' of table h.t"),
        ("s3x://b/wh/t3", "scheme 's3x'"),
        # Hadoop's names for the same objects: the same locations as s3://
        ("s3a://b/wh/t", "it is the location of table default.t"),
        ("S3N://b/wh/t", "it is the location of table default.t"),
        ("s3a://b/wh/t/x", "inside the location 's3://b/wh/t' of table default.t"),
        ("s3a://b/wh", "it is the warehouse root"),
        ("s3n://b", "it is a filesystem root"),
    ],
)
def test_check_location_s3_and_hdfs_unsafe_refused(candidate, problem):
    with pytest.raises(InvalidLocationError, match=problem):
        check_location(
            candidate, warehouse_root="s3://b/wh", occupants=_OCCUPANTS, supported_schemes=SUPPORTED_SCHEMES
        )


@pytest.mark.parametrize(
    ("candidate", "stored"),
    [
        ("s3://b/wh/t2", "s3://b/wh/t2"),  # shares the prefix "t" with default.t, not its directory
        ("s3://other/wh/t", "s3://other/wh/t"),  # an external location in another bucket: Hive allows it
        ("hdfs://nn:8020/wh/t2", "hdfs://nn:8020/wh/t2"),
        ("s3a://b/wh/t2", "s3a://b/wh/t2"),  # the scheme is kept as written (the JVM reader's)
    ],
)
def test_check_location_s3_sibling_prefix_allowed(candidate, stored):
    location = check_location(
        candidate, warehouse_root="s3://b/wh", occupants=_OCCUPANTS, supported_schemes=SUPPORTED_SCHEMES
    )
    assert format_location(location) == stored


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("b/wh/t/delta_1_1", "b/wh/t", True),
        ("b/wh/t2/delta_1_1", "b/wh/t", False),  # the prefix is not the directory
        ("other/wh/t/delta_1_1", "b/wh/t", False),  # another bucket
        ("b/wh/t", "b/wh/t", False),  # the table itself (strictly)
        ("/wh/t/delta_1_1", "/wh/t", True),  # HDFS paths are absolute
        ("/wh/t2/delta_1_1", "/wh/t", False),
    ],
)
def test_is_inside_path_store_local_paths(path, root, inside):
    assert is_inside_path(path, root) is inside


@pytest.mark.parametrize(
    ("table_root", "root", "name"),
    [
        ("b/wh/t", "b/wh/t", "../t2"),  # another table's directory through the name
        ("b/wh/t", "b/wh/t", "x/../../t2"),
        ("b/wh/t", "b/wh/t", ""),
        ("b/wh/t", "b", "delta_1_1"),  # a partition located at the bucket root
        ("b/wh/t", "b/wh", "delta_1_1"),  # a partition that would hold the table
        ("/wh/t", "/wh/t2/..", "delta_1_1"),  # HDFS: '..' in a partition location
    ],
)
def test_cleaner_inside_refuses_outside_the_table(table_root, root, name):
    with pytest.raises(UnsafeCleanError):
        _inside(LocalFileIO(), table_root, root, name)


@pytest.mark.parametrize(
    ("location", "key"),
    [
        ("/data/wh/t", "file"),
        ("file:///data/wh/t", "file"),
        ("s3://b/wh/t", "s3"),  # the bucket is part of the store-local path
        ("s3://other/wh/t", "s3"),
        ("hdfs://nn:8020/wh/t", "hdfs://nn:8020"),
        ("HDFS://NN:8020/wh/t", "hdfs://nn:8020"),
        ("hdfs://nn2:8020/wh/t", "hdfs://nn2:8020"),  # same path, another name node
        ("viewfs://cluster/wh/t", "viewfs://cluster"),
        ("s3a://b/wh/t", "s3"),  # Hadoop's S3 schemes are the same store
        ("S3N://b/wh/t", "s3"),
        ("gcs://b/wh/t", "gs"),
    ],
)
def test_store_key_tells_namenodes_apart(location, key):
    assert store_key(location) == key


@pytest.mark.parametrize(
    ("partition", "table"),
    [
        ("hdfs://nn2:8020/wh/t/p=1", "hdfs://nn:8020/wh/t"),  # same path on another name node
        ("hdfs://nn2:8020/wh/t/p=1", "/wh/t"),  # the local disk and HDFS
        ("s3://b/wh/t/p=1", "hdfs://nn:8020/wh/t"),
    ],
)
def test_cleaner_refuses_a_partition_on_another_store(partition, table):
    with pytest.raises(UnsafeCleanError, match=r"Refusing to clean 'hdfs://nn2|Refusing to clean 's3://b"):
        _check_same_store(partition, table)


@pytest.mark.parametrize(
    ("partition", "table"),
    [
        ("hdfs://nn:8020/ext/p=1", "hdfs://nn:8020/wh/t"),
        ("s3://other/p=1", "s3://b/wh/t"),
        ("/x/p=1", "/wh/t"),
        ("s3a://b/wh/t/p=1", "s3://b/wh/t"),  # a partition Spark added with its s3a:// URI
        ("s3://b/wh/t/p=1", "s3n://b/wh/t"),
    ],
)
def test_cleaner_accepts_a_partition_on_the_table_store(partition, table):
    _check_same_store(partition, table)  # the path checks (_inside) decide from here


@pytest.mark.parametrize(
    ("path", "table", "inside", "same"),
    [
        ("s3a://b/wh/t", "s3://b/wh/t", True, True),
        ("s3://b/wh/t", "s3n://b/wh/t", True, True),
        ("s3a://b/wh/t/p=1", "s3://b/wh/t", True, False),
        ("s3a://b/wh/t2", "s3://b/wh/t", False, False),  # the prefix, not the directory
        ("s3a://b/wh/t2/p=1", "s3://b/wh/t", False, False),
        ("s3a://other/wh/t", "s3://b/wh/t", False, False),  # another bucket
        ("hdfs://b/wh/t", "s3://b/wh/t", False, False),  # another store with the same path
        ("s3x://b/wh/t", "s3://b/wh/t", False, False),  # not an alias
    ],
)
def test_s3_scheme_aliases_are_one_store_for_the_inside_checks(path, table, inside, same):
    schemes = {*SUPPORTED_SCHEMES, "s3x"}
    here, root = (
        parse_location(path, supported_schemes=schemes),
        parse_location(table, supported_schemes=schemes),
    )
    assert is_inside(here, root) is inside
    assert is_same_location(here, root) is same
    assert is_same_location(root, here) is same


def test_cleaner_inside_sibling_prefix_partition_owns_only_itself():
    # A partition located at b/wh/t2 (outside table b/wh/t) owns b/wh/t2 only.
    assert _inside(LocalFileIO(), "b/wh/t", "b/wh/t2", "delta_1_1") == "b/wh/t2/delta_1_1"


@pytest.mark.parametrize("path", ["bucket", "bucket/", "/", "bucket/wh/..", "bucket/../other/x", "/wh/../x"])
def test_fs_guard_refuses_bucket_root_and_dotdot(path):
    with pytest.raises(UnsafeFileOperationError):
        _refuse_unsafe_target("delete directory", path)


def _recording_s3_handler(calls):
    """A pyarrow ``FileSystemHandler`` that calls itself ``s3`` and records every request it gets."""
    import pyarrow.fs as pafs

    def recorder(name):
        def record(self, *args):
            calls.append(name)
            raise AssertionError(f"no request expected, got {name}{args}")

        return record

    methods = {name: recorder(name) for name in pafs.FileSystemHandler.__abstractmethods__}
    methods["get_type_name"] = lambda self: "s3"
    methods["__eq__"] = lambda self, other: self is other
    methods["__ne__"] = lambda self, other: self is not other
    return type("RecordingS3Handler", (pafs.FileSystemHandler,), methods)()


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("bucket", "bucket/wh/t/base_1"),  # a bucket root as the source
        ("bucket/wh/t/base_1", "/"),  # the store's root as the target
        ("bucket/wh/t/.acidflow-staging-1/base_1", "bucket/wh/t/../t2/base_1"),  # '..' into another table
        ("other", "bucket/wh/t/base_1"),  # another bucket's root
    ],
    ids=["bucket-root", "store-root", "dotdot-other-table", "other-bucket-root"],
)
def test_object_store_rename_refuses_unsafe_paths_before_any_request(source, target, monkeypatch):
    """The object-by-object move (S3 has no directory rename) passes the same guard first."""
    import pyarrow.fs as pafs

    from acid_core import fs

    calls = []
    io = fs.PyArrowFileIO(pafs.PyFileSystem(_recording_s3_handler(calls)))
    # pyarrow names a Python file system "py::<name>": count it as an object store like "s3"
    monkeypatch.setattr(fs, "_OBJECT_STORES", fs._OBJECT_STORES | {io.filesystem.type_name})
    assert io.filesystem.type_name == "py::s3"
    with pytest.raises(UnsafeFileOperationError):
        io.rename(source, target)
    assert calls == []
