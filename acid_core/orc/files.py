"""The files a snapshot reads: planning them, opening them, and what their footers say.

    plan_scan(file_io, table_dir, write_ids, txns)  -> ScanPlan   (data files by bucket, delete files)
    OpenFile(file_io, data_file)                                  an ORC file, its event layout checked
        .batches(columns, batch_rows)                            decoded ``batch_rows`` at a time
    probe_file(file_io, data_file)                  -> FileFacts  (rows, legacy non-inserts, row struct)

Split out of ``orc.reader`` (the merge-on-read), which re-exports ``plan_scan``, ``ScanPlan``,
``DataFile`` and ``FileKind``; the rules a plan follows are in that module's docstring.
Errors: ``NotAnAcidFileError``, ``CorruptDataError``, ``StorageError``, ``InvalidPathError``.
"""

from __future__ import annotations

import io
import posixpath
import struct
from dataclasses import dataclass
from enum import StrEnum
from typing import IO, TYPE_CHECKING, Any, Final, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as paorc

from acid_core.directory import load_directory_state
from acid_core.errors import CorruptDataError, InvalidPathError, NotAnAcidFileError, StorageError
from acid_core.orc.orc_tail import constant_integer_columns
from acid_core.orc.schema import is_acid_event_schema
from acid_core.paths import (
    BUCKET_PREFIX,
    DELETE_DELTA_PREFIX,
    SIDE_FILE_SUFFIX,
    BaseDir,
    DeleteDeltaDir,
    DeltaDir,
    is_acid_dir_name,
    is_hidden_name,
    parse_acid_dir,
    try_parse_bucket_file,
    try_parse_original_file,
)
from acid_core.writeids import RangeResponse

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from acid_core.fs import FileInfo, FileIO
    from acid_core.orc.deletes import I64
    from acid_core.state import AcidDirectoryState
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = [
    "DataFile",
    "FileFacts",
    "FileKind",
    "OpenFile",
    "ScanPlan",
    "int64_values",
    "is_key_ordered",
    "one_line",
    "plan_scan",
    "probe_file",
    "read_footers",
    "valid_mask",
]

_STATS_KEY: Final = b"hive.acid.stats"


class FileKind(StrEnum):
    """Where a data file sits."""

    ORIGINAL = "original"
    BASE = "base"
    DELTA = "delta"
    DELETE_DELTA = "delete_delta"


@dataclass(frozen=True, slots=True)
class DataFile:
    """One file the scan reads.

    Attributes:
        path: full path in the store's syntax.
        kind: original file, or file of a base, delta or delete delta.
        bucket_id: from the name (``bucket_N`` or ``N_x[_copy_y]``); 0 for other names.
        length: bytes to read: the size, or the last flushed length of a streaming file.
    """

    path: str
    kind: FileKind
    bucket_id: int
    length: int


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """The files of one snapshot, in reading order.

    Attributes:
        state: the directory state the plan comes from.
        data_files: originals, base and insert-delta files, grouped by bucket in Hive's order.
        delete_files: files of the delete deltas.
    """

    state: AcidDirectoryState
    data_files: tuple[DataFile, ...]
    delete_files: tuple[DataFile, ...]

    @property
    def bucket_ids(self) -> tuple[int, ...]:
        """The buckets that hold data files, ascending (delete files alone hide nothing)."""
        return tuple(sorted({f.bucket_id for f in self.data_files}))

    def for_bucket(self, bucket_id: int) -> ScanPlan:
        """The part of the plan one bucket needs: its data files and its delete-delta files.

        Hive's readers do the same split (``VectorizedOrcAcidRowBatchReader`` and
        ``OrcRawRecordMerger`` read only the split's bucket file of each delete delta): a delete
        event sits in the bucket file of the row it deletes.

        >>> from acid_core.state import AcidDirectoryState
        >>> state = AcidDirectoryState(None, (), (), (), (), (), (), frozenset(), False)
        >>> ScanPlan(state, (DataFile("b1", FileKind.BASE, 1, 9),), ()).for_bucket(0).data_files
        ()
        """
        return ScanPlan(
            self.state,
            tuple(f for f in self.data_files if f.bucket_id == bucket_id),
            tuple(f for f in self.delete_files if f.bucket_id == bucket_id),
        )


