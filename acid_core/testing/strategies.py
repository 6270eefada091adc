"""Hypothesis strategies for Hive ACID names, snapshots and partition listings.

What each strategy draws::

    write_ids()                 1 .. 10**12 (Hive allocates write IDs from 1)
    base_dirs()                 BaseDir(write_id, visibility_txn_id)          -> base_N[_vT]
    delta_dirs(delete=None)     DeltaDir / DeleteDeltaDir with min <= max     -> [delete_]delta_min_max[_s][_vT]
    acid_dir_names()            the formatted names of the three above
    bucket_files()              BucketFile(bucket_id, attempt_id)             -> bucket_NNNNN[_a]
    original_files()            OriginalFile(bucket_id, task_suffix, copy)    -> 000000_0[_copy_N]
    valid_write_id_lists()      ValidWriteIdList with disjoint open / aborted IDs <= hwm
    valid_txn_lists()           ValidTxnList, same shape
    partition_listings()        (listing, ValidWriteIdList): a small partition directory
    partition_cases()           PartitionCase: the same plus _vT suffixes, _metadata_acid and txns

The numbers are kept in the ranges Hive writes (write IDs fit a long, statement and bucket IDs
Hive's 12-bit BucketCodec fields) so every drawn value is one Hive could produce.

Invariants: every drawn name parses, and ``parse_*(x.to_name()) == x`` for every drawn value.
Not here: expected results (tests compute those from an independent model).
Errors: none; importing this module needs ``hypothesis`` (a test dependency, not a runtime one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from acid_core.paths import BaseDir, BucketFile, DeleteDeltaDir, DeltaDir, OriginalFile
from acid_core.state import ListingEntry
from acid_core.writeids import ValidTxnList, ValidWriteIdList

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

__all__ = [
    "COMPACTED_METADATA",
    "MAX_TEST_WRITE_ID",
    "PartitionCase",
    "acid_dir_names",
    "base_dirs",
    "bucket_files",
    "delta_dirs",
    "original_files",
    "partition_cases",
    "partition_listings",
    "statement_ids",
    "table_names",
    "valid_txn_lists",
    "valid_write_id_lists",
    "visibility_txn_ids",
    "write_ids",
]

MAX_TEST_WRITE_ID = 10**12
COMPACTED_METADATA = '{"thisFileVersion":"0","dataFormat":"compacted"}'  # AcidUtils.MetaDataFile
_MAX_STATEMENT_ID = 4095
_MAX_BUCKET_ID = 4095


def write_ids(min_value: int = 1, max_value: int = MAX_TEST_WRITE_ID) -> SearchStrategy[int]:
    """Write IDs in ``min_value..max_value``."""
    return st.integers(min_value=min_value, max_value=max_value)


def statement_ids() -> SearchStrategy[int | None]:
    """A statement ID (0..4095) or None for names without one."""
    return st.none() | st.integers(min_value=0, max_value=_MAX_STATEMENT_ID)


def visibility_txn_ids() -> SearchStrategy[int]:
    """0 (no ``_v`` suffix) or a transaction ID."""
    return st.just(0) | st.integers(min_value=1, max_value=MAX_TEST_WRITE_ID)


def base_dirs() -> SearchStrategy[BaseDir]:
    """``base_N[_vT]`` values."""
    return st.builds(BaseDir, write_id=write_ids(), visibility_txn_id=visibility_txn_ids())


@st.composite
def _delta(draw: DrawFn, delete: bool | None, max_write_id: int) -> DeltaDir:
    low = draw(write_ids(max_value=max_write_id))
    high = draw(st.integers(min_value=low, max_value=min(max_write_id, low + 1000)))
    is_delete = draw(st.booleans()) if delete is None else delete
    cls = DeleteDeltaDir if is_delete else DeltaDir
    return cls(low, high, draw(statement_ids()), draw(visibility_txn_ids()))


def delta_dirs(delete: bool | None = None, max_write_id: int = MAX_TEST_WRITE_ID) -> SearchStrategy[DeltaDir]:
    """Delta (``delete=False``), delete-delta (``True``) or either (``None``) directories."""
    return _delta(delete, max_write_id)


def acid_dir_names() -> SearchStrategy[str]:
    """Formatted names of bases, deltas and delete deltas."""
    return st.one_of(base_dirs(), delta_dirs()).map(lambda parsed: parsed.to_name())


def bucket_files() -> SearchStrategy[BucketFile]:
    """``bucket_NNNNN[_attempt]`` values."""
    return st.builds(
        BucketFile,
        bucket_id=st.integers(min_value=0, max_value=_MAX_BUCKET_ID),
        attempt_id=st.none() | st.integers(min_value=0, max_value=1000),
    )


def original_files() -> SearchStrategy[OriginalFile]:
    """Original (pre-ACID) file names as Hive writes them: 6-digit bucket, ``_copy_N`` optional."""
    return st.builds(
        OriginalFile,
        bucket_id=st.integers(min_value=0, max_value=999_999),
        task_suffix=st.integers(min_value=0, max_value=1000),
        copy_number=st.none() | st.integers(min_value=1, max_value=1000),
    )


def table_names() -> SearchStrategy[str | None]:
    """``db.table`` names (never containing ``:``) or None (Hive's ``null``)."""
    part = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=12)
    return st.none() | st.tuples(part, part).map(lambda pair: f"{pair[0]}.{pair[1]}")


