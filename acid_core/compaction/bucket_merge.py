"""The merge of one bucket of one compaction: the part that runs on an executor (embedded or Spark).

::

    BucketTask (JSON)  ──compact_bucket──>  <partition>/<staging>/<output>/bucket_N   + BucketResult
                                            (events written, key checksum per output file)
    verify_output_file(io, id, output)      the driver re-reads each file: count and checksum

``compact_bucket`` is the merge-on-read reader itself (``orc.reader.scan`` with ``ordered=True``
and ``with_row_id=True``) over a *view* of the partition that shows only the task's inputs and only
its bucket's files, so a compacted directory holds exactly what a reader at the compactor's
snapshot reads; a minor compaction's delete events are streamed in key order by
``iter_delete_events``. Memory: the bucket's delete events (for minor, one batch per delete file)
plus one stripe when the inputs' write-ID ranges are disjoint and increasing (``is_key_ordered``),
or one stripe per input file, plus two batches checked ahead. Speed: the merge and the writer's
checks run in a producer thread while the calling thread encodes (pyarrow releases the GIL in both ORC codecs), and
``run_tasks_embedded`` compacts one bucket per core (``bench/bench_compaction.py``).

Invariants: a task and its result round-trip through JSON (Spark ships them); a task writes only
below its staging directory.
Not here: the compaction transaction, planning, renaming and committing (``worker``).
Errors: ``CompactionVerificationError`` (``verify_output_file``); ``ShiftedStructValuesError`` (an
input written with pyarrow's nested-struct loss: ``refuse_shifted_inputs``, before a row is
merged); the reader's and writer's errors.
"""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from typing import IO, TYPE_CHECKING, Any, Final, Literal, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acid_core.compaction.rebalance import OrderKey, bucket_property, bucket_slice, parse_order_by
from acid_core.errors import (
    AcidError,
    CompactionVerificationError,
    CorruptDataError,
    ShiftedStructValuesError,
    one_line,
)
from acid_core.fs import FileInfo, file_io_for
from acid_core.orc.files import FileKind, OpenFile, is_key_ordered, plan_scan, probe_file
from acid_core.orc.nested_nulls import has_struct, shifted_in
from acid_core.orc.reader import iter_delete_events, scan
from acid_core.orc.schema import EVENT_COLUMN_NAMES, OPERATION_DELETE, OPERATION_INSERT, RowType
from acid_core.orc.writer import write_event_file
from acid_core.paths import (
    SIDE_FILE_SUFFIX,
    BaseDir,
    DeleteDeltaDir,
    DeltaDir,
    format_bucket_file,
    is_hidden_name,
    parse_acid_dir,
    try_parse_acid_dir,
    try_parse_bucket_file,
    try_parse_original_file,
)
from acid_core.writeids import (
    RangeResponse,
    ValidWriteIdList,
    parse_valid_compactor_write_id_list,
    parse_valid_txn_list,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from acid_core.fs import FileIO
    from acid_core.orc.files import ScanPlan
    from acid_core.writeids import ValidCompactorWriteIdList, ValidTxnList

__all__ = [
    "BucketOutput",
    "BucketResult",
    "BucketTask",
    "bucket_of_file",
    "compact_bucket",
    "embedded_parallelism",
    "is_key_ordered",
    "plan_rebalance_layout",
    "refuse_shifted_inputs",
    "run_tasks_embedded",
    "verify_output_file",
]

_BATCH_ROWS: Final = 64 * 1024
_LOG = logging.getLogger(__name__)
_MAX_PARALLEL_BUCKETS: Final = 4
_KEY_COLUMNS: Final = EVENT_COLUMN_NAMES[1:5]
_MIX = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xC2B2AE3D27D4EB4F),
    np.uint64(0x165667B19E3779F9),
    np.uint64(0xD6E8FEB86659FD93),
)