def _read_flush_length(file_io: FileIO, path: str) -> int:
    # OrcAcidUtils.getLastFlushLength: the side file is a sequence of big-endian longs, last wins.
    data = file_io.read_bytes(path)
    usable = len(data) - len(data) % 8
    if usable == 0:
        return -1
    (length,) = struct.unpack(">q", data[usable - 8 : usable])
    return int(length)


_ACID_VERSION_FILE = "_orc_acid_version"  # AcidUtils.OrcAcidVersion.ACID_FORMAT
_ACID_VERSIONS = frozenset({"2"})  # OrcAcidVersion.ORC_ACID_VERSION; an empty file means legacy (0)


def _check_acid_version(file_io: FileIO, directory: str, child: FileInfo) -> None:
    # OrcAcidVersion.getAcidVersionFromMetaFile reads the first byte as the version (the writer
    # may pad "2" with NUL bytes); any other content is a format this reader does not know.
    path = file_io.join(directory, child.name)
    expected = "a file holding the ORC ACID version '2' (Hive's OrcAcidVersion)"
    if child.is_dir:
        raise CorruptDataError(path, "it is a directory", expected)
    head = file_io.read_bytes(path)[:1]
    if head and head.decode("latin-1") not in _ACID_VERSIONS:
        raise CorruptDataError(path, f"unknown ORC ACID version {head.decode('latin-1')!r}", expected)


def _check_bucket_name(file_io: FileIO, directory: str, child: FileInfo) -> None:
    # Hive reads only bucket_N files of a base or delta (AcidUtils.bucketFileFilter and
    # parseBucketId); a directory or a bucket_ name that does not parse means the directory
    # was not written by Hive: refuse it rather than read or skip part of it.
    path = file_io.join(directory, child.name)
    expected = "only bucket_NNNNN files (and their _flush_length side files) in a base or delta"
    if child.is_dir:
        raise CorruptDataError(path, "a directory named like a bucket file", expected)
    if try_parse_bucket_file(child.name) is None:
        raise CorruptDataError(path, f"{child.name!r} is not a bucket file name", expected)


def _list_acid_dir(file_io: FileIO, directory: str, kind: FileKind) -> list[DataFile]:
    children = file_io.list_dir(directory)
    names = {child.name for child in children if not child.is_dir}
    found: list[DataFile] = []
    for child in sorted(children, key=lambda c: c.name):
        name = child.name
        if name == _ACID_VERSION_FILE:
            _check_acid_version(file_io, directory, child)
            continue
        if name.startswith(BUCKET_PREFIX) and (child.is_dir or not name.endswith(SIDE_FILE_SUFFIX)):
            _check_bucket_name(file_io, directory, child)
        if child.is_dir or is_hidden_name(name) or name.endswith(SIDE_FILE_SUFFIX):
            continue
        length = child.size
        if name + SIDE_FILE_SUFFIX in names:
            flushed = _read_flush_length(file_io, file_io.join(directory, name + SIDE_FILE_SUFFIX))
            if flushed >= 0:
                length = min(length, flushed)
        if length == 0:
            continue  # an empty bucket file (or nothing flushed yet) holds no events
        parsed = try_parse_bucket_file(name)
        found.append(DataFile(file_io.join(directory, name), kind, parsed.bucket_id if parsed else 0, length))
    return found


