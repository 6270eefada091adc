"""Write ACID event files the way Hive's ``OrcRecordUpdater`` does, from streams of Arrow batches.

The building block of writes (issue 4) and of the compactor (issue 6)::

    write_acid_dir(file_io, "/wh/db/t", DeltaDir(7, 7, 0), {0: batches_b0, 1: batches_b1}, row_type)

    /wh/db/t/delta_0000007_0000007_0000/
        _orc_acid_version                  "2"            (Hive's AcidUtils.OrcAcidVersion)
        bucket_00000                       ORC, ZLIB, events sorted by (originalTransaction, bucket, rowId)
        bucket_00001                       user metadata of each file:
            hive.acid.key.index   "7,536870912,16383;7,536870912,39999;"  last key of EACH stripe
            hive.acid.stats       "40000,0,0"                             inserts,updates,deletes
            hive.acid.version     "2"

Building events: ``insert_events(rows, write_id=7, bucket_id=0)`` numbers rows from ``first_row_id``
with the BucketCodec V1 value ``(1 << 29) | (bucket << 16) | statement``; ``delete_events(row_ids,
write_id=9, row_type=...)`` makes delete events (``row`` null) for ``(originalTransaction, bucket,
rowId)`` keys; ``sort_events`` sorts a bounded table of events into key order.

Why pyarrow, and how the metadata gets in: ``pyarrow.orc.ORCWriter`` writes Arrow batches natively
(the ORC C++ writer, ~4x less CPU than converting batches to Python tuples for ``pyorc``, and
within ~1.1x of a bare ``pyarrow.orc.write_table``: ``bench/bench_orc_write.py``) but cannot set ORC user metadata. The ORC tail is
``... | Metadata | Footer | PostScript | 1 byte`` and the Footer is a protobuf whose ``metadata``
field (5) is repeated, so appending serialized ``UserMetadataItem`` fields to the footer stream is a
protobuf merge: the writer holds back the last bytes the ORC writer emits on ``close`` (the tail),
appends the three items to the footer as one more compression chunk (ZLIB-compressed for
ZLIB files, an "original" uncompressed chunk, which every ORC reader accepts, for the others),
rewrites the PostScript's ``footerLength``, and writes the result. Stripes, stripe statistics and
offsets are untouched. Arrow has no varchar/char, so for row types that have them the Footer is
decoded instead and those columns' ORC types become VARCHAR(n)/CHAR(n) (same encoding as STRING);
top-level char(n) values are padded with spaces as ORC's CHAR writer pads them, and a varchar(n) or
char(n) value longer than n raises (Hive truncates on INSERT; a file writer must not lose data).

Stripe boundaries (for the key index) are *observed*, not guessed: the ORC C++ writer only flushes
a stripe at the end of an ``add(batch)`` call, so the writer feeds it slices of at most
``_CHUNK_ROWS`` rows, one slice per call, and a call during which bytes reach the output stream is
the end of a stripe; its last key is the stripe's last key. The final stripe ends on ``close``.
Before the file is kept, the observed stripe row counts are checked against the Footer's stripes,
so a change in that ORC behaviour fails loudly instead of writing a wrong key index.
``stripe_size`` (bytes, ORC's ``orc.stripe.size``) controls how often that happens.

Invariants: events are *validated*, not sorted: the writer streams (memory stays bounded by the
stripe the ORC writer buffers plus the last 8 MiB it wrote, held back to rewrite the tail), so it
cannot sort; out-of-order keys raise ``InvalidEventError`` naming the first offending
pair. Equal consecutive keys are allowed (several versions of one row in legacy compacted deltas).
``hive.acid.stats`` counts are exact. A file is visible under its final name only when complete: it
is written to a hidden sibling ``.<name>.acidflow-tmp-<uuid>`` (hidden names are skipped by Hive and
acidflow readers) and renamed at the end; on any error the temporary file is deleted. An existing
file is never overwritten.

Concurrency and idempotency: one writer per file name. ``write_acid_dir`` is not atomic across
buckets (files appear one by one); make a directory visible to readers through the metastore commit
(a ``_v<txn>`` suffix or an uncommitted write ID), as Hive does, not by the file writes. Re-running
after a failure needs a new directory or the partial one deleted first.
Not here: choosing write IDs, bucket assignment of rows (``bucket_codec`` encodes), reading.
Errors: ``InvalidWriterOptionError`` (bad compression or stripe size), ``InvalidSchemaError``
(a batch that does not match the row type), ``InvalidEventError`` (unsorted keys, bad values),
``StorageError`` (the target exists, or the store fails).
"""

from __future__ import annotations

import errno
import logging
import posixpath
import uuid
from collections import deque
from contextlib import closing
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final, Literal, TypeAlias, cast

import pyarrow as pa
import pyarrow.compute as pc

