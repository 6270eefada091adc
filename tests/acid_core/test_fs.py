"""The FileIO port: one contract, run against every implementation.

``LocalFileIO`` (os.scandir listings), ``PyArrowFileIO`` over ``pyarrow.fs.LocalFileSystem`` and
over pyarrow's in-memory ``_MockFileSystem`` (the stand-in for an object store: no real
directories, no atomic rename guarantees, paths without a leading ``/``), ``HdfsFileIO`` on a
real MiniDFSCluster (``tests/fixtures/hdfs.py``), and ``PyArrowFileIO`` over pyarrow's S3 client on
an S3-protocol server (moto, ``tests/fixtures/s3.py``) opened through an ``s3a://`` URI, the scheme
Hive, Spark and Trino write into the metastore.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow.fs as pa_fs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.errors import StorageError, UnsafeFileOperationError
from acid_core.fs import (
    FileInfo,
    FileIO,
    HdfsFileIO,
    LocalFileIO,
    PrelistedFileIO,
    PyArrowFileIO,
    file_io_for,
)
from acid_core.testing.builders import write_partition_tree

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path


@dataclass
class Store:
    file_io: FileIO
    root: str

    def path(self, *parts: str) -> str:
        return self.file_io.join(self.root, *parts)


def _local(tmp_path: Path) -> Store:
    return Store(LocalFileIO(), str(tmp_path / "root"))


def _pyarrow_local(tmp_path: Path) -> Store:
    return Store(PyArrowFileIO(pa_fs.LocalFileSystem()), str(tmp_path / "root"))


def _pyarrow_mock(tmp_path: Path) -> Store:
    return Store(PyArrowFileIO(pa_fs._MockFileSystem()), "warehouse/db/t")


def _hdfs(request: pytest.FixtureRequest) -> Store:
    env = request.getfixturevalue("hdfs_env")
    file_io, root = file_io_for(f"{env.warehouse}/db/t")
    assert isinstance(file_io, HdfsFileIO)
    return Store(file_io, root)


def _s3a(request: pytest.FixtureRequest) -> Store:
    env = request.getfixturevalue("s3_env")
    file_io, root = file_io_for(f"s3a://{env.bucket}/warehouse/db/t")
    assert isinstance(file_io, PyArrowFileIO)
    assert file_io.filesystem.type_name == "s3"
    assert root == f"{env.bucket}/warehouse/db/t"
    return Store(file_io, root)


_REMOTE_FACTORIES = {"hdfs": _hdfs, "s3a": _s3a}

_FILE_IO_FACTORIES = {"local": _local, "pyarrow-local": _pyarrow_local, "pyarrow-mock": _pyarrow_mock}


@pytest.fixture(
    params=[
        *_FILE_IO_FACTORIES,
        pytest.param("hdfs", marks=pytest.mark.integration("hdfs")),
        pytest.param("s3a", marks=pytest.mark.integration("s3")),
    ],
    ids=[*_FILE_IO_FACTORIES, "hdfs", "s3a"],
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param in _REMOTE_FACTORIES:
        made = _REMOTE_FACTORIES[request.param](request)
    else:
        made = _FILE_IO_FACTORIES[request.param](tmp_path)
    made.file_io.mkdirs(made.root)
    return made


def _names(infos: Iterable[FileInfo]) -> list[str]:
    return sorted(info.name for info in infos)


# --------------------------------------------------------------------------------------------
# Listing.
# --------------------------------------------------------------------------------------------


def test_list_dir_gives_children_only(store):
    write_partition_tree(
        store.file_io,
        store.root,
        ["base_0000005/bucket_00000", "delta_0000006_0000006_0000/bucket_00000", "000000_0", "empty/"],
        contents={"000000_0": b"12345"},
    )
    children = store.file_io.list_dir(store.root)
    assert _names(children) == ["000000_0", "base_0000005", "delta_0000006_0000006_0000", "empty"]
    by_name = {info.name: info for info in children}
    assert isinstance(by_name["000000_0"], FileInfo)
    assert (by_name["000000_0"].is_dir, by_name["000000_0"].size) == (False, 5)
    assert (by_name["base_0000005"].is_dir, by_name["base_0000005"].size) == (True, 0)
    assert by_name["empty"].is_dir
    for info in children:
        assert info.path == store.path(info.name)


def test_list_entries_gives_name_is_dir_size(store):
    write_partition_tree(
        store.file_io, store.root, ["delta_1_1/bucket_0", "000000_0"], contents={"000000_0": b"abc"}
    )
    assert sorted(store.file_io.list_entries(store.root)) == [("000000_0", False, 3), ("delta_1_1", True, 0)]


def test_list_tree_is_recursive(store):
    write_partition_tree(
        store.file_io, store.root, ["sub/deeper/000001_0", "sub/000000_0", "base_5/bucket_0"]
    )
    found = {info.path: info.is_dir for info in store.file_io.list_tree(store.root)}
    assert found == {
        store.path("sub"): True,
        store.path("sub", "deeper"): True,
        store.path("sub", "deeper", "000001_0"): False,
        store.path("sub", "000000_0"): False,
        store.path("base_5"): True,
        store.path("base_5", "bucket_0"): False,
    }


def test_list_dir_missing_raises_storage_error_naming_path(store):
    missing = store.path("nope")
    for list_children in (store.file_io.list_dir, store.file_io.list_entries, store.file_io.list_tree):
        with pytest.raises(StorageError) as info:
            list_children(missing)
        assert (
            str(info.value)
            == f"Directory {missing!r} does not exist; expected a table or partition directory"
        )


def test_list_dir_on_a_file_raises_storage_error_naming_path(store):
    target = store.path("000000_0")
    store.file_io.write_bytes_atomic(target, b"x")
    with pytest.raises(StorageError) as info:
        store.file_io.list_dir(target)
    assert repr(target) in str(info.value)


# --------------------------------------------------------------------------------------------
# info, read, write.
# --------------------------------------------------------------------------------------------


def test_info_of_file_dir_and_missing(store):
    target = store.path("delta_1_1", "bucket_00000")
    store.file_io.write_bytes_atomic(target, b"0123456789")
    file_info = store.file_io.info(target)
    assert file_info is not None
    assert (file_info.name, file_info.is_dir, file_info.size, file_info.path) == (
        "bucket_00000",
        False,
        10,
        target,
    )
    dir_info = store.file_io.info(store.path("delta_1_1"))
    assert dir_info is not None
    assert dir_info.is_dir
    assert store.file_io.info(store.path("missing")) is None


def test_write_bytes_atomic_creates_parents_and_replaces(store):
    target = store.path("base_0000001", "_metadata_acid")
    store.file_io.write_bytes_atomic(target, b"first")
    store.file_io.write_bytes_atomic(target, b"second, longer")
    assert store.file_io.read_bytes(target) == b"second, longer"
    # no temporary sibling is left behind
    assert _names(store.file_io.list_dir(store.path("base_0000001"))) == ["_metadata_acid"]


def test_read_bytes_missing_raises_naming_path(store):
    missing = store.path("missing")
    with pytest.raises(StorageError) as info:
        store.file_io.read_bytes(missing)
    assert str(info.value) == f"File {missing!r} does not exist"


def test_open_output_then_open_input_is_seekable(store):
    target = store.path("delta_2_2", "bucket_00001")
    with store.file_io.open_output(target) as out:
        out.write(b"hello ")
        out.write(b"world")
    with store.file_io.open_input(target) as stream:
        assert stream.read() == b"hello world"
        stream.seek(6)
        assert stream.read(3) == b"wor"
        assert stream.tell() == 9


def test_open_input_missing_raises_naming_path(store):
    missing = store.path("missing")
    with pytest.raises(StorageError) as info:
        store.file_io.open_input(missing)
    assert str(info.value) == f"File {missing!r} does not exist"


# --------------------------------------------------------------------------------------------
# mkdirs, rename, delete.
# --------------------------------------------------------------------------------------------


def test_mkdirs_is_idempotent(store):
    target = store.path("a", "b", "c")
    store.file_io.mkdirs(target)
    store.file_io.mkdirs(target)
    info = store.file_io.info(target)
    assert info is not None
    assert info.is_dir


def test_rename_file(store):
    source, target = store.path(".staging", "bucket_00000"), store.path("delta_3_3", "bucket_00000")
    store.file_io.write_bytes_atomic(source, b"data")
    store.file_io.mkdirs(store.path("delta_3_3"))
    store.file_io.rename(source, target)
    assert store.file_io.info(source) is None
    assert store.file_io.read_bytes(target) == b"data"


def test_rename_directory(store):
    write_partition_tree(store.file_io, store.root, [".tmp_base/bucket_00000", ".tmp_base/bucket_00001"])
    store.file_io.rename(store.path(".tmp_base"), store.path("base_0000009"))
    assert store.file_io.info(store.path(".tmp_base")) is None
    assert _names(store.file_io.list_dir(store.path("base_0000009"))) == ["bucket_00000", "bucket_00001"]


def test_rename_missing_source_raises_naming_it(store):
    missing = store.path("missing")
    with pytest.raises(StorageError) as info:
        store.file_io.rename(missing, store.path("other"))
    assert str(info.value) == f"Cannot rename {missing!r}: it does not exist"


def test_delete_file_is_idempotent(store):
    target = store.path("000000_0")
    store.file_io.write_bytes_atomic(target, b"x")
    store.file_io.delete_file(target)
    store.file_io.delete_file(target)
    assert store.file_io.info(target) is None


def test_delete_dir_is_recursive_and_idempotent(store):
    write_partition_tree(store.file_io, store.root, ["delta_1_1/bucket_0", "delta_1_1/sub/x", "keep/y"])
    store.file_io.delete_dir(store.path("delta_1_1"))
    store.file_io.delete_dir(store.path("delta_1_1"))
    assert store.file_io.info(store.path("delta_1_1")) is None
    assert _names(store.file_io.list_dir(store.root)) == ["keep"]


def test_join_uses_slash(store):
    assert store.file_io.join("a", "b", "c") == "a/b/c"


def test_every_implementation_satisfies_the_protocol(store):
    assert isinstance(store.file_io, FileIO)


# --------------------------------------------------------------------------------------------
# file_io_for.
# --------------------------------------------------------------------------------------------


def test_file_io_for_local_path_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    file_io, path = file_io_for("warehouse/t")
    assert isinstance(file_io, LocalFileIO)
    assert path == os.path.join(str(tmp_path), "warehouse", "t")


def test_file_io_for_file_uri_is_local(tmp_path):
    file_io, path = file_io_for(f"file://{tmp_path}/t")
    assert isinstance(file_io, LocalFileIO)
    assert path == f"{tmp_path}/t"


def test_file_io_for_mock_uri_is_pyarrow():
    file_io, path = file_io_for("mock:///warehouse/db/t")
    assert isinstance(file_io, PyArrowFileIO)
    assert not isinstance(file_io, LocalFileIO)
    assert file_io.filesystem.type_name == "mock"
    assert path == "warehouse/db/t"
    file_io.mkdirs(path)
    file_io.write_bytes_atomic(file_io.join(path, "000000_0"), b"x")
    assert [info.name for info in file_io.list_dir(path)] == ["000000_0"]


def test_file_io_for_unknown_scheme_raises_storage_error():
    with pytest.raises(StorageError) as info:
        file_io_for("nosuchscheme://bucket/t")
    message = str(info.value)
    assert message.startswith("Cannot open filesystem for 'nosuchscheme://bucket/t': ")
    assert message.endswith(
        "expected a local path or a URI such as hdfs://namenode:8020/warehouse or s3://bucket/warehouse"
    )


_UNSAFE_TARGETS = [
    "/",
    "",
    ".",
    "/etc",
    "etc",
    "bucket",
    "/etc/",
    "//etc",
    "/tmp/../etc",
    "wh/t/../../x",
    "C:\\",
]


@pytest.mark.parametrize("path", _UNSAFE_TARGETS, ids=repr)
@pytest.mark.parametrize("operation", ["delete directory", "delete", "move"])
def test_destructive_call_on_root_or_top_level_raises_and_touches_nothing(path, operation):
    """The last line of defence: roots, top-level directories and '..' are never deleted or moved.

    Run on pyarrow's in-memory filesystem, so a regression cannot harm the machine running it.
    """
    filesystem = pa_fs._MockFileSystem()
    io = PyArrowFileIO(filesystem)
    for directory in ("etc/keep", "bucket/keep", "x/keep"):
        io.mkdirs(directory)
    before = sorted(info.path for info in filesystem.get_file_info(pa_fs.FileSelector("", recursive=True)))
    call = {
        "delete directory": lambda: io.delete_dir(path),
        "delete": lambda: io.delete_file(path),
        "move": lambda: io.rename(path, "x/keep/moved"),
    }[operation]
    with pytest.raises(UnsafeFileOperationError) as raised:
        call()
    assert str(raised.value) == (
        f"Refusing to {operation} {path!r}: it is a filesystem root, a top-level directory or has a "
        "'..' component; expected a path at least two levels deep without '..'"
    )
    after = sorted(info.path for info in filesystem.get_file_info(pa_fs.FileSelector("", recursive=True)))
    assert after == before


def test_rename_onto_a_top_level_target_raises(store):
    store.file_io.write_bytes_atomic(store.path("f"), b"x")
    with pytest.raises(UnsafeFileOperationError, match=r"Refusing to move onto 'etc'"):
        store.file_io.rename(store.path("f"), "etc")
    assert store.file_io.read_bytes(store.path("f")) == b"x"


def test_two_levels_deep_is_allowed():
    io = PyArrowFileIO(pa_fs._MockFileSystem())
    io.mkdirs("wh/t/delta_0000001_0000001")
    io.delete_dir("wh/t")
    assert io.info("wh/t") is None


# -- PrelistedFileIO: one recursive listing answers every listing and stat below the root ---------


_NAMES = st.sampled_from(["p=1", "p=2", "delta_0000001_0000001_0000", "base_0000002", "bucket_00000", "x"])
_TREES = st.lists(st.tuples(st.lists(_NAMES, min_size=1, max_size=4), st.integers(0, 50)), max_size=12)


class _CountingFileIO(PyArrowFileIO):
    """Counts the calls that are round trips on an object store."""

    def __init__(self, filesystem: pa_fs.FileSystem) -> None:
        super().__init__(filesystem)
        self.calls: list[str] = []

    def list_dir(self, path):
        self.calls.append("list_dir")
        return super().list_dir(path)

    def list_tree(self, path):
        self.calls.append("list_tree")
        return super().list_tree(path)

    def info(self, path):
        self.calls.append("info")
        return super().info(path)


def _build(tree) -> tuple[_CountingFileIO, str, set[str], set[str]]:
    io = _CountingFileIO(pa_fs._MockFileSystem())
    root = "warehouse/db/t"
    io.mkdirs(root)
    dirs, files = {root}, set()
    for parts, size in tree:
        *parents, name = parts
        parent = "/".join([root, *parents])
        if parent in files or "/".join([parent, name]) in dirs:
            continue  # a name cannot be both a file and a directory
        if any("/".join([root, *parents[: i + 1]]) in files for i in range(len(parents))):
            continue
        io.write_bytes_atomic(f"{parent}/{name}", b"x" * size)
        files.add(f"{parent}/{name}")
        for i in range(len(parents)):
            dirs.add("/".join([root, *parents[: i + 1]]))
    return io, root, dirs, files


def _infos(infos):
    return sorted((i.path, i.is_dir, i.size) for i in infos)


@settings(max_examples=60, deadline=None)
@given(tree=_TREES)
def test_prelisted_file_io_answers_as_the_store_does(tree):
    """Every listing and stat below the root equals the store's own answer; missing paths too."""
    io, root, dirs, files = _build(tree)
    prelisted = PrelistedFileIO(io, root)
    for directory in dirs:
        assert _infos(prelisted.list_dir(directory)) == _infos(io.list_dir(directory))
        assert sorted(prelisted.list_entries(directory)) == sorted(io.list_entries(directory))
        assert _infos(prelisted.list_tree(directory)) == _infos(io.list_tree(directory))
        assert prelisted.info(directory) is not None
        assert prelisted.info(directory).is_dir
    for path in files:
        assert (prelisted.info(path).is_dir, prelisted.info(path).size) == (False, io.info(path).size)
    assert prelisted.info(f"{root}/no_such") is None
    with pytest.raises(StorageError, match="no_such"):
        prelisted.list_dir(f"{root}/no_such")