def plan_scan(
    file_io: FileIO, table_dir: str, write_ids: ValidWriteIdList, txns: ValidTxnList | None = None
) -> ScanPlan:
    """List a table or partition directory and choose the files a snapshot reads.

    Args:
        file_io: the filesystem.
        table_dir: the table or partition directory.
        write_ids: the reader's snapshot of the table.
        txns: decides ``_vT`` visibility; None means every transaction is committed.

    Returns:
        The plan.

    Raises:
        StorageError: ``table_dir`` does not exist.
        InvalidPathError: ``table_dir`` holds ACID directories below non-ACID subdirectories (it is
            the root of a partitioned table).
    """
    state = load_directory_state(file_io, table_dir, write_ids, txns)
    by_bucket: dict[int, list[DataFile]] = {}
    for relative in state.original_files:
        parents = relative.split("/")[:-1]
        if any(is_acid_dir_name(part) for part in parents):
            # e.g. TABLE_DIR is a partitioned table's root and this is p=1/delta_1_1/bucket_00000
            raise InvalidPathError(
                relative,
                "an ACID directory below a non-ACID subdirectory (a partition directory?)",
                "a table or partition directory whose base_/delta_ directories are its children; "
                "hint: read each partition directory",
            )
        name = posixpath.basename(relative)
        parsed = try_parse_original_file(name)
        path = file_io.join(table_dir, *relative.split("/"))
        info = file_io.info(path)
        size = 0 if info is None else info.size
        if size:
            bucket = parsed.bucket_id if parsed else 0
            by_bucket.setdefault(bucket, []).append(DataFile(path, FileKind.ORIGINAL, bucket, size))
    directories: list[tuple[str, FileKind]] = []
    if state.base is not None:
        directories.append((state.base, FileKind.BASE))
    delete_files: list[DataFile] = []
    for name in state.deltas:
        if name.startswith(DELETE_DELTA_PREFIX):
            delete_files.extend(_list_acid_dir(file_io, file_io.join(table_dir, name), FileKind.DELETE_DELTA))
        else:
            directories.append((name, FileKind.DELTA))
    for name, kind in directories:
        for data_file in _list_acid_dir(file_io, file_io.join(table_dir, name), kind):
            by_bucket.setdefault(data_file.bucket_id, []).append(data_file)
    data_files = tuple(f for bucket in sorted(by_bucket) for f in by_bucket[bucket])
    return ScanPlan(state, data_files, tuple(delete_files))


class _BoundedInput(io.RawIOBase):
    """The first ``length`` bytes of a stream: a streaming file up to its last flush."""

    def __init__(self, raw: IO[bytes], length: int) -> None:
        self._raw, self._length, self._position = raw, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._length}[whence]
        self._position = max(0, min(self._length, base + offset))
        return self._position

    def read(self, size: int = -1) -> bytes:
        left = self._length - self._position
        size = left if size is None or size < 0 else min(size, left)
        self._raw.seek(self._position)
        data = self._raw.read(size)
        self._position += len(data)
        return data

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


