"""Rebalance compaction: Hive 4's rules for spreading a partition's rows evenly over n buckets.

``ALTER TABLE t [PARTITION (..)] COMPACT 'rebalance' [ORDER BY c [ASC|DESC], ..] [CLUSTERED INTO n
BUCKETS]`` (HIVE-26716) rewrites an implicitly bucketed (unbucketed) table's partition into a new
``base_N_vT`` whose ``bucket_00000 .. bucket_<n-1>`` files hold about the same number of rows::

    live rows, numbered 0..R-1 in order            base_N_vT/
    (ROW__ID order, or the ORDER BY)                   bucket_00000   positions [0, c)
        c = ceil(R / n) rows per bucket  ------>       bucket_00001   positions [c, 2c)
                                                       ...            (the last one may hold fewer;
                                                                       buckets past ceil(R / c) none)

The row IDs are those Hive 4's ``CompactionQueryBuilderForRebalance`` writes
(``0, t2.writeId, t2.rowId DIV CEIL(numRows / n), t2.rowId, t2.writeId, t2.data``):

- position p (``row_number() - 1``) goes to bucket ``p // ceil(R / n)``; its bucket property is
  ``BucketCodec.V1`` of that bucket, statement 0 (``536870912 + 65536 * bucket``);
- its row ID is p itself: row IDs run on across the buckets (bucket 1 starts at c), they do not
  restart at 0 in each file (``TestCrudCompactorOnTez#testRebalanceCompaction*``);
- without ORDER BY, rows keep their write ID (original = current), in ``ROW__ID`` order
  (write ID, bucket property, row ID); with ORDER BY "the writeids cannot be kept": every row gets
  the highest write ID among the rows (``MAX(ROW__ID.writeId) over()``).

Within each file the keys are then ascending, as ``OrcRawRecordMerger`` requires.
ORDER BY keys: plain column names with ASC (default; nulls first, Hive's default) or DESC (nulls
last), optionally ``NULLS FIRST|LAST``. Ties keep ``ROW__ID`` order (acidflow's choice: Hive leaves
them to the engine).

Invariants: the sizes of ``bucket_slice(k, R, n)`` for k in 0..n-1 sum to R, are contiguous,
disjoint, none above ``ceil(R / n)``, and only the last non-empty one is short.
Not here: reading or writing files (``bucket_merge``), the queue (``metastore``).
Errors: ``InvalidRebalanceError`` (a bucket count below 1, an ORDER BY that does not parse or names
no column of the table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acid_core.errors import InvalidRebalanceError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "MAX_REBALANCE_BUCKETS",
    "OrderKey",
    "bucket_of_position",
    "bucket_property",
    "bucket_slice",
    "check_bucket_count",
    "format_order_by",
    "parse_order_by",
    "rows_per_bucket",
]

MAX_REBALANCE_BUCKETS: Final = 4096
"""BucketCodec V1 keeps 12 bits for the bucket ID: buckets 0..4095."""

_V1_BASE: Final = 1 << 29
_BUCKET_SHIFT: Final = 16
_KEY: Final = re.compile(
    r"\s*`?(?P<column>[A-Za-z_]\w*)`?(?:\s+(?P<direction>ASC|DESC))?(?:\s+NULLS\s+(?P<nulls>FIRST|LAST))?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One ORDER BY key: a row column, its direction and where its nulls go."""

    column: str
    descending: bool = False
    nulls_first: bool = True

    def to_text(self) -> str:
        """``c ASC NULLS FIRST`` / ``c DESC NULLS LAST``: what ``parse_order_by`` reads back."""
        direction = "DESC" if self.descending else "ASC"
        return f"{self.column} {direction} NULLS {'FIRST' if self.nulls_first else 'LAST'}"


def check_bucket_count(number_of_buckets: int) -> int:
    """Check ``CLUSTERED INTO n BUCKETS``: 1 <= n <= 4096 (the V1 codec's 12 bits).

    Raises:
        InvalidRebalanceError: n out of range.
    """
    if not 1 <= number_of_buckets <= MAX_REBALANCE_BUCKETS:
        raise InvalidRebalanceError(
            "number of buckets", number_of_buckets, f"an integer from 1 to {MAX_REBALANCE_BUCKETS}"
        )
    return number_of_buckets


