"""Merge-on-read of a Hive full-ACID table or partition at a snapshot, streamed as Arrow batches.

API::

    scan(file_io, table_dir, write_ids, txns=None, *, columns=None, filter=None, with_row_id=False,
         limit=None, ordered=False, ...)                         -> pyarrow.RecordBatchReader
    scan_table(...same arguments...)                            -> pyarrow.Table
    load_delete_events(file_io, table_dir, write_ids, txns=None) -> pyarrow.Table (the delete set)
    iter_delete_events(...same arguments...)                    -> batches of it, streamed in key order

    >>> scan_table(LocalFileIO(), "/wh/db/t", parse_valid_write_id_list("db.t:12:9223372036854775807::"),
    ...            columns=["a"], filter=pc.field("a") > 1, with_row_id=True)     # doctest: +SKIP
    row__id: struct<writeid: int64, bucketid: int32, rowid: int64>
    a: int64

How a scan works::

    scan(file_io, "/warehouse/db/t", write_ids)
        1. load_directory_state            which base, deltas, delete deltas, original files
        2. delete registry                 valid delete events (operation 2) of the delete deltas,
                                           plus legacy update/delete events found in insert deltas
               in memory (ColumnizedDeleteRegistry)    <= delete_events_in_memory events
               streamed  (SortMergedDeleteRegistry)    above that (Hive's two registries)
        3. for each data file, bucket by bucket        originals -> base -> deltas, Hive's order
               for each batch of batch_rows rows       a pyarrow.dataset ORC fragment, projected, decoded
                                                       in a second thread 2 batches ahead (file by
                                                       file); key columns the footer's statistics
                                                       say are constant are not decoded
                   keep events whose currentTransaction is valid in the snapshot
                   drop rows the registry hides        binary search on (origTxn, bucket, rowId)
                   take the ``row`` fields, add ``row__id``, apply the filter, stop at the limit
                                  |
                                  v
                row__id {writeid, bucketid, rowid} | a | b | ...      (one output batch per batch)

    base_0000010/bucket_00000                       rows of write IDs <= 10 (compacted)
    delta_0000011_0000011_0000/bucket_00000         inserts of write ID 11
    delete_delta_0000012_0000012_0000/bucket_00000  deletes of write ID 12 (keys of rows above)
    000000_0, 000000_0_copy_1                       original files (no base yet): synthetic row IDs

Rules (Hive's ``OrcRawRecordMerger`` and ``VectorizedOrcAcidRowBatchReader``):

- An event is seen only if its ``currentTransaction`` is valid in the ValidWriteIdList
  (``findRecordsWithInvalidTransactionIds``): streaming deltas hold several write IDs and compacted
  deltas may hold aborted ones.
- A valid delete event hides every version of its row ID; a valid legacy update (operation 1,
  Hive 2 tables without split-update) hides the versions written before it: the newest version of
  each row ID wins, as the merger's collapse of equal keys does.
- Original files (pre-ACID) get synthetic row IDs: write ID 0, bucket property
  ``BucketCodec.V1.encode(bucket from the file name)``, row ID = the row's position after all rows
  of the same bucket's earlier original files, in the directory state's order (``000000_0`` before
  ``000000_0_copy_1``), as ``OrcInputFormat``'s ``OffsetAndBucketProperty`` computes it.
- Every file in a base or delta directory must have the ACID event schema (column names in any
  case, so query-based compaction output reads). A plain ORC file there raises
  ``NotAnAcidFileError`` naming it. Hive 4 would read a plain file in ``delta_x_x`` as raw data
  written by ``LOAD DATA``; acidflow follows its issue 3 instead, which requires the error, so a
  misplaced file is never read silently.
- Streaming files with a ``bucket_N_flush_length`` side file are read only up to the last length
  recorded there (``OrcAcidUtils.getLastFlushLength``).
- Row columns map to the output schema by position (Hive's positional ACID schema evolution), so
  files with ``_col0`` names and files with real names read together; missing trailing columns are
  null.

Output: the row columns (projected with ``columns``) and, with ``with_row_id``, a first column
``row__id`` of type ``struct<writeid:bigint, bucketid:int, rowid:bigint>`` holding the stored
(not normalized) bucket property. Batches come bucket by bucket, or with ``ordered=True`` in
Hive's ``RecordIdentifier`` order (writeid, bucketid, rowid).

Invariants: peak memory is the delete set (24 bytes per event, or above
``delete_events_in_memory`` one window per delete file) plus about three batches of
``batch_rows`` rows, whatever the table size. ``ordered`` reads file by file when that already is
row-ID order (one bucket, disjoint insert-only write-ID ranges: the usual history); otherwise it
merges and keeps one batch (and the ORC reader's stripe) per data file open. The result equals
applying the history's events in write-ID order to a dictionary.
Not here: deciding directories (``state``), listing (``directory``), planning and opening files
(``files``), writing (``writer``), threads (``stream``).
Errors: ``NotAnAcidFileError`` (plain file where events must be, or not ORC at all),
``CorruptDataError`` (a stripe that does not decode; in a base or delta: a ``bucket_`` name that
does not parse, a directory named ``bucket_N``, an ``_orc_acid_version`` other than ``2``: the
directory is refused, never read in part),
``NoSuchColumnError`` (projection), ``InvalidScanFilterError`` (a filter that does not evaluate on
the row columns), ``StorageError`` (missing directory or unreadable original file), and whatever
``load_directory_state`` raises.
Concurrency: reads only; a file deleted by a cleaner during the scan raises ``StorageError``.
"""