class OpenFile:
    """An ORC file opened through the FileIO, its event layout checked."""

    def __init__(self, file_io: FileIO, data_file: DataFile) -> None:
        self.data_file = data_file
        raw = file_io.open_input(data_file.path)
        info_size = getattr(raw, "size", None)
        full = info_size() if callable(info_size) else data_file.length
        self._stream: IO[bytes] = raw
        source: Any = raw
        if data_file.length < full:
            bounded = _BoundedInput(raw, data_file.length)
            self._stream = bounded  # type: ignore[assignment]
            source = pa.PythonFile(bounded, mode="r")
        self._source = source
        try:
            self.orc = paorc.ORCFile(source)
            self.schema: pa.Schema = self.orc.schema
        except (pa.ArrowInvalid, OSError) as e:
            self.close()
            if data_file.kind is FileKind.ORIGINAL:
                raise StorageError(
                    f"Cannot read original file {data_file.path!r} as ORC: {one_line(e)}; expected an ORC file "
                    "of a table converted to ACID"
                ) from e
            raise NotAnAcidFileError(
                f"File {data_file.path!r} is not an ACID event file: it is not ORC ({one_line(e)}); expected an "
                "ORC file of ACID events; hint: remove or move files that Hive did not write"
            ) from e
        self.is_acid = data_file.kind is not FileKind.ORIGINAL
        if self.is_acid and not is_acid_event_schema(self.schema):
            self.close()
            raise NotAnAcidFileError(
                f"File {data_file.path!r} is not an ACID event file: its columns are "
                f"{self.schema.names!r}; expected struct<operation:int,originalTransaction:bigint,"
                "bucket:int,rowId:bigint,currentTransaction:bigint,row:struct<...>>; hint: a plain "
                "(non-ACID) ORC file inside a base or delta directory is not read; move it to the "
                "table directory (an original file) or load it through an INSERT"
            )
        # Actual top-level names, by position: lower-case in query-based compaction output.
        self.names: tuple[str, ...] = tuple(self.schema.names)

    @property
    def row_struct(self) -> pa.StructType:
        """The row columns: the ``row`` struct of an event file, all columns of an original file."""
        if self.is_acid:
            # is_acid_event_schema checked that ``row`` is a struct
            return cast("pa.StructType", self.schema.field(5).type)
        return pa.struct(list(self.schema))

    def may_hold_non_inserts(self) -> bool:
        """Whether the file may hold update or delete events (legacy, non-split-update files)."""
        if self.data_file.kind is FileKind.BASE:
            stats = (self.schema.metadata or {}).get(_STATS_KEY)
            return stats is not None and _stats_non_inserts(stats)
        stats = (self.schema.metadata or {}).get(_STATS_KEY)
        return True if stats is None else _stats_non_inserts(stats)

    def constant_keys(self) -> dict[int, int]:
        """Key columns (by position) holding one value in every row, from the footer's statistics.

        Only ``operation``, ``originalTransaction``, ``bucket`` and ``currentTransaction`` count.

        An insert delta's are all constant (one write ID, one bucket and statement), so the reader
        decodes only ``rowId`` of its keys. ``rowId`` is always decoded: it carries the row count.
        """
        tail = getattr(getattr(self.orc, "reader", None), "serialized_file_tail", None)
        if not self.is_acid or tail is None:
            return {}
        by_column_id = constant_integer_columns(tail(), int(self.orc.nrows))
        # Column ID 0 is the root struct; the event columns before ``row`` are IDs 1-5.
        return {
            position: by_column_id[position + 1] for position in (0, 1, 2, 4) if position + 1 in by_column_id
        }

    def batches(self, columns: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        """Batches of at most ``batch_rows`` rows of ``columns`` (``row.<field>`` for a row field).

        Read through a dataset fragment rather than ``read_stripe``: it decodes ``batch_rows`` at a
        time, so memory does not grow with the stripe (a 64 MiB stripe holds millions of rows).
        """
        import pyarrow.dataset as ds

        row_name = self.names[5] if self.is_acid else None
        projection: dict[str, pc.Expression] = {}
        for column in columns:
            head, _, rest = column.partition(".")
            projection[column] = ds.field(head, rest) if head == row_name and rest else ds.field(column)
        fragment = ds.OrcFileFormat().make_fragment(self._source)
        try:
            # pyarrow documents a {name: expression} projection; pyarrow-stubs only knows list[str].
            yield from fragment.to_batches(
                batch_size=batch_rows,
                columns=projection,  # type: ignore[arg-type]
                use_threads=False,
            )
        except (pa.ArrowException, OSError) as e:
            # A stripe that does not decode (truncated, bit rot): name the file, read nothing more.
            raise CorruptDataError(
                self.data_file.path, f"its ORC data does not decode ({one_line(e)})", "a readable ORC file"
            ) from e

    def close(self) -> None:
        """Close the underlying stream."""
        self._stream.close()


def one_line(error: Exception) -> str:
    """The error's message on one line (acidflow prints one line; pyarrow's may span several)."""
    return ", ".join(part.strip() for part in str(error).splitlines() if part.strip())


def _stats_non_inserts(stats: bytes) -> bool:
    parts = stats.decode("ascii", errors="replace").split(",")
    try:
        return any(int(part) > 0 for part in parts[1:3])
    except ValueError:
        return True


def int64_values(array: pa.Array[Any] | pa.ChunkedArray[Any]) -> I64:
    """An integer column as an int64 numpy array."""
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.int64)