@st.composite
def _exceptions(draw: DrawFn, high_watermark: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if high_watermark < 1:
        return (), ()
    ids = draw(
        st.lists(st.integers(min_value=1, max_value=high_watermark), unique=True, max_size=12).map(sorted)
    )
    flags = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    open_ids = tuple(i for i, is_open in zip(ids, flags, strict=True) if is_open)
    aborted_ids = tuple(i for i, is_open in zip(ids, flags, strict=True) if not is_open)
    return open_ids, aborted_ids


@st.composite
def _write_id_list(draw: DrawFn, max_high_watermark: int) -> ValidWriteIdList:
    high_watermark = draw(st.integers(min_value=0, max_value=max_high_watermark))
    open_ids, aborted_ids = draw(_exceptions(high_watermark))
    # Hive keeps minOpenWriteId = the lowest open ID (Long.MAX_VALUE, here None, when none is open).
    min_open = min(open_ids) if open_ids else None
    return ValidWriteIdList(high_watermark, open_ids, aborted_ids, min_open, draw(table_names()))


def valid_write_id_lists(max_high_watermark: int = 60) -> SearchStrategy[ValidWriteIdList]:
    """Reader snapshots: open and aborted IDs disjoint and <= the high watermark."""
    return _write_id_list(max_high_watermark)


@st.composite
def _txn_list(draw: DrawFn, max_high_watermark: int) -> ValidTxnList:
    high_watermark = draw(st.integers(min_value=0, max_value=max_high_watermark))
    open_ids, aborted_ids = draw(_exceptions(high_watermark))
    return ValidTxnList(high_watermark, open_ids, aborted_ids, min(open_ids) if open_ids else None)


def valid_txn_lists(max_high_watermark: int = 60) -> SearchStrategy[ValidTxnList]:
    """ValidTxnList values of the same shape as ``valid_write_id_lists``."""
    return _txn_list(max_high_watermark)


_OTHER_NAMES = ("000000_0", "000001_0_copy_1", "random", "_orc_acid_version", ".hive-staging", "_tmp")


@st.composite
def _listing(draw: DrawFn, max_write_id: int) -> tuple[list[ListingEntry], ValidWriteIdList]:
    snapshot = draw(valid_write_id_lists(max_high_watermark=max_write_id))
    small_ids = st.integers(min_value=1, max_value=max_write_id)
    names: set[str] = set()
    for base_id in draw(st.lists(small_ids, max_size=3)):
        names.add(BaseDir(base_id).to_name())
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        low = draw(small_ids)
        high = draw(st.integers(min_value=low, max_value=min(max_write_id, low + 5)))
        statement = draw(st.none() | st.integers(min_value=0, max_value=3))
        cls = DeleteDeltaDir if draw(st.booleans()) else DeltaDir
        names.add(cls(low, high, statement).to_name())
    entries = [ListingEntry(name, True) for name in sorted(names)]
    for other in draw(st.lists(st.sampled_from(_OTHER_NAMES), unique=True, max_size=4)):
        entries.append(ListingEntry(other, other.startswith(".")))
    if draw(st.booleans()):
        entries.append(ListingEntry("subdir", True))
        entries.append(ListingEntry("subdir/000000_0", False, 10))
    return draw(st.permutations(entries)), snapshot


def partition_listings(max_write_id: int = 20) -> SearchStrategy[tuple[list[ListingEntry], ValidWriteIdList]]:
    """A partition listing (bases, deltas, originals, hidden names) and a reader snapshot for it.

    Bases carry no ``_v`` suffix and no ``_metadata_acid`` marker (insert-overwrite bases), so no
    listing can raise ``NotEnoughHistoryError``.
    """
    return _listing(max_write_id)


@dataclass(frozen=True, slots=True)
class PartitionCase:
    """Everything ``AcidDirectoryState.from_listing`` takes, for one drawn partition.

    Attributes:
        listing: the partition's entries.
        write_ids: the reader's snapshot of the table.
        txns: the ValidTxnList deciding ``_vT`` visibility.
        metadata_files: ``_metadata_acid`` texts of the bases marked as compactor output.
    """

    listing: list[ListingEntry]
    write_ids: ValidWriteIdList
    txns: ValidTxnList
    metadata_files: dict[str, str] = field(default_factory=dict)


@st.composite
def _partition_case(draw: DrawFn, max_write_id: int, max_txn_id: int) -> PartitionCase:
    listing, write_ids = draw(partition_listings(max_write_id))
    txns = draw(valid_txn_lists(max_high_watermark=max_txn_id))
    visibility = st.just(0) | st.integers(min_value=1, max_value=max_txn_id + 2)
    entries: list[ListingEntry] = []
    metadata: dict[str, str] = {}
    for entry in listing:
        name = entry.path
        if entry.is_dir and name.startswith(("base_", "delta_", "delete_delta_")):
            suffix = draw(visibility)
            if suffix:
                name = f"{name}_v{suffix:07d}"
            elif name.startswith("base_") and draw(st.booleans()):
                metadata[name] = COMPACTED_METADATA
        entries.append(ListingEntry(name, entry.is_dir, entry.size))
    return PartitionCase(entries, write_ids, txns, metadata)


def partition_cases(max_write_id: int = 20, max_txn_id: int = 30) -> SearchStrategy[PartitionCase]:
    """Partitions with ``_vT`` suffixes (compactor output), ``_metadata_acid`` markers and a txn list.

    Unlike ``partition_listings``, a drawn case may raise ``NotEnoughHistoryError``.
    """
    return _partition_case(max_write_id, max_txn_id)