from __future__ import annotations

import heapq
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acid_core.bucket_codec import BucketCodec
from acid_core.errors import (
    CorruptDataError,
    InvalidScanFilterError,
    NoSuchColumnError,
)
from acid_core.orc.deletes import (
    LONG_MAX,
    ColumnizedDeleteRegistry,
    DeleteRegistry,
    EventChunk,
    SortMergedDeleteRegistry,
    hide_all,
    lex_search,
    normalize_bucket,
)
from acid_core.orc.files import (
    DataFile,
    FileFacts,
    FileKind,
    OpenFile,
    ScanPlan,
    int64_values,
    is_key_ordered,
    one_line,
    plan_scan,
    probe_file,
    valid_mask,
)
from acid_core.orc.schema import (
    EVENT_COLUMN_NAMES,
    OPERATION_DELETE,
    OPERATION_INSERT,
    ROW_ID_COLUMN,
    ROW_ID_TYPE,
)
from acid_core.orc.stream import prefetch
from acid_core.paths import DeleteDeltaDir, DeltaDir, parse_acid_dir

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Sequence

    from acid_core.fs import FileIO
    from acid_core.orc.deletes import I64
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_DELETE_EVENTS_IN_MEMORY",
    "DELETE_EVENTS_IN_MEMORY",
    "DataFile",
    "FileKind",
    "ScanPlan",
    "iter_delete_events",
    "load_delete_events",
    "plan_scan",
    "scan",
    "scan_table",
]

DELETE_EVENTS_IN_MEMORY: Final = "reader.delete-events-in-memory"
"""Config key: above this many delete events the sort-merge registry is used (Hive's
``hive.transactional.events.mem``, default 10,000,000)."""
DEFAULT_DELETE_EVENTS_IN_MEMORY: Final = 10_000_000
DEFAULT_BATCH_ROWS: Final = 65536
"""Rows decoded per batch: memory per open file is about this many rows of the read columns."""

_STATS_KEY: Final = b"hive.acid.stats"
_KEY_COLUMNS: Final = EVENT_COLUMN_NAMES[:5]
_ROW_ID_FIELDS: Final = tuple(ROW_ID_TYPE)
_POSITION_COLUMN: Final = "__acidflow_position"


def _event_chunks(
    file_io: FileIO,
    data_file: DataFile,
    write_ids: ValidWriteIdList,
    non_inserts_only: bool,
    batch_rows: int = 0,
) -> Iterator[EventChunk]:
    """The valid overriding events of one file, batch by batch, in file (key) order."""
    opened = OpenFile(file_io, data_file)
    try:
        names = opened.names
        columns = list(names[:5]) if non_inserts_only else list(names[1:5])
        for batch in opened.batches(columns, batch_rows or DEFAULT_BATCH_ROWS):
            o = int64_values(batch.column(names[1]))
            b = normalize_bucket(int64_values(batch.column(names[2])))
            r = int64_values(batch.column(names[3]))
            current = int64_values(batch.column(names[4]))
            keep = valid_mask(write_ids, current)
            if non_inserts_only:
                operation = int64_values(batch.column(names[0]))
                overriding = operation != OPERATION_INSERT
                keep = overriding if keep is None else keep & overriding
                # A delete hides every version; a legacy update hides the versions before it.
                hide = np.where(operation == OPERATION_DELETE, LONG_MAX, current)
            else:
                hide = hide_all(o.size)
            if keep is not None:
                o, b, r = o[keep], b[keep], r[keep]
                hide = hide[keep] if non_inserts_only else hide_all(o.size)
            yield o, b, r, hide
    finally:
        opened.close()


def _build_registry(
    file_io: FileIO,
    plan: ScanPlan,
    facts: dict[str, FileFacts],
    write_ids: ValidWriteIdList,
    in_memory_limit: int,
    batch_rows: int,
) -> DeleteRegistry | None:
    sources: list[tuple[DataFile, bool]] = [(f, False) for f in plan.delete_files]
    sources.extend(
        (f, True) for f in plan.data_files if f.kind is not FileKind.ORIGINAL and facts[f.path].non_inserts
    )
    total = sum(facts[f.path].nrows for f, _ in sources)
    if total == 0:
        return None
    if total <= in_memory_limit:
        chunks = (
            chunk
            for data_file, non_inserts in sources
            for chunk in _event_chunks(file_io, data_file, write_ids, non_inserts, batch_rows)
        )
        registry = ColumnizedDeleteRegistry(chunks, capacity=total)
        return registry if len(registry) else None

    def open_streams() -> list[tuple[str, Iterator[EventChunk]]]:
        return [
            (f.path, _event_chunks(file_io, f, write_ids, non_inserts, batch_rows))
            for f, non_inserts in sources
        ]

    return SortMergedDeleteRegistry(open_streams)