def rows_per_bucket(total_rows: int, number_of_buckets: int) -> int:
    """``CEIL(numRows / n)``: the rows of every bucket but the last non-empty one.

    >>> rows_per_bucket(18, 4), rows_per_bucket(0, 3)
    (5, 0)
    """
    check_bucket_count(number_of_buckets)
    return -(-total_rows // number_of_buckets)


def bucket_of_position(position: int, total_rows: int, number_of_buckets: int) -> int:
    """The bucket of the row at ``position`` (``rowId DIV CEIL(numRows / n)``).

    >>> [bucket_of_position(p, 18, 4) for p in (0, 4, 5, 17)]
    [0, 0, 1, 3]
    """
    if not 0 <= position < total_rows:
        raise InvalidRebalanceError("row position", position, f"0 <= position < {total_rows}")
    return position // rows_per_bucket(total_rows, number_of_buckets)


def bucket_slice(bucket_id: int, total_rows: int, number_of_buckets: int) -> tuple[int, int]:
    """The positions ``[start, stop)`` bucket ``bucket_id`` holds (empty when start == stop).

    >>> [bucket_slice(k, 18, 4) for k in range(4)]
    [(0, 5), (5, 10), (10, 15), (15, 18)]
    >>> bucket_slice(3, 5, 4)
    (5, 5)
    """
    if not 0 <= bucket_id < number_of_buckets:
        raise InvalidRebalanceError("bucket", bucket_id, f"0 <= bucket < {number_of_buckets}")
    size = rows_per_bucket(total_rows, number_of_buckets)
    start = min(bucket_id * size, total_rows)
    return start, min(start + size, total_rows)


def bucket_property(bucket_id: int) -> int:
    """``BucketCodec.V1`` of ``bucket_id``, statement 0: the rebalanced rows' bucket property.

    >>> bucket_property(0), bucket_property(1)
    (536870912, 536936448)
    """
    if not 0 <= bucket_id < MAX_REBALANCE_BUCKETS:
        raise InvalidRebalanceError("bucket", bucket_id, f"0 <= bucket < {MAX_REBALANCE_BUCKETS}")
    return _V1_BASE | (bucket_id << _BUCKET_SHIFT)


def _split_keys(text: str) -> list[str]:
    return text.split(",")


def parse_order_by(text: str | None, columns: Sequence[str]) -> tuple[OrderKey, ...]:
    """Parse an ORDER BY clause (``ORDER BY`` optional) against the table's row columns.

    Column names match case-insensitively and come back as the table spells them.

    >>> parse_order_by("ORDER BY b DESC, a", ["a", "b"])
    (OrderKey(column='b', descending=True, nulls_first=False), OrderKey(column='a', descending=False, nulls_first=True))

    Raises:
        InvalidRebalanceError: a key that is not ``column [ASC|DESC] [NULLS FIRST|LAST]`` or names
            no column of the table.
    """
    if text is None or not text.strip():
        return ()
    body = re.sub(r"^\s*ORDER\s+BY\s+", "", text, flags=re.IGNORECASE)
    by_name = {column.lower(): column for column in columns}
    keys: list[OrderKey] = []
    for part in _split_keys(body):
        match = _KEY.match(part)
        if match is None:
            raise InvalidRebalanceError(
                "ORDER BY key", part.strip(), "a column name, then optionally ASC|DESC and NULLS FIRST|LAST"
            )
        column = by_name.get(match.group("column").lower())
        if column is None:
            raise InvalidRebalanceError(
                "ORDER BY column", match.group("column"), f"one of the table's columns {list(columns)!r}"
            )
        descending = (match.group("direction") or "ASC").upper() == "DESC"
        nulls = match.group("nulls")
        nulls_first = (not descending) if nulls is None else nulls.upper() == "FIRST"
        keys.append(OrderKey(column, descending, nulls_first))
    return tuple(keys)


def format_order_by(keys: Sequence[OrderKey]) -> str | None:
    """The clause stored in the queue (``CQ_ORDER_BY``), or None without keys.

    >>> format_order_by([OrderKey("b", True, False)])
    'ORDER BY b DESC NULLS LAST'
    """
    if not keys:
        return None
    return "ORDER BY " + ", ".join(key.to_text() for key in keys)