from acid_core.bucket_codec import encode_bucket_property
from acid_core.errors import (
    AcidError,
    DiskFullError,
    InvalidEventError,
    InvalidSchemaError,
    InvalidWriterOptionError,
    StorageError,
    one_line,
)
from acid_core.orc.nested_nulls import with_struct_nulls_in_children
from acid_core.orc.orc_tail import finish_tail, string_type_overrides
from acid_core.orc.schema import (
    BUCKET,
    CURRENT_TRANSACTION,
    EVENT_COLUMN_NAMES,
    OPERATION_DELETE,
    OPERATION_INSERT,
    OPERATION_UPDATE,
    ORIGINAL_TRANSACTION,
    ROW,
    ROW_ID,
    RowType,
    event_schema,
    is_acid_event_schema,
    normalize_event_schema,
    parse_hive_type,
)
from acid_core.orc.stream import prefetch
from acid_core.paths import ACID_FORMAT_FILE, BaseDir, DeleteDeltaDir, DeltaDir, format_bucket_file

if TYPE_CHECKING:
    from collections.abc import Collection, Generator, Iterable, Mapping, Sequence

    from acid_core.fs import FileIO

__all__ = [
    "ACID_KEY_INDEX_KEY",
    "ACID_STATS_KEY",
    "ACID_VERSION",
    "ACID_VERSION_KEY",
    "COMPRESSION_KINDS",
    "DEFAULT_COMPRESSION",
    "DEFAULT_STRIPE_SIZE",
    "EventFileStats",
    "RowKey",
    "delete_events",
    "insert_events",
    "sort_events",
    "write_acid_dir",
    "write_acid_version_file",
    "write_event_file",
]

_LOG = logging.getLogger(__name__)

# OrcRecordUpdater.ACID_KEY_INDEX_NAME, OrcAcidUtils.ACID_STATS, AcidUtils.OrcAcidVersion.ACID_VERSION_KEY.
ACID_KEY_INDEX_KEY: Final = "hive.acid.key.index"
ACID_STATS_KEY: Final = "hive.acid.stats"
ACID_VERSION_KEY: Final = "hive.acid.version"
ACID_VERSION: Final = 2  # AcidUtils.OrcAcidVersion.ORC_ACID_VERSION

# Our names (Hive's orc.compress values, case-insensitive) -> pyarrow's names.
_ArrowCompression = Literal["UNCOMPRESSED", "ZLIB", "SNAPPY", "LZ4", "ZSTD"]
_COMPRESSIONS: Final[Mapping[str, _ArrowCompression]] = {
    "none": "UNCOMPRESSED",
    "zlib": "ZLIB",
    "snappy": "SNAPPY",
    "lz4": "LZ4",
    "zstd": "ZSTD",
}
COMPRESSION_KINDS: Final = tuple(_COMPRESSIONS)
DEFAULT_COMPRESSION: Final = "zlib"  # OrcConf.COMPRESS default, what Hive writes
DEFAULT_STRIPE_SIZE: Final = 64 * 1024 * 1024  # OrcConf.STRIPE_SIZE default
_COMPRESSION_BLOCK_SIZE: Final = 256 * 1024  # OrcConf.BUFFER_SIZE default
_ROW_INDEX_STRIDE: Final = 10_000  # OrcConf.ROW_INDEX_STRIDE default
_TAIL_HOLD_BYTES: Final = 8 * 1024 * 1024  # Footer + PostScript must fit: kilobytes in practice
_CHUNK_ROWS: Final = 16 * 1024  # rows per ORCWriter.write call: the granularity of stripe ends
_CHECK_AHEAD_BATCHES: Final = 2  # batches checked ahead of the encoder (``check_in_thread``)
_MIN_STRIPE_SIZE: Final = 1024
_LONG_MAX: Final = 2**63 - 1
_BUCKET_VERSION_SHIFT: Final = 29


@dataclass(frozen=True, slots=True, order=True)
class RowKey:
    """The identity of a row: Hive's ``RecordIdentifier`` (``ROW__ID``), in sort order.

    Attributes:
        original_transaction: the write ID that inserted the row (0 for original files).
        bucket: the ``bucket`` column value (BucketCodec-encoded).
        row_id: the row's number within (original_transaction, bucket).
    """

    original_transaction: int
    bucket: int
    row_id: int

    def as_tuple(self) -> tuple[int, int, int]:
        """``(original_transaction, bucket, row_id)``."""
        return self.original_transaction, self.bucket, self.row_id

    def to_index_entry(self) -> str:
        """``originalTransaction,bucket,rowId;`` as Hive's ``KeyIndexBuilder`` appends it."""
        return f"{self.original_transaction},{self.bucket},{self.row_id};"