_DELETE_SCHEMA: Final = pa.schema(
    [(n, t) for n, t in zip(_KEY_COLUMNS[1:5], (pa.int64(), pa.int32(), pa.int64(), pa.int64()), strict=True)]
)


def _delete_file_keys(
    file_io: FileIO, data_file: DataFile, write_ids: ValidWriteIdList, batch_rows: int
) -> Iterator[tuple[I64, I64, I64, I64]]:
    """The valid delete events of one delete-delta file, batch by batch, in the file's key order."""
    opened = OpenFile(file_io, data_file)
    try:
        names = opened.names
        for batch in opened.batches(list(names[:5]), batch_rows):
            current = int64_values(batch.column(names[4]))
            keep = int64_values(batch.column(names[0])) == OPERATION_DELETE
            valid = valid_mask(write_ids, current)
            if valid is not None:
                keep &= valid
            keys = [int64_values(batch.column(n))[keep] for n in names[1:4]]
            if keys[0].size:
                yield keys[0], keys[1], keys[2], current[keep]
    finally:
        opened.close()


class _DeleteHead:
    """One delete file's unread events in the merge: the rest of its batches plus its iterator."""

    def __init__(self, stream: Iterator[tuple[I64, I64, I64, I64]]) -> None:
        self.stream = stream
        self.keys: tuple[I64, I64, I64, I64] = tuple(np.empty(0, dtype=np.int64) for _ in range(4))  # type: ignore[assignment]
        self.done = False
        self.refill()

    def refill(self) -> None:
        """Append the next batch (or mark the file done)."""
        more = next(self.stream, None)
        if more is None:
            self.done = True
        else:
            self.keys = tuple(np.concatenate([a, b]) for a, b in zip(self.keys, more, strict=True))  # type: ignore[assignment]

    def last(self) -> tuple[int, int, int]:
        o, b, r, _ = self.keys
        return int(o[-1]), int(b[-1]), int(r[-1])

    def take(self, count: int) -> tuple[I64, I64, I64, I64]:
        taken = tuple(a[:count] for a in self.keys)
        self.keys = tuple(a[count:] for a in self.keys)  # type: ignore[assignment]
        return taken  # type: ignore[return-value]