def test_prelisted_file_io_lists_the_root_once_and_serves_everything_below_from_it():
    io, root, _, _ = _build([(["p=1", "delta_0000001_0000001_0000", "bucket_00000"], 5)] * 1)
    io.write_bytes_atomic(f"{root}/p=2/base_0000002/bucket_00000", b"yy")
    prelisted = PrelistedFileIO(io, root)
    assert io.calls == ["list_tree"]  # a non-empty listing proves the root exists: no stat
    assert prelisted.info(root).is_dir
    for partition in ("p=1", "p=2"):
        prelisted.info(f"{root}/{partition}")
        prelisted.list_entries(f"{root}/{partition}")
        for child in prelisted.list_dir(f"{root}/{partition}"):
            prelisted.list_tree(child.path)
    assert io.calls == ["list_tree"]


def test_prelisted_file_io_of_an_empty_root_stats_it(tmp_path):
    (tmp_path / "t").mkdir()
    prelisted = PrelistedFileIO(LocalFileIO(), str(tmp_path / "t"))
    assert prelisted.info(str(tmp_path / "t")).is_dir
    assert prelisted.list_dir(str(tmp_path / "t")) == []


def test_prelisted_file_io_of_an_unlistable_root_raises_never_answers_empty(tmp_path):
    (tmp_path / "t" / "p=1").mkdir(parents=True)

    class Unlistable(LocalFileIO):
        def list_tree(self, path):
            raise StorageError(f"cannot list {path!r}: permission denied")

    with pytest.raises(StorageError, match="permission denied"):
        PrelistedFileIO(Unlistable(), str(tmp_path / "t"))


def test_prelisted_file_io_passes_paths_outside_its_root_and_writes_through(tmp_path):
    (tmp_path / "t" / "p=1").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f").write_bytes(b"abc")
    prelisted = PrelistedFileIO(LocalFileIO(), str(tmp_path / "t"))
    assert [i.name for i in prelisted.list_dir(str(tmp_path / "elsewhere"))] == ["f"]
    assert prelisted.info(str(tmp_path / "elsewhere" / "f")).size == 3
    prelisted.write_bytes_atomic(str(tmp_path / "t" / "p=1" / "g"), b"z")
    assert (tmp_path / "t" / "p=1" / "g").read_bytes() == b"z"
    assert prelisted.read_bytes(str(tmp_path / "t" / "p=1" / "g")) == b"z"


def test_prelisted_file_io_of_a_missing_root_is_empty(tmp_path):
    prelisted = PrelistedFileIO(LocalFileIO(), str(tmp_path / "missing"))
    assert prelisted.info(str(tmp_path / "missing")) is None
    assert prelisted.info(str(tmp_path / "missing" / "p=1")) is None