def valid_mask(write_ids: ValidWriteIdList, current: I64) -> np.ndarray | None:
    """Rows whose currentTransaction is valid, or None when all are."""
    if current.size == 0:
        return None
    low, high = int(current.min()), int(current.max())
    if write_ids.is_write_id_range_valid(low, high) is RangeResponse.ALL:
        return None
    mask = current <= write_ids.high_watermark
    if write_ids.exceptions:
        mask &= ~np.isin(current, np.asarray(write_ids.exceptions, dtype=np.int64))
    return mask


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What the footer of a file tells before reading it."""

    nrows: int
    non_inserts: bool
    row_struct: pa.StructType


def probe_file(file_io: FileIO, data_file: DataFile) -> FileFacts:
    """Open a file and read its footer's facts (rows, legacy non-inserts, row struct)."""
    opened = OpenFile(file_io, data_file)
    try:
        non_inserts = data_file.kind is not FileKind.ORIGINAL and opened.may_hold_non_inserts()
        return FileFacts(int(opened.orc.nrows), non_inserts, opened.row_struct)
    finally:
        opened.close()


def read_footers(file_io: FileIO, directory: str) -> dict[str, int]:
    """The row count in the ORC footer of every bucket file of a base or (delete) delta directory.

    Returns:
        ``{file name: rows}`` (an empty bucket file holds no events and is left out).

    Raises:
        NotAnAcidFileError: a file that is not ORC, or not of the ACID event schema (named).
        CorruptDataError: a bad ``bucket_`` name or ``_orc_acid_version`` in the directory.
    """
    name = directory.rstrip("/").rsplit("/", 1)[-1]
    kind = (
        FileKind.BASE
        if name.startswith("base_")
        else FileKind.DELETE_DELTA
        if name.startswith("delete_delta_")
        else FileKind.DELTA
    )
    return {
        data_file.path.rsplit("/", 1)[-1]: probe_file(file_io, data_file).nrows
        for data_file in _list_acid_dir(file_io, directory, kind)
    }


def is_key_ordered(names: Sequence[str]) -> bool:
    """Whether reading these inputs file by file (Hive's order) already yields row-ID order.

    True when the base and the insert deltas cover disjoint, increasing write-ID ranges (statements
    of one write ID in increasing order): every row of a later directory then has a larger
    ``originalTransaction`` (or, within one write ID, a larger statement in ``bucket``); original
    files come first with ``originalTransaction`` 0. The sequential scan then needs one stripe in
    memory instead of one per input file. The writer still validates the order, so a wrong
    answer fails the compaction instead of writing a bad file.
    """
    base: BaseDir | None = None
    deltas: list[DeltaDir] = []
    for name in names:
        if not is_acid_dir_name(name):
            continue
        parsed = parse_acid_dir(name)
        if isinstance(parsed, BaseDir):
            base = parsed
        elif not isinstance(parsed, DeleteDeltaDir):
            deltas.append(parsed)
    deltas.sort(
        key=lambda d: (d.min_write_id, -d.max_write_id, -1 if d.statement_id is None else d.statement_id)
    )
    high = -1 if base is None else base.write_id
    previous: DeltaDir | None = None
    for delta in deltas:
        same_write = (
            previous is not None
            and previous.min_write_id == previous.max_write_id == delta.min_write_id == delta.max_write_id
            and previous.statement_id is not None
            and delta.statement_id is not None
            and delta.statement_id > previous.statement_id
        )
        if delta.min_write_id <= high and not same_write:
            return False
        high, previous = max(high, delta.max_write_id), delta
    return True