def iter_delete_events(
    file_io: FileIO,
    table_dir: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None = None,
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """``load_delete_events`` as a stream: a k-way merge holding about one batch per delete file.

    Each delete-delta file is sorted by key, so the merge emits, round by round, every buffered
    event below the smallest "last buffered key" of the files not yet exhausted (no later event can
    sort before it), sorted by (originalTransaction, bucket, rowId, currentTransaction); events with
    equal keys are always emitted in the same round, so the whole stream is in that order. Memory:
    about ``batch_rows`` events per delete file, whatever the size of the delete set.

    Raises:
        NotAnAcidFileError: a delete delta holds a file without the event schema.
    """
    plan = plan_scan(file_io, table_dir, write_ids, txns)
    heads = [_DeleteHead(_delete_file_keys(file_io, f, write_ids, batch_rows)) for f in plan.delete_files]
    while True:
        heads = [h for h in heads if h.keys[0].size or not h.done]
        if not heads:
            return
        live = [h for h in heads if not h.done]
        bound = min(h.last() for h in live) if live else None
        parts = []
        for head in heads:
            o, b, r, _ = head.keys
            count = o.size if bound is None else lex_search(o, b, r, bound, right=False)
            if count:
                parts.append(head.take(count))
        if parts:
            o, b, r, c = (np.concatenate(column) for column in zip(*parts, strict=True))
            order = np.lexsort((c, r, b, o))
            arrays = [pa.array(a[order], t) for a, t in zip((o, b, r, c), _DELETE_SCHEMA.types, strict=True)]
            for start in range(0, order.size, batch_rows):
                yield pa.RecordBatch.from_arrays(arrays, schema=_DELETE_SCHEMA).slice(start, batch_rows)
        for head in live:
            if bound is not None and head.last() == bound:
                head.refill()


def load_delete_events(
    file_io: FileIO, table_dir: str, write_ids: ValidWriteIdList, txns: ValidTxnList | None = None
) -> pa.Table:
    """The delete set a snapshot applies: valid delete events of the delete deltas it reads.

    Args:
        file_io: the filesystem.
        table_dir: the table or partition directory.
        write_ids: the snapshot.
        txns: decides ``_vT`` visibility; None means every transaction is committed.

    Returns:
        Columns ``originalTransaction``, ``bucket`` (as stored), ``rowId``, ``currentTransaction``,
        sorted by (originalTransaction, bucket, rowId, currentTransaction), duplicates kept. The
        whole set in memory: stream it with ``iter_delete_events`` instead.

    Raises:
        NotAnAcidFileError: a delete delta holds a file without the event schema.
    """
    batches = list(iter_delete_events(file_io, table_dir, write_ids, txns))
    return pa.Table.from_batches(batches, schema=_DELETE_SCHEMA)


@dataclass(slots=True)
class _Output:
    """The output row schema and how a file's row struct maps onto it."""

    row_fields: tuple[pa.Field[Any], ...]
    selected: tuple[int, ...]  # output positions of the projected columns, in output order
    read_all_for_filter: bool
    filter: pc.Expression | None
    with_row_id: bool
    schema: pa.Schema = field(init=False)

    def __post_init__(self) -> None:
        fields = [self.row_fields[i] for i in self.selected]
        if self.with_row_id:
            fields.insert(0, pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
        self.schema = pa.schema(fields)

    def needed_positions(self) -> tuple[int, ...]:
        if self.read_all_for_filter:
            return tuple(range(len(self.row_fields)))
        return self.selected


def _choose_output(
    row_struct: pa.StructType | None,
    schema: pa.Schema | None,
    columns: Sequence[str] | None,
    filter_: pc.Expression | None,
    with_row_id: bool,
) -> _Output:
    if schema is not None:
        row_fields = tuple(schema)
    elif row_struct is not None:
        row_fields = tuple(row_struct.field(i) for i in range(row_struct.num_fields))
    else:
        row_fields = ()
    names = [f.name for f in row_fields]
    lowered = {name.lower(): i for i, name in enumerate(names)}
    if columns is None:
        selected = tuple(range(len(row_fields)))
    else:
        picked: list[int] = []
        for column in columns:
            index = lowered.get(column.lower())
            if index is None:
                raise NoSuchColumnError(column, tuple(names))
            picked.append(index)
        selected = tuple(picked)
    read_all = filter_ is not None and columns is not None
    return _Output(row_fields, selected, read_all, filter_, with_row_id)


def _row_columns(
    opened: OpenFile, batch: pa.RecordBatch, output: _Output, positions: tuple[int, ...]
) -> list[pa.Array[Any]]:
    """The output row columns (all of ``positions``) of one batch, mapped by position."""
    row_struct = opened.row_struct
    arrays: list[pa.Array[Any]] = []
    children: dict[str, pa.Array[Any]] = {}
    if not opened.is_acid:
        children = {name: batch.column(name) for name in batch.schema.names}
    else:
        prefix = opened.names[5] + "."
        children = {
            name[len(prefix) :]: batch.column(name) for name in batch.schema.names if name.startswith(prefix)
        }
    for position in positions:
        target = output.row_fields[position]
        if position < row_struct.num_fields:
            array = children[row_struct.field(position).name]
            if array.type != target.type:
                array = _cast_column(opened, array, target, position)
        else:
            array = pa.nulls(batch.num_rows, target.type)
        arrays.append(array)
    return arrays


_HIVE_TYPE_NAMES: Final = {
    pa.bool_(): "boolean",
    pa.int8(): "tinyint",
    pa.int16(): "smallint",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.string(): "string",
    pa.large_string(): "string",
    pa.binary(): "binary",
    pa.date32(): "date",
}


def _hive_type_name(arrow_type: pa.DataType) -> str:
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    if pa.types.is_timestamp(arrow_type):
        return "timestamp"
    return _HIVE_TYPE_NAMES.get(arrow_type, str(arrow_type))


def _cast_column(
    opened: OpenFile, array: pa.Array[Any], target: pa.Field[Any], position: int
) -> pa.Array[Any]:
    """A row column converted to the table's type (Hive's positional schema evolution), or a named refusal."""
    try:
        return array.cast(target.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        found = opened.row_struct.field(position)
        raise CorruptDataError(
            opened.data_file.path,
            f"row column {position + 1} ({found.name!r}) is {_hive_type_name(found.type)} and does not convert "
            f"to the table's column {target.name!r} of type {_hive_type_name(target.type)} ({one_line(e)})",
            f"a file written with the table's row type ({target.name!r} {_hive_type_name(target.type)})",
        ) from e


def _file_columns(
    opened: OpenFile, positions: tuple[int, ...], need_operation: bool, constant: Collection[int] = ()
) -> list[str]:
    row_struct = opened.row_struct
    in_file = [p for p in positions if p < row_struct.num_fields]
    if not opened.is_acid:
        return [row_struct.field(p).name for p in in_file]
    names = opened.names
    wanted = (0, 1, 2, 3, 4) if need_operation else (1, 2, 3, 4)
    columns = [names[p] for p in wanted if p not in constant]
    columns.extend(f"{names[5]}.{row_struct.field(p).name}" for p in in_file)
    return columns


_Keyed = tuple[pa.RecordBatch, "I64", "I64", "I64"]
"""An output batch with its rows' (writeid, bucket as stored, rowid) keys."""

_PREFETCH_BATCHES: Final = 2
"""Decoded batches kept ready by the decoding thread: pyarrow decodes ORC without the GIL, so the
next batch decodes on one core while this one's deletes are applied on the other."""


@dataclass(slots=True)
class _FileRead:
    """One data file being read: what is decoded from it and, for an original file, its next row ID."""

    opened: OpenFile
    positions: tuple[int, ...]
    columns: list[str]
    need_operation: bool
    next_row_id: int
    constants: dict[int, int]  # key columns not decoded (one value in the whole file), by position
    last_event: tuple[int, int, int, int] | None = None  # (writeid, bucket, rowid, current) read last
    events_read: int = 0

    def key(self, batch: pa.RecordBatch, position: int) -> I64:
        """Event column ``position`` (0-4) of a batch as int64, decoded or from the footer's statistics."""
        value = self.constants.get(position)
        if value is not None:
            return np.full(batch.num_rows, value, dtype=np.int64)
        return int64_values(batch.column(self.opened.names[position]))


class _Head:
    """One file's position in the ordered merge."""

    def __init__(self, batches: Iterator[_Keyed]) -> None:
        self.batches = batches
        self.batch: pa.RecordBatch = pa.RecordBatch.from_pylist([])
        self.o = self.b = self.r = np.empty(0, dtype=np.int64)
        self.position = 0

    def advance(self) -> bool:
        for batch, o, b, r in self.batches:
            if o.size:
                self.batch, self.o, self.b, self.r, self.position = batch, o, b, r, 0
                return True
        return False

    def key(self) -> tuple[int, int, int]:
        at = self.position
        return int(self.o[at]), int(self.b[at]), int(self.r[at])


_BUCKET_VERSION_SHIFT = 29
"""BucketCodec: bits 29-31 of the bucket field hold the codec version (0 = V0, no statement ID)."""


def _check_unique_row_ids(
    head: _Head, start: int, path: str, last: tuple[tuple[int, int, int], str] | None
) -> tuple[tuple[int, int, int], str]:
    # Every visible row has its own row ID (an update is a delete plus a new insert); two equal
    # IDs in the merged order mean copied or corrupt files: refuse rather than return both.
    o, b, r = head.o[start : head.position], head.b[start : head.position], head.r[start : head.position]
    equal = (o[1:] == o[:-1]) & (b[1:] == b[:-1]) & (r[1:] == r[:-1])
    first = (int(o[0]), int(b[0]), int(r[0]))
    duplicate = first if last is not None and last[0] == first else None
    if (
        duplicate is not None
        and last is not None
        and duplicate[1] >> _BUCKET_VERSION_SHIFT == 0
        and posixpath.dirname(last[1]) != posixpath.dirname(path)
    ):
        # HIVE-14514: a V0 bucket field has no statement ID, so two statements of one write
        # (legacy Hive 2.x writers) can give rows equal IDs; Hive returns both, and so do we.
        duplicate = None
    other = last[1] if duplicate is not None and last is not None else path
    if duplicate is None and equal.any():
        at = int(np.argmax(equal))
        duplicate = (int(o[at]), int(b[at]), int(r[at]))
    if duplicate is not None:
        raise CorruptDataError(
            path,
            f"row ID (writeid={duplicate[0]}, bucketid={duplicate[1]}, rowid={duplicate[2]}) is also in "
            f"{other!r}",
            "each visible row ID once (an update deletes the old row ID and inserts a new one)",
        )
    return (int(o[-1]), int(b[-1]), int(r[-1])), path


def _after_previous(values: I64, previous: int) -> I64:
    """``values`` shifted one place down, ``previous`` (the file's last value so far) in front."""
    shifted = np.empty_like(values)
    shifted[0] = previous
    shifted[1:] = values[:-1]
    return shifted


def _repeated_events(read: _FileRead, o: I64, b: I64, r: I64, current: I64) -> npt.NDArray[np.bool_] | None:
    """Which events of a batch repeat the event before them in their file (same row ID and write ID).

    Hive's ``OrcRawRecordMerger.next`` collapses an event whose key (row ID and currentTransaction)
    equals the one it returned last (``ReaderKey.isSameRow``) and returns only the first: every
    reader and the compactor see such a row once, and so do ``scan`` and ``compact``.

    Raises:
        CorruptDataError: an event sorts before the one before it in the file (Hive writes each
            file in (writeid, bucketid, rowid) order; the merge and the compactor rely on it).
    """
    count = o.size
    if count == 0:
        return None
    last, start = read.last_event, read.events_read
    read.last_event = (int(o[-1]), int(b[-1]), int(r[-1]), int(current[-1]))
    read.events_read += count
    first = last or (int(o[0]), int(b[0]), int(r[0]), int(current[0]))
    po, pb, pr = (_after_previous(x, first[i]) for i, x in enumerate((o, b, r)))
    backwards = (o < po) | ((o == po) & ((b < pb) | ((b == pb) & (r < pr))))
    if backwards.any():
        at = int(np.argmax(backwards))
        raise CorruptDataError(
            read.opened.data_file.path,
            f"event {start + at} has row ID (writeid={int(o[at])}, bucketid={int(b[at])}, rowid={int(r[at])}) "
            f"after (writeid={int(po[at])}, bucketid={int(pb[at])}, rowid={int(pr[at])})",
            "events in (writeid, bucketid, rowid) order in each file, as Hive writes them",
        )
    repeated = (o == po) & (b == pb) & (r == pr) & (current == _after_previous(current, first[3]))
    if last is None:
        repeated[0] = False
    return repeated if repeated.any() else None


class _Scanner:
    def __init__(
        self,
        file_io: FileIO,
        plan: ScanPlan,
        write_ids: ValidWriteIdList,
        output: _Output,
        registry: DeleteRegistry | None,
        limit: int | None,
        batch_rows: int,
    ) -> None:
        self.batch_rows = batch_rows
        self.need_keys = output.with_row_id or output.filter is not None
        self.file_io, self.plan, self.write_ids = file_io, plan, write_ids
        self.output, self.registry, self.limit = output, registry, limit
        self.original_rows: dict[int, int] = {}
        self.key_ordered = False

    def batches(self, ordered: bool) -> Iterator[pa.RecordBatch]:
        remaining = self.limit
        keyed: Iterator[_Keyed] | None = None
        try:
            if remaining is not None and remaining <= 0:
                return
            if ordered:
                self.need_keys = True
            if ordered and self.key_ordered:
                keyed = self._sequential(check_unique=True)
            else:
                keyed = self._merged() if ordered else self._sequential()
            for batch, *_ in keyed:
                if remaining is not None:
                    if batch.num_rows >= remaining:
                        yield batch.slice(0, remaining)
                        return
                    remaining -= batch.num_rows
                if batch.num_rows:
                    yield batch
        finally:
            close = getattr(keyed, "close", None)
            if close is not None:
                close()  # stops the decoding thread before the registry goes
            if self.registry is not None:
                self.registry.close()

    def _sequential(self, check_unique: bool = False) -> Iterator[_Keyed]:
        """File by file, one file open, decoded in a second thread ``_PREFETCH_BATCHES`` ahead.

        ``check_unique``: the files already are in row-ID order (``ordered`` without a merge);
        refuse equal row IDs as the merge does.
        """
        last: tuple[tuple[int, int, int], str] | None = None
        for read, batch in prefetch(self._decoded(), _PREFETCH_BATCHES, name="acidflow-scan-decode"):
            keyed = self._keyed(read, batch)
            if check_unique and keyed[1].size:
                head = _Head(iter(()))
                head.o, head.b, head.r, head.position = keyed[1], keyed[2], keyed[3], keyed[1].size
                last = _check_unique_row_ids(head, 0, read.opened.data_file.path, last)
            yield keyed

    def _decoded(self) -> Iterator[tuple[_FileRead, pa.RecordBatch]]:
        """Every data file's decoded batches in plan order, each file closed after its last batch."""
        for data_file in self.plan.data_files:
            yield from self._file_decoded(data_file)

    def _file_decoded(self, data_file: DataFile) -> Iterator[tuple[_FileRead, pa.RecordBatch]]:
        """One data file's decoded batches; the file is closed after its last batch (or on close)."""
        read = self._open(data_file)
        try:
            for batch in read.opened.batches(read.columns, self.batch_rows):
                yield read, batch
        finally:
            read.opened.close()

    def _merged(self) -> Iterator[_Keyed]:
        """A k-way merge of the files' batches into Hive's row-ID order (each file is sorted)."""
        heads: list[_Head] = []
        paths: list[str] = []
        heap: list[tuple[tuple[int, int, int], int]] = []
        for data_file in self.plan.data_files:
            head = _Head(self._file_batches(data_file))
            if head.advance():
                heads.append(head)
                paths.append(data_file.path)
                heapq.heappush(heap, (head.key(), len(heads) - 1))
        last: tuple[tuple[int, int, int], str] | None = None
        while heap:
            _, index = heapq.heappop(heap)
            head = heads[index]
            if heap:
                o, b, r = head.o[head.position :], head.b[head.position :], head.r[head.position :]
                count = max(1, lex_search(o, b, r, heap[0][0], right=True))
            else:
                count = head.o.size - head.position
            start, head.position = head.position, head.position + count
            last = _check_unique_row_ids(head, start, paths[index], last)
            yield (
                head.batch.slice(start, count),
                head.o[start : head.position],
                head.b[start : head.position],
                head.r[start : head.position],
            )
            if head.position < head.o.size or head.advance():
                heapq.heappush(heap, (head.key(), index))

    def _file_batches(self, data_file: DataFile) -> Iterator[_Keyed]:
        for read, batch in self._file_decoded(data_file):
            yield self._keyed(read, batch)

    def _open(self, data_file: DataFile) -> _FileRead:
        """Open a data file and decide what to decode from it (files are opened in plan order)."""
        opened = OpenFile(self.file_io, data_file)
        try:
            positions = self.output.needed_positions()
            if data_file.kind is FileKind.ORIGINAL:
                bucket = data_file.bucket_id
                offset = self.original_rows.get(bucket, 0)
                # OffsetAndBucketProperty: the rows of this bucket's earlier original files come first.
                self.original_rows[bucket] = offset + int(opened.orc.nrows)
                columns = _file_columns(opened, positions, need_operation=False)
                return _FileRead(opened, positions, columns, False, offset, {})
            need_operation = opened.may_hold_non_inserts()
            constants = opened.constant_keys()
            columns = _file_columns(opened, positions, need_operation, constants)
            return _FileRead(opened, positions, columns, need_operation, 0, constants)
        except BaseException:
            opened.close()
            raise

    def _keyed(self, read: _FileRead, batch: pa.RecordBatch) -> _Keyed:
        if read.opened.data_file.kind is FileKind.ORIGINAL:
            return self._original_batch(read, batch)
        return self._event_batch(read, batch)

    def _original_batch(self, read: _FileRead, batch: pa.RecordBatch) -> _Keyed:
        n = batch.num_rows
        r = np.arange(read.next_row_id, read.next_row_id + n, dtype=np.int64)
        read.next_row_id += n
        o = np.zeros(n, dtype=np.int64)
        b = np.full(n, BucketCodec.V1.encode_property(read.opened.data_file.bucket_id), dtype=np.int64)
        hidden = None if self.registry is None else self.registry.hidden(o, b, r, o)
        keep = None if hidden is None else ~hidden
        return self._emit(read.opened, batch, read.positions, keep, (o, b, r))

    def _event_batch(self, read: _FileRead, batch: pa.RecordBatch) -> _Keyed:
        current = read.key(batch, 4)
        keep = valid_mask(self.write_ids, current)
        if read.need_operation:
            is_row = read.key(batch, 0) != OPERATION_DELETE
            keep = is_row if keep is None else keep & is_row
        o = read.key(batch, 1)
        raw_bucket = read.key(batch, 2)
        r = read.key(batch, 3)
        repeated = _repeated_events(read, o, raw_bucket, r, current)
        if repeated is not None:
            keep = ~repeated if keep is None else keep & ~repeated
        if self.registry is not None:
            if keep is None:
                hidden = self.registry.hidden(o, normalize_bucket(raw_bucket), r, current)
                keep = None if hidden is None else ~hidden
            elif keep.any():
                index = np.flatnonzero(keep)
                hidden = self.registry.hidden(
                    o[index], normalize_bucket(raw_bucket[index]), r[index], current[index]
                )
                if hidden is not None:
                    keep[index[hidden]] = False
        return self._emit(read.opened, batch, read.positions, keep, (o, raw_bucket, r))

    def _emit(
        self,
        opened: OpenFile,
        batch: pa.RecordBatch,
        positions: tuple[int, ...],
        keep: npt.NDArray[np.bool_] | None,
        key: tuple[I64, I64, I64],
    ) -> _Keyed:
        output = self.output
        if keep is not None and not keep.any():
            empty = np.empty(0, dtype=np.int64)
            return _empty_batch(output.schema), empty, empty, empty
        arrays = _row_columns(opened, batch, output, positions)
        rows = batch.num_rows
        if keep is not None:
            # Filter only the output columns, not the key columns read alongside them.
            mask = pa.array(keep)
            arrays = [array.filter(mask) for array in arrays]
            rows = int(np.count_nonzero(keep))
            if self.need_keys:
                key = (key[0][keep], key[1][keep], key[2][keep])
        if output.filter is not None and rows:
            names = [output.row_fields[p].name for p in positions]
            position = pa.array(np.arange(rows, dtype=np.int64))
            table = pa.Table.from_arrays([*arrays, position], names=[*names, _POSITION_COLUMN])
            kept = table.filter(output.filter).column(_POSITION_COLUMN).to_numpy()
            arrays = [array.take(pa.array(kept)) for array in arrays]
            key = (key[0][kept], key[1][kept], key[2][kept])
        by_position = dict(zip(positions, arrays, strict=True))
        columns: list[pa.Array[Any]] = [by_position[p] for p in output.selected]
        if output.with_row_id:
            row_id = pa.StructArray.from_arrays(
                [
                    pa.array(key[0], pa.int64()),
                    pa.array(key[1].astype(np.int32), pa.int32()),
                    pa.array(key[2], pa.int64()),
                ],
                fields=list(_ROW_ID_FIELDS),
            )
            columns.insert(0, row_id)
        if not columns:  # no column selected: only the row count matters
            no_fields = cast("pa.StructArray", pa.array([{}] * rows, type=pa.struct([])))
            counted = pa.RecordBatch.from_struct_array(no_fields)
            return counted, key[0], key[1], key[2]
        return pa.RecordBatch.from_arrays(columns, schema=output.schema), key[0], key[1], key[2]


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


def _check_filter(expression: pc.Expression, row_fields: tuple[pa.Field[Any], ...]) -> None:
    """Evaluate the filter on no rows, so a bad column or type fails before any data is read."""
    empty = pa.schema(list(row_fields)).empty_table()
    try:
        result = empty.filter(expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as e:
        raise InvalidScanFilterError(str(expression), one_line(e), tuple(f.name for f in row_fields)) from e
    del result


def _row_struct_of_plan(plan: ScanPlan, facts: dict[str, FileFacts]) -> pa.StructType | None:
    # The newest file's row columns: after ALTER TABLE ADD COLUMNS it has them all.
    for candidates in (plan.data_files, plan.delete_files):
        ordered = sorted(candidates, key=lambda f: (f.kind is not FileKind.ORIGINAL, f.path))
        if ordered:
            return facts[ordered[-1].path].row_struct
    return None


def _reads_in_key_order(plan: ScanPlan, facts: dict[str, FileFacts]) -> bool:
    """Whether reading file by file already yields Hive's row-ID order (no k-way merge needed).

    True for one bucket whose base and insert deltas cover disjoint, increasing write-ID ranges
    and hold inserts only (the usual history): each insert carries its own write ID as
    ``originalTransaction``. Statements of one write (equal ranges) and legacy update events
    (an older ``originalTransaction`` in a newer delta) take the merge.
    """
    if len(plan.bucket_ids) > 1 or any(facts[f.path].non_inserts for f in plan.data_files):
        return False
    names = [name for name in (plan.state.base, *plan.state.deltas) if name is not None]
    ranges = [
        (parsed.min_write_id, parsed.max_write_id)
        for parsed in map(parse_acid_dir, names)
        if isinstance(parsed, DeltaDir) and not isinstance(parsed, DeleteDeltaDir)
    ]
    return len(ranges) == len(set(ranges)) and is_key_ordered(names)


def scan(
    file_io: FileIO,
    table_dir: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None = None,
    *,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    with_row_id: bool = False,
    limit: int | None = None,
    schema: pa.Schema | None = None,
    delete_events_in_memory: int = DEFAULT_DELETE_EVENTS_IN_MEMORY,
    ordered: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    plan: ScanPlan | None = None,
) -> pa.RecordBatchReader:
    """Merge-on-read of a table or partition at a snapshot, as a stream of Arrow batches.

    Args:
        file_io: the filesystem.
        table_dir: the table or partition directory.
        write_ids: the reader's ValidWriteIdList for the table.
        txns: the ValidTxnList deciding ``_vT`` visibility; None means all committed.
        columns: row columns to return, in this order (case-insensitive); None for all.
        filter: a ``pyarrow.compute`` Expression on row columns; rows where it is not true are
            dropped. With ``columns``, every row column is read so the filter may use any of them.
        with_row_id: add the ``row__id`` struct column first.
        limit: stop after this many rows.
        schema: the table's row columns (names and types); files map onto it by position.
            Default: the row columns of the newest file.
        delete_events_in_memory: above this many delete events (counted from file footers) the
            sort-merge registry streams them instead of loading them.
        ordered: return rows in Hive's row-ID order ``(writeid, bucketid, rowid)`` by a k-way
            merge of the files instead of file by file; every data file is then open at once,
            with one batch each (mind the open-file limit for partitions with thousands of files).
        batch_rows: rows decoded per batch (and the largest output batch).
        plan: read exactly these files (a ``plan_scan`` result, possibly ``for_bucket``) instead
            of listing ``table_dir`` now: a plan made once on a driver is read the same on every
            executor.

    Returns:
        A reader of batches with the output schema (see the module docstring).

    Raises:
        NotAnAcidFileError: a base or delta file without the event schema.
        NoSuchColumnError: a requested column is not a row column.
        InvalidScanFilterError: the filter names an unknown column or compares mismatched types.
        StorageError: ``table_dir`` is missing or a file cannot be read.
    """
    if plan is None:
        plan = plan_scan(file_io, table_dir, write_ids, txns)
    # Every footer first: a misplaced plain file is rejected before any row is returned.
    facts = {f.path: probe_file(file_io, f) for f in (*plan.data_files, *plan.delete_files)}
    row_struct = None if schema is not None else _row_struct_of_plan(plan, facts)
    output = _choose_output(row_struct, schema, columns, filter, with_row_id)
    if filter is not None:
        _check_filter(filter, output.row_fields)
    registry = _build_registry(file_io, plan, facts, write_ids, delete_events_in_memory, batch_rows)
    scanner = _Scanner(file_io, plan, write_ids, output, registry, limit, batch_rows)
    scanner.key_ordered = ordered and _reads_in_key_order(plan, facts)
    return pa.RecordBatchReader.from_batches(output.schema, scanner.batches(ordered))


def scan_table(
    file_io: FileIO,
    table_dir: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None = None,
    *,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    with_row_id: bool = False,
    limit: int | None = None,
    schema: pa.Schema | None = None,
    delete_events_in_memory: int = DEFAULT_DELETE_EVENTS_IN_MEMORY,
    ordered: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> pa.Table:
    """``scan`` collected into one ``pyarrow.Table`` (the whole result in memory).

    >>> import tempfile
    >>> from acid_core.fs import LocalFileIO
    >>> from acid_core.writeids import ValidWriteIdList
    >>> scan_table(LocalFileIO(), tempfile.mkdtemp(), ValidWriteIdList()).num_rows
    0
    """
    reader = scan(
        file_io,
        table_dir,
        write_ids,
        txns,
        columns=columns,
        filter=filter,
        with_row_id=with_row_id,
        limit=limit,
        schema=schema,
        delete_events_in_memory=delete_events_in_memory,
        ordered=ordered,
        batch_rows=batch_rows,
    )
    return reader.read_all()