@dataclass(frozen=True, slots=True)
class EventFileStats:
    """What ``write_event_file`` wrote.

    Attributes:
        path: the file's final path.
        inserts: insert events (operation 0).
        updates: update events (operation 1, legacy).
        deletes: delete events (operation 2).
        stripe_keys: the last key of each stripe, in file order.
        compression: the compression kind (one of ``COMPRESSION_KINDS``).
    """

    path: str
    inserts: int
    updates: int
    deletes: int
    stripe_keys: tuple[RowKey, ...]
    compression: str

    @property
    def rows(self) -> int:
        """All events in the file."""
        return self.inserts + self.updates + self.deletes

    @property
    def key_index(self) -> str:
        """The ``hive.acid.key.index`` value: ``"w,b,r;"`` per stripe, concatenated."""
        return "".join(key.to_index_entry() for key in self.stripe_keys)

    @property
    def acid_stats(self) -> str:
        """The ``hive.acid.stats`` value: ``"inserts,updates,deletes"`` (Hive's ``AcidStats.serialize``)."""
        return f"{self.inserts},{self.updates},{self.deletes}"

    def user_metadata(self) -> dict[str, bytes]:
        """The ORC user metadata written into the file, UTF-8 encoded as Hive does."""
        return {
            ACID_KEY_INDEX_KEY: self.key_index.encode(),
            ACID_STATS_KEY: self.acid_stats.encode(),
            ACID_VERSION_KEY: str(ACID_VERSION).encode(),
        }


def _pyarrow_compression(compression: str) -> _ArrowCompression:
    if not isinstance(compression, str) or compression.lower() not in _COMPRESSIONS:
        raise InvalidWriterOptionError(
            "compression", compression, f"one of {', '.join(COMPRESSION_KINDS)} (case-insensitive)"
        )
    return _COMPRESSIONS[compression.lower()]


def _check_stripe_size(stripe_size: int) -> None:
    if isinstance(stripe_size, bool) or not isinstance(stripe_size, int) or stripe_size < _MIN_STRIPE_SIZE:
        raise InvalidWriterOptionError(
            "stripe_size", stripe_size, f"a size in bytes >= {_MIN_STRIPE_SIZE} (Hive's default is 64 MiB)"
        )


# --- building events -------------------------------------------------------------------------


def _as_batch(data: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
    if isinstance(data, pa.RecordBatch):
        return data
    if isinstance(data, pa.Table):
        batches = data.combine_chunks().to_batches()
        return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=data.schema)
    raise InvalidSchemaError(
        type(data).__name__, "not an Arrow record batch or table", "a pyarrow.RecordBatch or pyarrow.Table"
    )