# --- tasks ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BucketTask:
    """One (partition, bucket) unit of work, JSON-serializable for Spark tasks.

    Attributes:
        compaction_id: the queue entry.
        location: the partition (or table) directory, as the metastore stores it (path or URI).
        staging: the staging directory's name inside ``location``.
        bucket_id: the bucket to merge.
        outputs: output directory names (``base_*``, ``delta_*``, ``delete_delta_*``).
        insert_inputs: top-level names the insert (or base) output merges.
        delete_inputs: top-level names whose delete events a minor delete delta keeps.
        write_ids: the compactor's ValidWriteIdList string.
        txns: the compaction transaction's ValidTxnList string.
        row_type: the table's row type, ``struct<...>``.
        compression: ORC compression of the output.
        stripe_size: ORC stripe size of the output.
        rebalance_buckets: for a rebalance, the number of output buckets n (``bucket_id`` is then
            the *output* bucket, whose rows come from every input bucket); 0 otherwise.
        order_by: a rebalance's normalized ORDER BY clause ("" for ``ROW__ID`` order).
        rebalance_rows: for a rebalance without ORDER BY, the live rows of the inputs when the
            driver took them from the files' footers (``plan_rebalance_layout``); -1: unknown, the
            task counts them (a pass over every input row's ``ROW__ID``).
        rebalance_marks: with ``rebalance_rows``, (position, write ID) where each input delta's
            rows start in ``ROW__ID`` order.
    """

    compaction_id: int
    location: str
    staging: str
    bucket_id: int
    outputs: tuple[str, ...]
    insert_inputs: tuple[str, ...]
    delete_inputs: tuple[str, ...]
    write_ids: str
    txns: str
    row_type: str
    compression: str = "zlib"
    stripe_size: int = 64 * 1024 * 1024
    rebalance_buckets: int = 0
    order_by: str = ""
    rebalance_rows: int = -1
    rebalance_marks: tuple[tuple[int, int], ...] = ()

    def to_json(self) -> str:
        """One JSON object (a Spark task descriptor)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BucketTask:
        """The inverse of ``to_json``."""
        data = json.loads(text)
        for key in ("outputs", "insert_inputs", "delete_inputs"):
            data[key] = tuple(data[key])
        if "rebalance_marks" in data:
            data["rebalance_marks"] = tuple((int(p), int(w)) for p, w in data["rebalance_marks"])
        return cls(**data)


@dataclass(frozen=True, slots=True)
class BucketOutput:
    """One file a task wrote: its directory (name), path, event count and key checksum."""

    directory: str
    path: str
    events: int
    checksum: int


@dataclass(frozen=True, slots=True)
class BucketResult:
    """What one task wrote."""

    bucket_id: int
    outputs: tuple[BucketOutput, ...]

    def to_json(self) -> str:
        """One JSON object (returned by a Spark task)."""
        return json.dumps({"bucket_id": self.bucket_id, "outputs": [asdict(o) for o in self.outputs]})

    @classmethod
    def from_json(cls, text: str) -> BucketResult:
        """The inverse of ``to_json``."""
        data = json.loads(text)
        return cls(int(data["bucket_id"]), tuple(BucketOutput(**o) for o in data["outputs"]))


# --- the merge of one bucket --------------------------------------------------------------------


def bucket_of_file(name: str) -> int | None:
    """The bucket a file of a partition belongs to (None: not a data file, keep it)."""
    if is_hidden_name(name):
        return None
    base_name = name[: -len(SIDE_FILE_SUFFIX)] if name.endswith(SIDE_FILE_SUFFIX) else name
    parsed = try_parse_bucket_file(base_name)
    if parsed is not None:
        return parsed.bucket_id
    original = try_parse_original_file(name)
    return original.bucket_id if original is not None else 0  # plan_scan's bucket for odd names


class _InputView:
    """A FileIO over one partition that lists only some top-level names and one bucket's files.

    The reader, run over this view, merges exactly a compaction's inputs for one bucket.
    """

    def __init__(self, file_io: FileIO, root: str, names: frozenset[str], bucket_id: int | None) -> None:
        self._io, self._root, self._names, self._bucket = file_io, root.rstrip("/"), names, bucket_id

    def _keep_file(self, name: str) -> bool:
        if self._bucket is None:  # a rebalance reads every bucket
            return True
        bucket = bucket_of_file(name)
        return bucket is None or bucket == self._bucket

    def list_entries(self, path: str) -> list[tuple[str, bool, int]]:
        entries = self._io.list_entries(path)
        if path.rstrip("/") == self._root:
            entries = [e for e in entries if e[0] in self._names]
        return [e for e in entries if e[1] or self._keep_file(e[0])]

    def list_dir(self, path: str) -> list[FileInfo]:
        children = self._io.list_dir(path)
        if path.rstrip("/") == self._root:
            children = [c for c in children if c.name in self._names]
        return [c for c in children if c.is_dir or self._keep_file(c.name)]

    def list_tree(self, path: str) -> list[FileInfo]:
        return [c for c in self._io.list_tree(path) if c.is_dir or self._keep_file(c.name)]

    def info(self, path: str) -> FileInfo | None:
        return self._io.info(path)

    def read_bytes(self, path: str) -> bytes:
        return self._io.read_bytes(path)

    def write_bytes_atomic(self, path: str, data: bytes) -> None:
        raise AcidError(f"The compaction input view is read-only; refused to write {path!r}")

    def open_input(self, path: str) -> IO[bytes]:
        return self._io.open_input(path)

    def open_output(self, path: str) -> IO[bytes]:
        raise AcidError(f"The compaction input view is read-only; refused to write {path!r}")

    def mkdirs(self, path: str) -> None:
        raise AcidError(f"The compaction input view is read-only; refused to create {path!r}")

    def rename(self, source: str, target: str) -> None:
        raise AcidError(f"The compaction input view is read-only; refused to rename {source!r}")

    def delete_file(self, path: str) -> None:
        raise AcidError(f"The compaction input view is read-only; refused to delete {path!r}")

    def delete_dir(self, path: str) -> None:
        raise AcidError(f"The compaction input view is read-only; refused to delete {path!r}")

    def join(self, *parts: str) -> str:
        return self._io.join(*parts)


def _reader_list(write_ids: ValidCompactorWriteIdList) -> ValidWriteIdList:
    # The reader filters events by currentTransaction; a compactor list answers "ALL" for any range
    # below its high watermark, so give the reader the equivalent reader list (same hwm, same
    # aborted IDs, nothing open): aborted events are dropped row by row, as Hive's merger does.
    return ValidWriteIdList(
        high_watermark=write_ids.high_watermark,
        aborted_ids=write_ids.aborted_ids,
        table_name=write_ids.table_name,
    )


def _mix(o: np.ndarray, b: np.ndarray, r: np.ndarray, c: np.ndarray) -> int:
    """An order-independent checksum of event keys (a sum of mixed 64-bit hashes, wrapping)."""
    if o.size == 0:
        return 0
    u = np.uint64
    x = o.astype(u) * _MIX[0]
    x ^= b.astype(u) * _MIX[1]
    x ^= r.astype(u) * _MIX[2]
    x ^= c.astype(u) * _MIX[3]
    x ^= x >> u(31)
    x *= _MIX[1]
    x ^= x >> u(29)
    return int(x.sum(dtype=u))


class _Tally:
    """Counts and checksums the events a stream yields."""

    def __init__(self) -> None:
        self.events = 0
        self.checksum = 0

    def add(self, batch: pa.RecordBatch) -> None:
        columns = [
            np.asarray(batch.column(i).to_numpy(zero_copy_only=False), dtype=np.int64) for i in (1, 2, 3, 4)
        ]
        self.events += batch.num_rows
        self.checksum = (self.checksum + _mix(*columns)) % 2**64

    def wrap(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            self.add(batch)
            yield batch


def refuse_shifted_inputs(file_io: FileIO, plan: ScanPlan, row_type: RowType) -> None:
    """Stop a compaction whose inputs hold struct values pyarrow's writer shifted (``orc.nested_nulls``).

    Such a file reads shifted everywhere; merged, its values would be written so into a base that
    passes ``acidflow check``, and the cleaner would then delete the file, the last place holding
    what was written. Costs nothing for a table without a struct column; otherwise each data file
    the ORC C++ library wrote (acidflow's own) whose footer records a null struct is decoded once
    more. Original files and delete deltas are not looked at (acidflow's delete events were never
    shifted: their ``row`` is a top-level null struct).

    Raises:
        ShiftedStructValuesError: the first such file, with its shifted columns.
    """
    if not any(has_struct(field.type) for field in row_type.to_arrow()):
        return
    for data_file in plan.data_files:
        if data_file.kind is FileKind.ORIGINAL:
            continue
        opened = OpenFile(file_io, data_file)
        try:
            columns = shifted_in(opened.orc, liborc_only=True)
        except ValueError:  # a Footer this code cannot parse: no verdict; the merge reads it as before
            _LOG.warning("could not check %s for shifted struct values (its ORC footer)", data_file.path)
            continue
        except (pa.ArrowException, OSError) as e:  # as the merge's own read would report it
            raise CorruptDataError(
                data_file.path, f"its ORC data does not decode ({one_line(e)})", "a readable ORC file"
            ) from e
        finally:
            opened.close()
        if columns:
            raise ShiftedStructValuesError(data_file.path, columns)


def _insert_events(
    view: _InputView,
    root: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList,
    row_type: RowType,
    ordered: bool = True,
) -> Iterator[pa.RecordBatch]:
    row_struct = row_type.to_arrow()
    schema = pa.schema(list(row_struct))
    plan = plan_scan(view, root, write_ids, txns)
    refuse_shifted_inputs(view, plan, row_type)
    reader = scan(view, root, write_ids, txns, with_row_id=True, ordered=ordered, schema=schema, plan=plan)
    for batch in reader:
        if batch.num_rows == 0:
            continue
        row_id = cast("pa.StructArray", batch.column(0))
        o, b, r = row_id.field(0), row_id.field(1), row_id.field(2)
        rows = pa.StructArray.from_arrays(batch.columns[1:], fields=list(row_struct))
        yield pa.RecordBatch.from_arrays(
            [pa.repeat(pa.scalar(OPERATION_INSERT, pa.int32()), batch.num_rows), o, b, r, o, rows],
            names=list(EVENT_COLUMN_NAMES),
        )


def _delete_events(
    view: _InputView, root: str, write_ids: ValidWriteIdList, txns: ValidTxnList, row_type: RowType
) -> Iterator[pa.RecordBatch]:
    # Streamed in key order (one batch per delete file in memory), not the whole delete set.
    nulls_type = row_type.to_arrow()
    for batch in iter_delete_events(view, root, write_ids, txns, batch_rows=_BATCH_ROWS):
        count = batch.num_rows
        if count == 0:
            continue
        yield pa.RecordBatch.from_arrays(
            [
                pa.repeat(pa.scalar(OPERATION_DELETE, pa.int32()), count),
                batch.column(0).cast(pa.int64()),
                batch.column(1).cast(pa.int32()),
                batch.column(2).cast(pa.int64()),
                batch.column(3).cast(pa.int64()),
                pa.nulls(count, type=nulls_type),
            ],
            names=list(EVENT_COLUMN_NAMES),
        )


def compact_bucket(task: BucketTask, file_io: FileIO | None = None) -> BucketResult:
    """Merge one bucket of a compaction's inputs into its staged output files (one task).

    The same function runs in the embedded worker and inside Spark tasks.

    Args:
        task: what to merge and where to write.
        file_io: the filesystem; default ``file_io_for(task.location)``.

    Returns:
        The files written, with event counts and key checksums of the merged stream.

    Raises:
        StorageError, NotAnAcidFileError, InvalidEventError: from the reader or writer.
    """
    io, root = file_io_for(task.location) if file_io is None else (file_io, task.location)
    write_ids = _reader_list(parse_valid_compactor_write_id_list(task.write_ids))
    txns = parse_valid_txn_list(task.txns)
    row_type = RowType.from_orc(task.row_type)
    staging = io.join(root, task.staging)
    if task.rebalance_buckets:
        return _rebalance_bucket(task, io, root, write_ids, txns, row_type)
    outputs: list[BucketOutput] = []
    for name in task.outputs:
        directory = parse_acid_dir(name)
        is_delete = isinstance(directory, DeleteDeltaDir)
        inputs = task.delete_inputs if is_delete else task.insert_inputs
        view = _InputView(io, root, frozenset(inputs), task.bucket_id)
        if is_delete:
            events = _delete_events(view, root, write_ids, txns, row_type)
        else:
            ordered = not is_key_ordered(inputs)
            events = _insert_events(view, root, write_ids, txns, row_type, ordered)
        tally = _Tally()
        path = io.join(staging, name, format_bucket_file(task.bucket_id))
        # Two cores: the merge-on-read (ORC decode, deletes, checksum) and the writer's validation
        # run in a producer thread while this one only encodes (the longer of the two: the
        # critical path); pyarrow releases the GIL in both ORC codecs.
        stats = write_event_file(
            io,
            path,
            tally.wrap(events),
            row_type,
            compression=task.compression,
            stripe_size=task.stripe_size,
            bucket_id=task.bucket_id,
            check_in_thread=True,
        )
        if stats.rows != tally.events:
            raise CompactionVerificationError(
                task.compaction_id, f"event count of {path}", tally.events, stats.rows
            )
        outputs.append(BucketOutput(name, path, tally.events, tally.checksum))
    return BucketResult(task.bucket_id, tuple(outputs))


# --- one output bucket of a rebalance ---------------------------------------------------------------


def _rebalanced_events(
    batch: pa.RecordBatch, first_row_id: int, bucket_id: int, write_id: pa.Array[Any] | int, row_type: RowType
) -> pa.RecordBatch:
    """Hive 4's rebalanced events for one batch of rows (``row__id`` first, then the row columns).

    Operation 0; the write ID kept (or the maximum, with ORDER BY) as original and current write
    ID; the V1 bucket property of the output bucket; row ID = the row's position.
    """
    count = batch.num_rows
    write_ids = pa.repeat(pa.scalar(write_id, pa.int64()), count) if isinstance(write_id, int) else write_id
    rows = pa.StructArray.from_arrays(batch.columns[1:], fields=list(row_type.to_arrow()))
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(OPERATION_INSERT, pa.int32()), count),
            write_ids,
            pa.repeat(pa.scalar(bucket_property(bucket_id), pa.int32()), count),
            pa.array(np.arange(first_row_id, first_row_id + count, dtype=np.int64)),
            write_ids,
            rows,
        ],
        names=list(EVENT_COLUMN_NAMES),
    )


def _order_indices(table: pa.Table, keys: Sequence[OrderKey]) -> pa.Array[Any]:
    # Hive's null ordering per key (ASC: nulls first, DESC: nulls last, or NULLS FIRST|LAST): a
    # helper "is null" key before each column, as pyarrow places nulls for all keys at once. The
    # table is in ROW__ID order and the sort is stable: ties keep ROW__ID order.
    columns: dict[str, pa.Array[Any] | pa.ChunkedArray[Any]] = {}
    sort_keys: list[tuple[str, Literal["ascending", "descending"]]] = []
    for position, key in enumerate(keys):
        values = table.column(key.column)
        columns[f"n{position}"] = pc.is_null(values)
        columns[f"v{position}"] = values
        sort_keys.append((f"n{position}", "descending" if key.nulls_first else "ascending"))
        sort_keys.append((f"v{position}", "descending" if key.descending else "ascending"))
    return pc.sort_indices(pa.table(columns), sort_keys=sort_keys)


def _rebalance_bucket(
    task: BucketTask,
    io: FileIO,
    root: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList,
    row_type: RowType,
) -> BucketResult:
    """One output bucket of a rebalance (``acid_core.compaction.rebalance`` has the rules).

    Every task reads every live row of the inputs at the compactor's snapshot, in ``ROW__ID``
    order, and keeps the positions of its slice: tasks are independent (one Spark task per output
    bucket, no shuffle). Without ORDER BY a first pass counts the rows (row IDs only, no row
    column decoded) and marks where each write ID starts; the second streams from the last mark
    at or before the slice and stops after it, without the data files whose rows all sort before
    that mark (``_drop_files_before``: task k of n decodes the row columns of about (n-k)/n of the
    files, not all of them; a single base file is read whole). With ORDER BY the rows are sorted
    in memory. When the driver gives the layout (``task.rebalance_rows``, ``plan_rebalance_layout``:
    inserts only, from the footers), the count pass is skipped: each task reads only its slice's
    files.
    """
    view = _InputView(io, root, frozenset(task.insert_inputs), None)
    if task.bucket_id == 0:  # every task reads every input: one of them checks them
        refuse_shifted_inputs(view, plan_scan(view, root, write_ids, txns), row_type)
    schema = pa.schema(list(row_type.to_arrow()))
    keys = parse_order_by(task.order_by or None, row_type.names)
    name = task.outputs[0]
    path = io.join(root, task.staging, name, format_bucket_file(task.bucket_id))

    def read(**options: object) -> pa.RecordBatchReader:
        return scan(view, root, write_ids, txns, with_row_id=True, ordered=True, schema=schema, **options)  # type: ignore[arg-type]

    batches: Iterator[pa.RecordBatch]
    if keys:
        table = read().read_all()
        total = table.num_rows
        start, stop = bucket_slice(task.bucket_id, total, task.rebalance_buckets)
        row_ids = table.column(0)
        highest = int(pc.max(pc.struct_field(row_ids, [0])).as_py() or 0) if total else 0
        chosen = table.take(_order_indices(table, keys)[start:stop]).combine_chunks()
        batches = iter(
            [
                _rebalanced_events(b, start + offset, task.bucket_id, highest, row_type)
                for b, offset in _with_offsets(chosen.to_batches(max_chunksize=_BATCH_ROWS))
            ]
        )
    else:
        plan = plan_scan(view, root, write_ids, txns)  # one listing for both passes
        if task.rebalance_rows >= 0:  # the driver's layout, from the footers: no count pass
            total = task.rebalance_rows
            marks = [(p, (w, _LOWEST_KEY, _LOWEST_KEY)) for p, w in task.rebalance_marks]
        else:
            total, marks = _count_with_marks(read(columns=[], plan=plan))
        start, stop = bucket_slice(task.bucket_id, total, task.rebalance_buckets)
        position, first_key = _mark_at_or_before(marks, start)
        # Data files whose rows all sort before the slice's first mark are not read again: the
        # second pass decodes the row columns of the slice's files only, not of the rows before.
        kept = _drop_files_before(view, root, plan, first_key)
        batches = _slice_stream(
            read(batch_rows=_BATCH_ROWS, plan=kept),
            start,
            stop,
            task.bucket_id,
            row_type,
            position,
            first_key,
            # The last slice of a layout from footers reads on: a row past it is a miscount.
            end_check=task.compaction_id if task.rebalance_rows >= 0 and stop == total else None,
        )
    if start == stop:
        return BucketResult(task.bucket_id, ())  # Hive writes no file for a bucket no row falls in
    tally = _Tally()
    stats = write_event_file(
        io,
        path,
        tally.wrap(batches),
        row_type,
        compression=task.compression,
        stripe_size=task.stripe_size,
        bucket_id=task.bucket_id,
        check_in_thread=True,
    )
    if stats.rows != tally.events or tally.events != stop - start:
        raise CompactionVerificationError(
            task.compaction_id, f"event count of {path}", stop - start, stats.rows
        )
    return BucketResult(task.bucket_id, (BucketOutput(name, path, tally.events, tally.checksum),))


def _with_offsets(batches: Sequence[pa.RecordBatch]) -> Iterator[tuple[pa.RecordBatch, int]]:
    offset = 0
    for batch in batches:
        yield batch, offset
        offset += batch.num_rows


_Key = tuple[int, int, int]
_LOWEST_KEY: Final = -(2**63)  # a mark from footers: (write ID, lowest, lowest) sorts before its rows


def _row_id_columns(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    row_id = cast("pa.StructArray", batch.column(0))
    o, b, r = (np.asarray(row_id.field(i).to_numpy(zero_copy_only=False), dtype=np.int64) for i in range(3))
    return o, b, r


def _count_with_marks(reader: pa.RecordBatchReader) -> tuple[int, list[tuple[int, _Key]]]:
    """The rows of a ``ROW__ID``-ordered stream, and (position, row ID) where write IDs start.

    A batch is marked when its first row's write ID is above the last mark's: one mark per write
    ID at most (a file-by-file read of deltas marks each delta's first batch), whatever the size.
    """
    total, marks = 0, list[tuple[int, _Key]]()
    for batch in reader:
        if batch.num_rows:
            o, b, r = _row_id_columns(batch.slice(0, 1))
            if not marks or int(o[0]) > marks[-1][1][0]:
                marks.append((total, (int(o[0]), int(b[0]), int(r[0]))))
        total += batch.num_rows
    return total, marks


def _mark_at_or_before(marks: Sequence[tuple[int, _Key]], start: int) -> tuple[int, _Key | None]:
    """The last mark at or before position ``start`` ((0, None): read from the first row)."""
    chosen: tuple[int, _Key | None] = (0, None)
    for position, key in marks:
        if position > start:
            break
        chosen = (position, key)
    return chosen


def _drop_files_before(view: FileIO, root: str, plan: ScanPlan, first_key: _Key | None) -> ScanPlan:
    """The plan without the data files whose every row's ``ROW__ID`` is below ``first_key``.

    A file of ``base_N`` or ``delta_x_y`` holding inserts only has rows of write ID <= N (y): below
    ``first_key`` when that is below its write ID. Original files stay (their synthetic row IDs
    count the rows of the bucket's earlier original files), and so do files with legacy update
    events (they hide rows of other files). Delete files all stay.
    """
    if first_key is None:
        return plan
    prefix = root.rstrip("/") + "/"
    kept = []
    for data_file in plan.data_files:
        highest = None
        if data_file.kind is not FileKind.ORIGINAL and data_file.path.startswith(prefix):
            highest = _highest_write_id(data_file.path[len(prefix) :].split("/", 1)[0])
        if highest is None or highest >= first_key[0] or probe_file(view, data_file).non_inserts:
            kept.append(data_file)
    return replace(plan, data_files=tuple(kept))


def _highest_write_id(name: str) -> int | None:
    """The highest write ID a ``base_N`` (N) or ``delta_x_y`` (y) directory holds; None for others."""
    directory = try_parse_acid_dir(name)
    if isinstance(directory, BaseDir):
        return directory.write_id
    return directory.max_write_id if isinstance(directory, DeltaDir) else None


def _directory_order(name: str) -> tuple[int, int]:
    directory = parse_acid_dir(name)
    if isinstance(directory, BaseDir):
        return (-1, -1)
    return (directory.min_write_id, -1 if directory.statement_id is None else directory.statement_id)


def plan_rebalance_layout(
    file_io: FileIO,
    root: str,
    inputs: Sequence[str],
    write_ids: ValidCompactorWriteIdList,
    txns: ValidTxnList,
) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """A rebalance's live rows and where each delta's rows start, from the ORC footers alone.

    Computed once by the driver and handed to every task (``BucketTask.rebalance_rows`` and
    ``rebalance_marks``), so that no task counts the rows of every input again (a pass over all
    ``ROW__ID`` values per task: n tasks, n passes). A footer's row count is the file's live rows
    only when every row is an insert the compactor's snapshot keeps, so the layout is given only
    when the inputs (``base_N`` and ``delta_x_y`` directories) have: no delete delta, no original
    file, no legacy update or delete event (``hive.acid.stats``), every write ID of each
    directory's range valid (base: 1..N), and disjoint increasing write-ID ranges
    (``is_key_ordered``): then the rows of write IDs below a delta's minimum are exactly those of
    the directories before it.

    Returns:
        ``(rows, ((position, write ID), ..))``: one mark per delta whose minimum write ID is above
        every earlier directory's; or None (the tasks count, as before).
    """
    view = _InputView(file_io, root, frozenset(inputs), None)
    reader_ids = _reader_list(write_ids)
    plan = plan_scan(view, root, reader_ids, txns)
    if plan.delete_files:
        return None
    prefix = root.rstrip("/") + "/"
    rows: dict[str, int] = {}
    for data_file in plan.data_files:
        if data_file.kind is FileKind.ORIGINAL or not data_file.path.startswith(prefix):
            return None
        name = data_file.path[len(prefix) :].split("/", 1)[0]
        directory = try_parse_acid_dir(name)
        if isinstance(directory, BaseDir):
            low, high = 1, directory.write_id
        elif isinstance(directory, DeltaDir) and not isinstance(directory, DeleteDeltaDir):
            low, high = directory.min_write_id, directory.max_write_id
        else:
            return None
        if high >= low and reader_ids.is_write_id_range_valid(low, high) is not RangeResponse.ALL:
            return None
        facts = probe_file(view, data_file)
        if facts.non_inserts:
            return None
        rows[name] = rows.get(name, 0) + facts.nrows
    if not is_key_ordered(tuple(rows)):
        return None
    total, highest = 0, -1
    marks: list[tuple[int, int]] = []
    for name in sorted(rows, key=_directory_order):
        directory = parse_acid_dir(name)
        if isinstance(directory, BaseDir):
            highest = max(highest, directory.write_id)
        else:
            if directory.min_write_id > highest:
                marks.append((total, directory.min_write_id))
            highest = max(highest, directory.max_write_id)
        total += rows[name]
    return total, tuple(marks)


def _slice_stream(
    reader: pa.RecordBatchReader,
    start: int,
    stop: int,
    bucket_id: int,
    row_type: RowType,
    position: int = 0,
    first_key: _Key | None = None,
    end_check: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Rows ``start`` to ``stop`` of the rebalance's order as events of ``bucket_id``.

    ``reader`` streams in ``ROW__ID`` order; when ``first_key`` is given, its rows below
    ``first_key`` are skipped and the row at or after ``first_key`` is at ``position`` (rows of
    files dropped from the read sort before it). With ``end_check`` (the compaction ID) the stream
    must end at ``stop``: a row after it raises ``CompactionVerificationError`` (a row count from
    footers below the live rows).
    """
    try:
        for batch in reader:
            if first_key is not None:
                o, b, r = _row_id_columns(batch)
                below = (o < first_key[0]) | (
                    (o == first_key[0]) & ((b < first_key[1]) | ((b == first_key[1]) & (r < first_key[2])))
                )
                skip = int(np.count_nonzero(below))
                if skip == batch.num_rows:
                    continue
                batch = batch.slice(skip)  # the stream is ordered: the rows below come first
                first_key = None
            end = position + batch.num_rows
            if end > start and position < stop:
                low, high = max(start, position) - position, min(stop, end) - position
                part = batch.slice(low, high - low)
                write_ids = cast("pa.StructArray", part.column(0)).field(0)
                yield _rebalanced_events(part, position + low, bucket_id, write_ids, row_type)
            position = end
            if position >= stop:
                break
        if end_check is not None:
            extra = max(0, position - stop) + sum(batch.num_rows for batch in reader)
            if extra:
                raise CompactionVerificationError(
                    end_check,
                    "rows read up to the last slice's end (a footer count below the live rows)",
                    stop,
                    stop + extra,
                )
    finally:
        reader.close()


def embedded_parallelism() -> int:
    """Buckets the embedded worker compacts at once: one per core, at most ``_MAX_PARALLEL_BUCKETS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_PARALLEL_BUCKETS))


def run_tasks_embedded(
    tasks: Sequence[BucketTask], heartbeat: Callable[[], None], *, parallel: int | None = None
) -> list[BucketResult]:
    """Run tasks in this process, ``parallel`` buckets at a time, heartbeating as each one finishes.

    Each bucket already uses two threads (the merge, and the ORC encoding: ``compact_bucket``);
    several buckets at once keep every core encoding. Memory: ``parallel`` buckets' delete sets and
    stripes. Results come in ``tasks`` order; the first failure is raised once the running tasks
    end (tasks not started yet are cancelled).
    """
    workers = min(len(tasks), embedded_parallelism() if parallel is None else max(1, parallel))
    if workers <= 1:
        results: list[BucketResult] = []
        for task in tasks:
            results.append(compact_bucket(task))
            heartbeat()
        return results
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="acidflow-bucket") as pool:
        futures = [pool.submit(compact_bucket, task) for task in tasks]
        try:
            for future in as_completed(futures):
                future.result()
                heartbeat()
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return [future.result() for future in futures]


def verify_output_file(io: FileIO, compaction_id: int, output: BucketOutput) -> None:
    """Re-read one written bucket file: its event count and key checksum must match the merge's.

    Raises:
        CompactionVerificationError: they differ (nothing is committed).
    """
    # Batches of _BATCH_ROWS through Arrow's ORC dataset reader: an output stripe of highly
    # compressible rows can hold millions of rows, so reading whole stripes would not be bounded.
    import pyarrow.dataset as pads  # pulls in pandas (~0.4 s): only a compaction that runs needs it

    stream = io.open_input(output.path)
    try:
        fragment = pads.OrcFileFormat().make_fragment(stream)
        names = fragment.physical_schema.names
        events, checksum = 0, 0
        for batch in fragment.to_batches(batch_size=_BATCH_ROWS, columns=list(names[1:5])):
            keys = [
                np.asarray(batch.column(i).to_numpy(zero_copy_only=False), dtype=np.int64) for i in range(4)
            ]
            events += batch.num_rows
            checksum = (checksum + _mix(*keys)) % 2**64
    finally:
        stream.close()
    if events != output.events:
        raise CompactionVerificationError(
            compaction_id, f"event count of {output.path}", output.events, events
        )
    if checksum != output.checksum:
        raise CompactionVerificationError(
            compaction_id, f"key checksum of {output.path}", output.checksum, checksum
        )
