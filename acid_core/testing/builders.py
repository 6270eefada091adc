"""Builders with defaults for tests: ACID names, snapshots, listings and real partition trees.

::

    make_delta_dir(min_write_id=3)                 -> DeltaDir(3, 3, statement_id=0)
    make_write_id_list(7, open_ids=(5,))           -> "default.t:7:5:5:"
    make_listing("base_5", "delta_6_6", "000000_0") -> [ListingEntry(...), ...] (dirs by name)
    write_partition_tree(file_io, "/tmp/t", ["base_0000005/bucket_00000", "000000_0"])

Names that look like ACID directories (``base_``, ``delta_``, ``delete_delta_``) and names containing
a ``/`` below such a directory are directories; everything else at the top level is a file unless
it ends with ``/``.

Invariants: builders only construct values, they never decide anything ``state`` decides.
Not here: expected results of a test.
Errors: whatever the value constructors raise (``InvalidPathError`` for malformed names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acid_core.paths import BaseDir, DeleteDeltaDir, DeltaDir, is_acid_dir_name
from acid_core.state import ListingEntry
from acid_core.writeids import ValidTxnList, ValidWriteIdList

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from acid_core.fs import FileIO

__all__ = [
    "DEFAULT_TABLE",
    "make_base_dir",
    "make_delete_delta_dir",
    "make_delta_dir",
    "make_listing",
    "make_listing_from_files",
    "make_txn_list",
    "make_write_id_list",
    "write_partition_tree",
]

DEFAULT_TABLE = "default.t"


def make_base_dir(write_id: int = 1, visibility_txn_id: int = 0) -> BaseDir:
    """A ``base_N[_vT]`` value."""
    return BaseDir(write_id, visibility_txn_id)


def make_delta_dir(
    min_write_id: int = 1,
    max_write_id: int | None = None,
    statement_id: int | None = 0,
    visibility_txn_id: int = 0,
) -> DeltaDir:
    """An insert delta; ``max_write_id`` defaults to ``min_write_id`` (one transaction)."""
    high = min_write_id if max_write_id is None else max_write_id
    return DeltaDir(min_write_id, high, statement_id, visibility_txn_id)


def make_delete_delta_dir(
    min_write_id: int = 1,
    max_write_id: int | None = None,
    statement_id: int | None = 0,
    visibility_txn_id: int = 0,
) -> DeleteDeltaDir:
    """A delete delta; ``max_write_id`` defaults to ``min_write_id``."""
    high = min_write_id if max_write_id is None else max_write_id
    return DeleteDeltaDir(min_write_id, high, statement_id, visibility_txn_id)


def make_write_id_list(
    high_watermark: int,
    open_ids: Iterable[int] = (),
    aborted_ids: Iterable[int] = (),
    table_name: str | None = DEFAULT_TABLE,
) -> ValidWriteIdList:
    """A reader snapshot whose min open write ID is the lowest open ID, as Hive's TxnHandler sets it."""
    opened = tuple(open_ids)
    return ValidWriteIdList(
        high_watermark, opened, tuple(aborted_ids), min(opened) if opened else None, table_name
    )


def make_txn_list(
    high_watermark: int, open_ids: Iterable[int] = (), aborted_ids: Iterable[int] = ()
) -> ValidTxnList:
    """A ValidTxnList whose min open transaction is the lowest open ID."""
    opened = tuple(open_ids)
    return ValidTxnList(high_watermark, opened, tuple(aborted_ids), min(opened) if opened else None)


def _is_dir_name(name: str) -> bool:
    return name.endswith("/") or is_acid_dir_name(name)


def make_listing(*names: str, sizes: Mapping[str, int] | None = None) -> list[ListingEntry]:
    """Listing entries for top-level names (and ``dir/file`` paths below non-ACID directories).

    Args:
        names: ``base_5``, ``delta_1_1``, ``000000_0``, ``subdir/``, ``subdir/000000_0``, ...; a
            trailing ``/`` forces a directory.
        sizes: file sizes by path (default 1 byte, so ``ignore_empty_files`` keeps them).

    Returns:
        One entry per name, directories with size 0.
    """
    known = sizes or {}
    entries = []
    for name in names:
        path = name.rstrip("/")
        is_dir = _is_dir_name(name) and "/" not in path
        entries.append(ListingEntry(path, is_dir, 0 if is_dir else known.get(path, 1)))
    return entries


def make_listing_from_files(*paths: str, sizes: Mapping[str, int] | None = None) -> list[ListingEntry]:
    """A recursive listing from file paths, the way Hive's tests declare a ``MockFileSystem``.

    Every path is a file; each directory above it is implied and listed once, before its files.
    ``make_listing_from_files("delta_1_1/bucket_0", "subdir/000000_0", "000001_0")`` lists the
    directories ``delta_1_1`` and ``subdir`` and the three files.

    Args:
        paths: ``/``-separated file paths relative to the partition directory.
        sizes: file sizes by path (default 500, the size Hive's tests give most files).

    Returns:
        The entries, directories first in the order they are first seen.
    """
    known = sizes or {}
    directories: dict[str, None] = {}
    files: list[ListingEntry] = []
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            directories.setdefault("/".join(parts[:depth]))
        files.append(ListingEntry(path, False, known.get(path, 500)))
    return [ListingEntry(name, True, 0) for name in directories] + files


def write_partition_tree(
    file_io: FileIO,
    root: str,
    paths: Iterable[str],
    *,
    contents: Mapping[str, bytes] | None = None,
) -> None:
    """Create a partition directory tree through a FileIO.

    Args:
        file_io: where to write (``LocalFileIO`` for tmp_path, any ``PyArrowFileIO``).
        root: the partition directory, in the store's own path syntax.
        paths: relative paths; ``x/`` creates an empty directory, anything else a file (its parent
            directories are created). A bare ACID directory name creates the directory only.
        contents: file bytes by relative path (default ``b"x"``).
    """
    data = contents or {}
    file_io.mkdirs(root)
    for path in paths:
        full = file_io.join(root, *path.rstrip("/").split("/"))
        if _is_dir_name(path) and "/" not in path.rstrip("/"):
            file_io.mkdirs(full)
        else:
            file_io.write_bytes_atomic(full, data.get(path, b"x"))