def _check_long(name: str, value: int, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _LONG_MAX:
        raise InvalidEventError(
            "<events>", f"{name} {value!r} is not a valid ID", f"an int in {minimum}..{_LONG_MAX}"
        )


def _check_row_type(actual: pa.DataType, row_type: RowType, what: str) -> None:
    expected = row_type.to_arrow()
    if not _same_type(actual, expected):
        raise InvalidSchemaError(
            str(actual),
            f"{what} does not match the table's row type {row_type.to_orc()}",
            f"Arrow type {expected}",
        )


def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Type equality that ignores nullability (ORC has no NOT NULL)."""
    if pa.types.is_struct(expected):
        return (
            pa.types.is_struct(actual)
            and actual.num_fields == expected.num_fields
            and all(
                actual.field(i).name == expected.field(i).name
                and _same_type(actual.field(i).type, expected.field(i).type)
                for i in range(expected.num_fields)
            )
        )
    if pa.types.is_map(expected):
        return (
            pa.types.is_map(actual)
            and _same_type(actual.key_type, expected.key_type)
            and _same_type(actual.item_type, expected.item_type)
        )
    if pa.types.is_list(expected):
        return pa.types.is_list(actual) and _same_type(actual.value_type, expected.value_type)
    return bool(actual.equals(expected))


def insert_events(
    rows: pa.RecordBatch | pa.Table,
    *,
    write_id: int,
    bucket_id: int,
    statement_id: int = 0,
    first_row_id: int = 0,
    row_type: RowType | None = None,
) -> pa.RecordBatch:
    """Insert events for rows, numbered as Hive's ``OrcRecordUpdater.insert`` numbers them.

    ``originalTransaction`` = ``currentTransaction`` = ``write_id``; ``bucket`` = the BucketCodec V1
    value of (bucket_id, statement_id); ``rowId`` = first_row_id, first_row_id + 1, ...

    Args:
        rows: the table's row columns, in table order.
        write_id: the inserting transaction's write ID.
        bucket_id: the bucket (writer) ID, 0..4095; also the ``bucket_N`` file the events go to.
        statement_id: the statement within the transaction, 0..4095.
        first_row_id: the row ID of the first row (continue numbering across batches of one file).
        row_type: when given, ``rows`` must match it.

    Returns:
        A batch with the event schema.

    Raises:
        InvalidSchemaError: ``rows`` does not match ``row_type``.
        InvalidEventError: a negative or too large ID.
        InvalidBucketPropertyError: bucket or statement ID out of range.
    """
    batch = _as_batch(rows)
    _check_long("write ID", write_id)
    _check_long("first row ID", first_row_id)
    bucket = encode_bucket_property(bucket_id, statement_id)
    row_struct = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
    if row_type is not None:
        _check_row_type(row_struct.type, row_type, "the rows' type")
    count = batch.num_rows
    write_ids = pa.repeat(pa.scalar(write_id, pa.int64()), count)
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(OPERATION_INSERT, pa.int32()), count),
            write_ids,
            pa.repeat(pa.scalar(bucket, pa.int32()), count),
            _row_numbers(first_row_id, count),
            write_ids,
            row_struct,
        ],
        names=list(EVENT_COLUMN_NAMES),
    )


def _row_numbers(first: int, count: int) -> pa.Array[Any]:
    if count == 0:
        return pa.array([], pa.int64())
    ones = pa.repeat(pa.scalar(1, pa.int64()), count)
    return pc.add(pc.cumulative_sum(ones), pa.scalar(first - 1, pa.int64()))


_KeyArray: TypeAlias = "pa.Array[Any] | Sequence[int]"
RowIds: TypeAlias = "pa.StructArray | tuple[_KeyArray, _KeyArray, _KeyArray]"


def delete_events(row_ids: RowIds, *, write_id: int, row_type: RowType) -> pa.RecordBatch:
    """Delete events (``row`` null) for the rows with these keys, by the transaction ``write_id``.

    Args:
        row_ids: the deleted rows' keys: a struct array with the ``row__id`` fields (writeid,
            bucketid, rowid), or a tuple of three arrays (originalTransaction, bucket, rowId).
            The ``bucket`` values are kept as given (a row written by Hive 2 keeps its V0 value).
        write_id: the deleting transaction's write ID (``currentTransaction``).
        row_type: the table's row type (the ``row`` column is a null struct of it).

    Returns:
        A batch with the event schema, in the order given (see ``sort_events``).

    Raises:
        InvalidEventError: a bad ``write_id``, null keys, or arrays of different lengths.
    """
    _check_long("write ID", write_id)
    if isinstance(row_ids, pa.StructArray):
        if row_ids.type.num_fields != 3:
            raise InvalidEventError(
                "<events>", f"row IDs of type {row_ids.type}", "struct<writeid,bucketid,rowid>"
            )
        parts: list[_KeyArray] = [row_ids.field(i) for i in range(3)]
    else:
        parts = list(row_ids)
        if len(parts) != 3:
            raise InvalidEventError(
                "<events>", f"{len(parts)} row ID arrays", "three arrays (originalTransaction, bucket, rowId)"
            )
    types = (pa.int64(), pa.int32(), pa.int64())
    try:
        keys = [
            (part if isinstance(part, pa.Array) else pa.array(part)).cast(kind)
            for part, kind in zip(parts, types, strict=True)
        ]
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise InvalidEventError(
            "<events>", f"row IDs that are not integers: {e}", "int64, int32, int64"
        ) from e
    if len({len(key) for key in keys}) != 1:
        raise InvalidEventError(
            "<events>",
            f"row ID arrays of lengths {[len(key) for key in keys]}",
            "three arrays of equal length",
        )
    if any(key.null_count for key in keys):
        raise InvalidEventError("<events>", "a null row ID", "non-null originalTransaction, bucket and rowId")
    count = len(keys[0])
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(OPERATION_DELETE, pa.int32()), count),
            keys[0],
            keys[1],
            keys[2],
            pa.repeat(pa.scalar(write_id, pa.int64()), count),
            pa.nulls(count, type=row_type.to_arrow()),
        ],
        names=list(EVENT_COLUMN_NAMES),
    )


def sort_events(events: pa.Table | pa.RecordBatch) -> pa.Table:
    """Sort events by (originalTransaction, bucket, rowId), the order files must have.

    For bounded inputs only (a delete set, a test): it materializes the whole input.
    """
    table = events if isinstance(events, pa.Table) else pa.Table.from_batches([events])
    return table.sort_by([(ORIGINAL_TRANSACTION, "ascending"), (BUCKET, "ascending"), (ROW_ID, "ascending")])


# --- validation -------------------------------------------------------------------------------


class _EventChecker:
    """Validates a stream of event batches and counts operations."""

    def __init__(
        self,
        path: str,
        row_type: RowType,
        allowed_operations: Collection[int],
        bucket_id: int | None,
    ) -> None:
        self.path = path
        self.row_type = row_type
        self.schema = event_schema(row_type)
        self.allowed_operations = frozenset(allowed_operations)
        self.bucket_id = bucket_id
        self.counts = [0, 0, 0]
        self.last_key: RowKey | None = None
        # Top-level varchar(n)/char(n) row columns: (position, name, type name, n).
        self.sized_strings = [
            (position, name, parsed.name, parsed.params[0])
            for position, (name, text) in enumerate(row_type.columns)
            if (parsed := parse_hive_type(text)).name in ("varchar", "char")
        ]

    def _fail(self, problem: str, expected: str) -> InvalidEventError:
        return InvalidEventError(self.path, problem, expected)

    def conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The batch with canonical names and exactly the expected types, or an error."""
        if not isinstance(batch, pa.RecordBatch):
            raise InvalidSchemaError(
                type(batch).__name__,
                "an event batch that is not a pyarrow.RecordBatch",
                "pyarrow.RecordBatch",
            )
        schema = batch.schema
        if schema.equals(self.schema):
            return batch
        if not is_acid_event_schema(schema):
            names = [name.lower() for name in schema.names]
            if names == [name.lower() for name in EVENT_COLUMN_NAMES] and pa.types.is_struct(
                schema.field(5).type
            ):
                raise InvalidSchemaError(
                    str(schema), "the key columns have the wrong types", str(self.schema)
                )
            raise InvalidSchemaError(
                str(schema.names), "an event batch without the ACID event columns", str(self.schema.names)
            )
        schema = normalize_event_schema(schema)
        _check_row_type(schema.field(ROW).type, self.row_type, "the batch's row column")
        return pa.RecordBatch.from_arrays(batch.columns, schema=schema).cast(self.schema)

    def fit_strings(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Check varchar(n)/char(n) lengths and pad char(n) values with spaces, as ORC's CHAR writer does.

        Hive truncates too long values on INSERT (a SQL cast); a file writer must not lose data
        silently, so it refuses them. Only top-level row columns are checked and padded.
        """
        if not self.sized_strings or batch.num_rows == 0:
            return batch
        row = cast("pa.StructArray", batch.column(5))
        children = row.flatten()
        for position, name, kind, length in self.sized_strings:
            strings = cast("pa.StringArray", children[position])
            longest = pc.max(pc.utf8_length(strings)).as_py()
            if longest is not None and longest > length:
                raise self._fail(
                    f"a value of {longest} characters in {kind}({length}) column {name!r}",
                    f"at most {length} characters; hint: truncate as Hive's INSERT does before writing",
                )
            if kind == "char" and longest is not None:
                children[position] = pc.utf8_rpad(strings, width=length, padding=" ")
        padded = pa.StructArray.from_arrays(children, fields=list(row.type), mask=pc.is_null(row))
        return pa.RecordBatch.from_arrays([*batch.columns[:5], padded], schema=batch.schema)

    def check(self, batch: pa.RecordBatch) -> None:
        """Validate one conformed batch and add its operation counts."""
        if batch.num_rows == 0:
            return
        operation, original, bucket, row_id, current, row = batch.columns
        for name, column in zip(
            EVENT_COLUMN_NAMES[:5], (operation, original, bucket, row_id, current), strict=True
        ):
            if column.null_count:
                raise self._fail(
                    f"{column.null_count} null value(s) in column {name!r}", "no nulls in key columns"
                )
        self._check_operations(operation, row)
        self._check_buckets(bucket)
        for name, column in ((ORIGINAL_TRANSACTION, original), (CURRENT_TRANSACTION, current)):
            if pc.min(column).as_py() < 0:
                raise self._fail(f"a negative {name} {pc.min(column).as_py()!r}", "write IDs >= 0")
        self._check_order(original, bucket, row_id)

    def _check_operations(self, operation: pa.Array[Any], row: pa.Array[Any]) -> None:
        low, high = (value.as_py() for value in pc.min_max(operation).values())
        if low == high and low in self.allowed_operations:
            # One operation (every batch a compaction writes): its rows all null or all present.
            events = len(operation)
            if row.null_count == (events if low == OPERATION_DELETE else 0):
                self.counts[low] += events
                return
        # Mixed operations, or a problem to report: count and locate it.
        counts = pc.value_counts(operation)
        for value, count in zip(
            counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True
        ):
            if value not in self.allowed_operations:
                raise self._fail(
                    f"operation {value!r} ({count} event(s))",
                    f"operations {sorted(self.allowed_operations)} (0 insert, 1 update, 2 delete) in this file",
                )
            self.counts[value] += count
        is_delete = pc.equal(operation, pa.scalar(OPERATION_DELETE, pa.int32()))
        wrong_row = pc.not_equal(is_delete, pc.is_null(row))
        if pc.any(wrong_row).as_py():
            position = pc.index(wrong_row, True).as_py()
            raise self._fail(
                f"event {position} of a batch has operation {operation[position].as_py()} and "
                f"{'a null' if row[position].as_py() is None else 'a non-null'} row",
                "a null row for delete events and a non-null row for inserts and updates",
            )

    def _check_buckets(self, bucket: pa.Array[Any]) -> None:
        low, high = pc.min_max(bucket).values()
        if low.as_py() < 0 or (high.as_py() >> _BUCKET_VERSION_SHIFT) > 1:
            bad = low.as_py() if low.as_py() < 0 else high.as_py()
            raise self._fail(
                f"bucket value {bad!r}", "a BucketCodec V0 or V1 value (top three bits 000 or 001)"
            )
        if self.bucket_id is None:
            return
        if low.as_py() == high.as_py():  # one bucket property (one statement): decode it once
            value = low.as_py()
            version_bits = value >> _BUCKET_VERSION_SHIFT
            if (((value & 0x0FFF0000) >> 16) if version_bits == 1 else value) == self.bucket_id:
                return
        version = pc.shift_right(bucket, pa.scalar(_BUCKET_VERSION_SHIFT, pa.int32()))
        v1 = pc.equal(version, pa.scalar(1, pa.int32()))
        bucket_bits = pc.bit_wise_and(bucket, pa.scalar(0x0FFF0000, pa.int32()))
        decoded = pc.if_else(v1, pc.shift_right(bucket_bits, pa.scalar(16, pa.int32())), bucket)
        wrong: pa.BooleanArray = pc.not_equal(decoded, pa.scalar(self.bucket_id, pa.int32()))  # type: ignore[assignment]
        if pc.any(wrong).as_py():
            position = pc.index(wrong, True).as_py()
            raise self._fail(
                f"bucket value {bucket[position].as_py()!r} (bucket ID {decoded[position].as_py()}) in "
                f"{format_bucket_file(self.bucket_id)}",
                f"events of bucket ID {self.bucket_id} only",
            )

    def _check_order(self, original: pa.Array[Any], bucket: pa.Array[Any], row_id: pa.Array[Any]) -> None:
        first = RowKey(original[0].as_py(), bucket[0].as_py(), row_id[0].as_py())
        if self.last_key is not None and first < self.last_key:
            raise self._unsorted(self.last_key, first)
        count = len(original)
        if count > 1:
            o1, o2 = original.slice(0, count - 1), original.slice(1)
            b1, b2 = bucket.slice(0, count - 1), bucket.slice(1)
            r1, r2 = row_id.slice(0, count - 1), row_id.slice(1)
            bucket_bad = pc.or_(pc.greater(b1, b2), pc.and_(pc.equal(b1, b2), pc.greater(r1, r2)))
            bad = pc.or_(pc.greater(o1, o2), pc.and_(pc.equal(o1, o2), bucket_bad))
            if pc.any(bad).as_py():
                i = pc.index(bad, True).as_py()
                raise self._unsorted(
                    RowKey(original[i].as_py(), bucket[i].as_py(), row_id[i].as_py()),
                    RowKey(original[i + 1].as_py(), bucket[i + 1].as_py(), row_id[i + 1].as_py()),
                )
        self.last_key = RowKey(original[-1].as_py(), bucket[-1].as_py(), row_id[-1].as_py())

    def _unsorted(self, before: RowKey, after: RowKey) -> InvalidEventError:
        return self._fail(
            f"key {after.as_tuple()!r} follows key {before.as_tuple()!r}",
            "events sorted by (originalTransaction, bucket, rowId); hint: sort_events() sorts a bounded set",
        )


class _StripeObservingSink:
    """The file object the ORC writer writes to: passes bytes through, counts them, holds the tail.

    While ``holding`` (during the ORC writer's ``close``) it keeps the last ``_TAIL_HOLD_BYTES``
    and forwards older bytes, so the Footer and PostScript can be rewritten without keeping the
    last stripe in memory. After ``discard`` (an error) nothing more reaches the output.
    """

    def __init__(self, output: IO[bytes]) -> None:
        self.output = output
        self.written = 0
        self.holding = False
        self.discarding = False
        self.held: deque[bytes] = deque()
        self.held_bytes = 0
        self.closed = False

    def write(self, data: bytes | memoryview) -> int:
        size = len(memoryview(data))
        self.written += size
        if self.discarding:
            return size
        if not self.holding:
            self.output.write(data)
            return size
        self.held.append(bytes(data))
        self.held_bytes += size
        while self.held and self.held_bytes - len(self.held[0]) >= _TAIL_HOLD_BYTES:
            oldest = self.held.popleft()
            self.held_bytes -= len(oldest)
            self.output.write(oldest)
        return size

    def tail(self) -> bytes:
        """The held bytes: at least the last ``_TAIL_HOLD_BYTES`` written (or everything held)."""
        return b"".join(self.held)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


# --- writing ------------------------------------------------------------------------------------


def _temporary_name(path: str) -> str:
    parent, name = posixpath.split(path)
    return posixpath.join(parent, f".{name}.acidflow-tmp-{uuid.uuid4().hex}")


def _checked(
    batches: Iterable[pa.RecordBatch], checker: _EventChecker
) -> Generator[pa.RecordBatch, None, None]:
    """The batches conformed, validated and fitted."""
    for raw in batches:
        batch = checker.conform(raw)
        checker.check(batch)
        yield checker.fit_strings(batch)


def _write_events(
    sink: _StripeObservingSink,
    batches: Iterable[pa.RecordBatch],
    checker: _EventChecker,
    compression: _ArrowCompression,
    stripe_size: int,
    check_in_thread: bool = False,
) -> tuple[list[RowKey], list[int]]:
    """Write the events; return the last key and the row count of each stripe, as observed."""
    import pyarrow.orc as orc

    writer = orc.ORCWriter(
        cast("IO[bytes]", sink),
        file_version="0.12",
        batch_size=_CHUNK_ROWS,
        stripe_size=stripe_size,
        compression=compression,
        compression_block_size=_COMPRESSION_BLOCK_SIZE,
        row_index_stride=_ROW_INDEX_STRIDE,
    )
    stripe_keys: list[RowKey] = []
    stripe_rows: list[int] = []
    try:
        # An empty write creates the ORC writer, which writes the 3-byte header: afterwards any byte
        # reaching the sink during a write is a stripe flush.
        writer.write(checker.schema.empty_table())
        pending_rows = 0
        checked = _checked(batches, checker)
        if check_in_thread:
            # The checks (and the producer of ``batches``) run in their own thread, this one only
            # encodes; the checker's state is final once the prefetch has ended (it is read below).
            checked = prefetch(checked, depth=_CHECK_AHEAD_BATCHES, name="acidflow-check")
        with closing(checked):
            for batch in checked:
                for start in range(0, batch.num_rows, _CHUNK_ROWS):
                    chunk = batch.slice(start, _CHUNK_ROWS)
                    before = sink.written
                    # A sliced struct with nulls is what pyarrow writes wrong (``orc.nested_nulls``).
                    writer.write(pa.Table.from_batches([with_struct_nulls_in_children(chunk)]))
                    pending_rows += chunk.num_rows
                    if sink.written != before:
                        stripe_keys.append(_last_key(chunk))
                        stripe_rows.append(pending_rows)
                        pending_rows = 0
        sink.holding = True
        writer.close()
    except BaseException:
        sink.discarding = True  # nothing more reaches the output; the caller deletes it
        raise
    if pending_rows and checker.last_key is not None:
        stripe_keys.append(checker.last_key)
        stripe_rows.append(pending_rows)
    return stripe_keys, stripe_rows


def _last_key(chunk: pa.RecordBatch) -> RowKey:
    return RowKey(chunk.column(1)[-1].as_py(), chunk.column(2)[-1].as_py(), chunk.column(3)[-1].as_py())


def write_event_file(
    file_io: FileIO,
    path: str,
    batches: Iterable[pa.RecordBatch],
    row_type: RowType,
    *,
    compression: str = DEFAULT_COMPRESSION,
    stripe_size: int = DEFAULT_STRIPE_SIZE,
    allowed_operations: Collection[int] = (OPERATION_INSERT, OPERATION_UPDATE, OPERATION_DELETE),
    bucket_id: int | None = None,
    check_in_thread: bool = False,
) -> EventFileStats:
    """Write one ACID event file (one bucket) from a stream of event batches.

    Memory is bounded by one stripe (plus one input batch): batches are validated and written as
    they come. With no batches (or only empty ones) a valid empty event file is written, with key
    index ``""`` and stats ``"0,0,0"``, as Hive writes an empty base bucket.

    Args:
        file_io: where to write.
        path: the file's final path (normally ``<dir>/bucket_NNNNN``); it must not exist.
        batches: event batches with ``event_schema(row_type)`` (lower-case ACID column names are
            accepted and renamed), sorted by (originalTransaction, bucket, rowId) across batches.
        row_type: the table's row columns; the file's ``row`` struct gets their ORC types.
        compression: none, zlib (Hive's default), snappy, lz4 or zstd.
        stripe_size: target stripe size in bytes (ORC's ``orc.stripe.size``).
        allowed_operations: operations this file may hold (``write_acid_dir`` passes inserts only
            for bases and deltas, deletes only for delete deltas).
        bucket_id: when given, every event's ``bucket`` value must decode to this bucket ID.
        check_in_thread: iterate ``batches`` and validate them in a producer thread, ahead of the
            encoder (this thread then only encodes: two cores; the compaction's merge uses it). The
            same checks, the same errors at the same position, the same bytes.

    Returns:
        What was written: counts, stripe keys and the metadata values.

    Raises:
        InvalidWriterOptionError: an unknown compression or a stripe size below 1 KiB.
        InvalidSchemaError: a batch that does not have the event schema of ``row_type``.
        InvalidEventError: unsorted keys, nulls in key columns, an operation not allowed, a row
            present on a delete (or missing on an insert), a bucket value of another bucket.
        StorageError: ``path`` exists already, or the store fails.
    """
    arrow_compression = _pyarrow_compression(compression)
    _check_stripe_size(stripe_size)
    if file_io.info(path) is not None:
        raise StorageError(f"Cannot write event file {path!r}: it already exists; expected a new file name")
    checker = _EventChecker(path, row_type, allowed_operations, bucket_id)
    temporary = _temporary_name(path)
    output = file_io.open_output(temporary)
    try:
        try:
            sink = _StripeObservingSink(output)
            stripe_keys, stripe_rows = _write_events(
                sink, batches, checker, arrow_compression, stripe_size, check_in_thread
            )
            stats = EventFileStats(
                path,
                checker.counts[0],
                checker.counts[1],
                checker.counts[2],
                tuple(stripe_keys),
                compression.lower(),
            )
            tail = sink.tail()
            try:
                output.write(
                    finish_tail(
                        tail,
                        stats.user_metadata(),
                        _COMPRESSION_BLOCK_SIZE,
                        string_type_overrides(row_type),
                        stripe_rows,
                    )
                )
            except ValueError as e:  # the ORC writer produced a tail we cannot parse: a bug, not input
                raise AcidError(f"Cannot add ACID metadata to {path!r}: unexpected ORC tail ({e})") from e
        finally:
            output.close()
        if file_io.info(path) is not None:
            raise StorageError(
                f"Cannot write event file {path!r}: it appeared while writing; expected a new file"
            )
        file_io.rename(temporary, path)
    except OSError as e:
        _best_effort_delete(file_io, temporary)
        if e.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(e):
            # pyarrow's stream errors carry no file name: name the file being written.
            raise DiskFullError(path, "writing an event file", str(e).strip() or "no space left") from e
        raise
    except BaseException:
        _best_effort_delete(file_io, temporary)
        raise
    _LOG.debug("wrote %s: %s events, %d stripe(s)", path, stats.acid_stats, len(stripe_keys))
    return stats


def _best_effort_delete(file_io: FileIO, path: str) -> None:
    try:
        file_io.delete_file(path)
    except Exception as error:  # cleanup only: the original error is what the caller must see
        # One line (a traceback reaches no user; it stays at debug level).
        _LOG.warning("could not delete temporary file %s: %s", path, one_line(error))
        _LOG.debug("could not delete temporary file %s", path, exc_info=True)


def write_acid_version_file(file_io: FileIO, directory: str) -> str:
    """Write ``_orc_acid_version`` containing ``2`` into a base or delta directory.

    Hive's ``AcidUtils.OrcAcidVersion.writeVersionFile``: readers use it to know the directory's
    files are ACID version 2 without opening them. Idempotent (atomic replace with equal content).

    Returns:
        The side file's path.
    """
    path = file_io.join(directory, ACID_FORMAT_FILE)
    file_io.write_bytes_atomic(path, str(ACID_VERSION).encode())
    return path


def write_acid_dir(
    file_io: FileIO,
    table_dir: str,
    dir_name: BaseDir | DeltaDir,
    batches_by_bucket: Mapping[int, Iterable[pa.RecordBatch]],
    row_type: RowType,
    *,
    compression: str = DEFAULT_COMPRESSION,
    stripe_size: int = DEFAULT_STRIPE_SIZE,
) -> list[EventFileStats]:
    """Write a base, delta or delete delta directory: ``_orc_acid_version`` and one file per bucket.

    A ``DeleteDeltaDir`` may hold only delete events; a ``BaseDir`` or ``DeltaDir`` only inserts and
    (legacy) updates, as with Hive's split-update. Every event of ``bucket_N`` must belong to bucket
    ID N. Buckets are written in ascending bucket ID order.

    Args:
        file_io: where to write.
        table_dir: the table or partition directory.
        dir_name: the directory to create (``BaseDir``, ``DeltaDir`` or ``DeleteDeltaDir``).
        batches_by_bucket: bucket ID -> a stream of sorted event batches for ``bucket_N``.
        row_type: the table's row columns.
        compression: as ``write_event_file``.
        stripe_size: as ``write_event_file``.

    Returns:
        One ``EventFileStats`` per bucket file, in bucket order.

    Raises:
        InvalidWriterOptionError, InvalidSchemaError, InvalidEventError, StorageError: as
            ``write_event_file``; files written before the failure stay (see the module docstring).
    """
    _pyarrow_compression(compression)
    _check_stripe_size(stripe_size)
    directory = file_io.join(table_dir, dir_name.to_name())
    allowed = (
        (OPERATION_DELETE,) if isinstance(dir_name, DeleteDeltaDir) else (OPERATION_INSERT, OPERATION_UPDATE)
    )
    file_io.mkdirs(directory)
    write_acid_version_file(file_io, directory)
    written: list[EventFileStats] = []
    for bucket_id in sorted(batches_by_bucket):
        path = file_io.join(directory, format_bucket_file(bucket_id))
        stats = write_event_file(
            file_io,
            path,
            batches_by_bucket[bucket_id],
            row_type,
            compression=compression,
            stripe_size=stripe_size,
            allowed_operations=allowed,
            bucket_id=bucket_id,
        )
        written.append(stats)
    return written
