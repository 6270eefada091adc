"""Snapshots: Hive's ValidTxnList and ValidWriteIdList, in Hive's own string formats.

A snapshot says which IDs a reader may see::

    ids:         1   2   3   4   5   6   7   8 ...
    state:       C   C   A   C   O   C   C   (above the high watermark: not yet allocated)
                         |       |       ^ high watermark = 7
                         |       min open write ID = 5
                         aborted (never visible)

    ValidWriteIdList string:  "<db.table>:<hwm>:<minOpen>:<open,..>:<aborted,..>"  e.g. "db.t:7:5:5:3"
    ValidTxnList string:      "<hwm>:<minOpen>:<open,..>:<aborted,..>"              e.g. "7:5:5:3"
                              (Hive 4 writes runs of 5+ consecutive IDs as "a-b": "20:9:9-13:";
                              Hive 3.1 cannot read that: ``to_string(ranges=False)`` for it)
    minOpen is Long.MAX_VALUE (9223372036854775807) when nothing is open.

An ID is valid iff it is <= the high watermark and is neither open nor aborted. Range queries
answer ALL / SOME / NONE exactly as Hive's ``ValidReaderWriteIdList`` does, quirks included (an
exception above the high watermark is counted twice, as in Hive).

``ValidCompactorWriteIdList`` is the compactor's view: its high watermark is just below the lowest
open write ID, its exceptions are aborted IDs only, and a range is ALL or NONE (a delta that
straddles an unresolved ID cannot be compacted yet).

Invariants: ``parse_*(x.to_string()) == x``; visibility is monotonic in the high watermark;
aborted IDs are never valid.
Not here: allocating IDs (the metastore does), reading files.
Errors: ``parse_*`` raises ``InvalidWriteIdListError`` naming the string and the bad part. Beyond
what Hive's ``readFromString`` refuses (a non-number, a long overflow), it refuses what Hive would
misread and its writers never produce: a negative high watermark, IDs below 1, an open or aborted
ID above the high watermark, a min open ID that is not the lowest open ID (or, when nothing is
open, not above the high watermark), and (ValidTxnList only, whose Hive 4 reader merges the lists
assuming order) IDs that are not strictly ascending.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from acid_core.errors import InvalidWriteIdListError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "LONG_MAX",
    "NewlyValidWriteIds",
    "RangeResponse",
    "ValidCompactorWriteIdList",
    "ValidTxnList",
    "ValidWriteIdList",
    "parse_valid_compactor_write_id_list",
    "parse_valid_txn_list",
    "newly_valid_write_ids",
    "parse_valid_write_id_list",
    "to_compactor_write_id_list",
]

LONG_MAX = 2**63 - 1
_LONG_MIN = -(2**63)


class RangeResponse(StrEnum):
    """How much of a range of IDs a snapshot covers (Hive's ``RangeResponse``)."""

    ALL = "all"
    SOME = "some"
    NONE = "none"


def _count_between(values: tuple[int, ...], low: int, high: int) -> int:
    return max(0, bisect_right(values, high) - bisect_left(values, low))


def _range_valid(exceptions: tuple[int, ...], high_watermark: int, min_id: int, max_id: int) -> RangeResponse:
    # A line-for-line port of ValidReaderWriteIdList.isWriteIdRangeValid, with bisect for the loop.
    if min_id > high_watermark:
        return RangeResponse.NONE
    if exceptions and exceptions[0] > max_id:
        return RangeResponse.ALL
    count = max(0, max_id - high_watermark) + _count_between(exceptions, min_id, max_id)
    if count == 0:
        return RangeResponse.ALL
    if count == max_id - min_id + 1:
        return RangeResponse.NONE
    return RangeResponse.SOME


def _range_aborted(aborted: tuple[int, ...], high_watermark: int, min_id: int, max_id: int) -> RangeResponse:
    if high_watermark < min_id:
        return RangeResponse.NONE
    count = _count_between(aborted, min_id, max_id)
    if count == 0:
        return RangeResponse.NONE
    if count == max_id - min_id + 1:
        return RangeResponse.ALL
    return RangeResponse.SOME


def _is_member(values: tuple[int, ...], value: int) -> bool:
    idx = bisect_left(values, value)
    return idx < len(values) and values[idx] == value


def _join(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


_MIN_RANGE_LENGTH = 5  # ValidReadTxnList.MIN_RANGE_LENGTH


def _join_ranges(values: tuple[int, ...]) -> str:
    # ValidReadTxnList.writeTxnRange (Hive 4): runs of >= 5 consecutive IDs become "min-max".
    parts: list[str] = []
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and values[end + 1] == values[end] + 1:
            end += 1
        low, high = values[start], values[end]
        if low + _MIN_RANGE_LENGTH - 1 > high:
            parts.extend(str(v) for v in values[start : end + 1])
        else:
            parts.append(f"{low}-{high}")
        start = end + 1
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    high_watermark: int = LONG_MAX
    open_ids: tuple[int, ...] = ()
    aborted_ids: tuple[int, ...] = ()
    # Hive keeps Long.MAX_VALUE for "nothing open"; None here, formatted back as Long.MAX_VALUE.
    min_open_id: int | None = None
    exceptions: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "open_ids", tuple(sorted(self.open_ids)))
        object.__setattr__(self, "aborted_ids", tuple(sorted(self.aborted_ids)))
        object.__setattr__(self, "exceptions", tuple(sorted(self.open_ids + self.aborted_ids)))

    def _is_valid(self, value: int) -> bool:
        return value <= self.high_watermark and not _is_member(self.exceptions, value)

    def _format_tail(self, join: Callable[[tuple[int, ...]], str] = _join) -> str:
        min_open = LONG_MAX if self.min_open_id is None else self.min_open_id
        return f"{self.high_watermark}:{min_open}:{join(self.open_ids)}:{join(self.aborted_ids)}"


@dataclass(frozen=True, slots=True)
class ValidTxnList(_Snapshot):
    """Which global transactions a reader sees (Hive's ``ValidReadTxnList``).

    The default value sees every transaction as committed.
    """

    def is_txn_valid(self, txn_id: int) -> bool:
        """Committed in this snapshot: <= high watermark, neither open nor aborted."""
        return self._is_valid(txn_id)

    def is_txn_aborted(self, txn_id: int) -> bool:
        """Listed as aborted in this snapshot."""
        return _is_member(self.aborted_ids, txn_id)

    def is_txn_range_valid(self, min_txn_id: int, max_txn_id: int) -> RangeResponse:
        """How many of ``min..max`` are committed."""
        return _range_valid(self.exceptions, self.high_watermark, min_txn_id, max_txn_id)

    def is_txn_range_aborted(self, min_txn_id: int, max_txn_id: int) -> RangeResponse:
        """How many of ``min..max`` are aborted."""
        return _range_aborted(self.aborted_ids, self.high_watermark, min_txn_id, max_txn_id)

    def to_string(self, *, ranges: bool = True) -> str:
        """Hive 4's ``writeToString``: ``hwm:minOpen:open,..:aborted,..``, runs of 5+ as ``a-b``.

        Args:
            ranges: False writes every ID on its own, as Hive 3.1's ``writeToString`` does: Hive
                3.1's reader (storage-api 2.7 ``ValidReadTxnList.readFromString``) parses each ID
                with ``Long.parseLong`` and fails on ``47-51``; Hive 4's reader takes both forms.

        >>> ValidTxnList(20, open_ids=(9, 10, 11, 12, 13), min_open_id=9).to_string()
        '20:9:9-13:'
        >>> ValidTxnList(20, open_ids=(9, 10, 11, 12, 13), min_open_id=9).to_string(ranges=False)
        '20:9:9,10,11,12,13:'
        """
        return self._format_tail(_join_ranges if ranges else _join)


@dataclass(frozen=True, slots=True)
class ValidWriteIdList(_Snapshot):
    """Which write IDs of one table a reader sees (Hive's ``ValidReaderWriteIdList``).

    Attributes:
        table_name: ``db.table``, or None (formatted as ``null``, as Hive does).
    """

    table_name: str | None = None

    def is_write_id_valid(self, write_id: int) -> bool:
        """Committed in this snapshot: <= high watermark, neither open nor aborted."""
        return self._is_valid(write_id)

    def is_valid_base(self, write_id: int) -> bool:
        """Whether a compacted ``base_<write_id>`` holds no write ID open in this snapshot."""
        min_open = LONG_MAX if self.min_open_id is None else self.min_open_id
        return write_id < min_open and write_id <= self.high_watermark

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Listed as aborted in this snapshot."""
        return _is_member(self.aborted_ids, write_id)

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """How many of ``min..max`` are committed (Hive's ``isWriteIdRangeValid``)."""
        return _range_valid(self.exceptions, self.high_watermark, min_write_id, max_write_id)

    def is_write_id_range_aborted(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """How many of ``min..max`` are aborted (Hive's ``isWriteIdRangeAborted``)."""
        return _range_aborted(self.aborted_ids, self.high_watermark, min_write_id, max_write_id)

    def to_string(self) -> str:
        """Hive's ``writeToString``: ``table:hwm:minOpen:open,..:aborted,..``."""
        return f"{'null' if self.table_name is None else self.table_name}:{self._format_tail()}"


@dataclass(frozen=True, slots=True)
class ValidCompactorWriteIdList(ValidWriteIdList):
    """The compactor's view of one table (Hive's ``ValidCompactorWriteIdList``).

    Every exception is aborted; exceptions above the high watermark are dropped on construction.
    """

    def __post_init__(self) -> None:
        ValidWriteIdList.__post_init__(self)
        hwm = self.high_watermark
        object.__setattr__(self, "open_ids", tuple(i for i in self.open_ids if i <= hwm))
        object.__setattr__(self, "aborted_ids", tuple(i for i in self.aborted_ids if i <= hwm))
        object.__setattr__(self, "exceptions", tuple(i for i in self.exceptions if i <= hwm))

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """ALL if every ID in the range is resolved (<= high watermark), else NONE."""
        return RangeResponse.ALL if self.high_watermark >= max_write_id else RangeResponse.NONE

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Every exception of the compactor's list is aborted."""
        return _is_member(self.exceptions, write_id)


def to_compactor_write_id_list(reader: ValidWriteIdList) -> ValidCompactorWriteIdList:
    """The compactor's list for a table, from its reader list (Hive's ``createValidCompactWriteIdList``).

    Only aborted IDs below the lowest open ID are kept; the high watermark drops to just below the
    lowest open ID so nothing a live writer may still add is compacted.
    """
    aborted: list[int] = []
    min_open: int | None = None
    for write_id in reader.exceptions:
        if _is_member(reader.aborted_ids, write_id):
            aborted.append(write_id)
        else:
            min_open = write_id
            break
    high_watermark = reader.high_watermark if min_open is None else min_open - 1
    return ValidCompactorWriteIdList(
        high_watermark=high_watermark,
        aborted_ids=tuple(aborted),
        # Hive's constructor keeps minOpenWriteId only when there are exceptions.
        min_open_id=min_open if aborted else None,
        table_name=reader.table_name,
    )


def _parse_id(value: str, text: str, what: str, expected: str) -> int:
    stripped = text[1:] if text.startswith("-") else text
    if not stripped.isdigit() or not stripped.isascii():
        raise InvalidWriteIdListError(value, expected, f"{what} {text!r} is not a number")
    number = int(text)
    if not _LONG_MIN <= number <= LONG_MAX:
        raise InvalidWriteIdListError(value, expected, f"{what} {text!r} does not fit a 64-bit long")
    return number


def _parse_ids(value: str, text: str, what: str, expected: str, *, ranges: bool = False) -> tuple[int, ...]:
    if not text:
        return ()
    ids: list[int] = []
    for part in text.split(","):
        low, dash, high = part.partition("-") if ranges else (part, "", "")
        if dash and low:
            first = _parse_id(value, low, what, expected)
            last = _parse_id(value, high, what, expected)
            if last < first:
                raise InvalidWriteIdListError(value, expected, f"{what} range {part!r} is reversed")
            ids.extend(range(first, last + 1))
        else:
            ids.append(_parse_id(value, part, what, expected))
    return tuple(ids)


def _java_split(value: str) -> list[str]:
    # String.split(":") in Java drops trailing empty strings; Hive relies on that.
    parts = value.split(":")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_TXN_FORMAT = "ValidTxnList (<hwm>:<minOpenTxn>:<open,..>:<aborted,..>)"
_WRITE_ID_FORMAT = "ValidWriteIdList (<db.table>:<hwm>:<minOpenWriteId>:<open,..>:<aborted,..>)"


def _parse_tail(
    value: str, parts: list[str], expected: str, *, ranges: bool = False
) -> tuple[int, int | None, tuple[int, ...], tuple[int, ...]]:
    if len(parts) < 2:
        raise InvalidWriteIdListError(value, expected, "needs at least a high watermark and a min open ID")
    if len(parts) > 4:
        raise InvalidWriteIdListError(
            value, expected, f"has {len(parts)} ':'-separated fields after the name"
        )
    high_watermark = _parse_id(value, parts[0], "high watermark", expected)
    min_open = _parse_id(value, parts[1], "min open ID", expected)
    open_ids = _parse_ids(value, parts[2] if len(parts) > 2 else "", "open ID", expected, ranges=ranges)
    aborted_ids = _parse_ids(value, parts[3] if len(parts) > 3 else "", "aborted ID", expected, ranges=ranges)
    _check_consistent(
        value, expected, high_watermark, min_open, (("open", open_ids), ("aborted", aborted_ids))
    )
    if ranges:
        # Hive 4's ValidReadTxnList.readFromString merges the open and the aborted lists assuming
        # each is ascending: an unsorted list would be misread, not sorted.
        for what, ids in (("open", open_ids), ("aborted", aborted_ids)):
            for first, second in itertools.pairwise(ids):
                if second <= first:
                    raise InvalidWriteIdListError(
                        value, expected, f"{what} IDs are not strictly ascending ({first} then {second})"
                    )
    overlap = set(open_ids) & set(aborted_ids)
    if overlap:
        raise InvalidWriteIdListError(value, expected, f"ID {min(overlap)} is both open and aborted")
    _check_min_open(value, expected, high_watermark, min_open, tuple(sorted(open_ids)))
    return high_watermark, (None if min_open == LONG_MAX else min_open), open_ids, aborted_ids


def _check_consistent(
    value: str,
    expected: str,
    high_watermark: int,
    min_open: int,
    lists: tuple[tuple[str, tuple[int, ...]], ...],
) -> None:
    # Hive parses any long, but its own writers (TxnHandler.getOpenTxns, getValidWriteIds) never
    # produce these; Hive would misread them (a negative watermark hides every row, an exception
    # above the watermark is counted twice by isWriteIdRangeValid), so refuse them by name.
    if high_watermark < 0:
        raise InvalidWriteIdListError(
            value, expected, f"high watermark {high_watermark} is negative; expected a number >= 0"
        )
    if min_open < 1:
        raise InvalidWriteIdListError(
            value,
            expected,
            f"min open ID {min_open} is below 1; expected an ID >= 1, or {LONG_MAX} when nothing is open",
        )
    for what, ids in lists:
        for number in ids:
            if number < 1:
                raise InvalidWriteIdListError(
                    value, expected, f"{what} ID {number} is below 1; expected IDs >= 1"
                )
            if number > high_watermark:
                raise InvalidWriteIdListError(
                    value,
                    expected,
                    f"{what} ID {number} is above the high watermark {high_watermark}; "
                    "expected open and aborted IDs <= the high watermark",
                )


def _check_min_open(
    value: str, expected: str, high_watermark: int, min_open: int, open_ids: tuple[int, ...]
) -> None:
    # Hive's writers set minOpen to the lowest open ID (TxnHandler.getValidWriteIdsForTable,
    # TxnCommonUtils.createValidReadTxnList), Long.MAX_VALUE when none is open, or (compactor lists,
    # createValidCompactWriteIdList) just above the high watermark. isValidBase trusts it, so a
    # minOpen that disagrees with the open list would make base validity use one ID while the list
    # (and every message) shows another.
    if open_ids and min_open > open_ids[0]:
        raise InvalidWriteIdListError(
            value,
            expected,
            f"min open ID {min_open} is above the lowest open ID {open_ids[0]}; "
            f"expected the lowest open ID ({open_ids[0]}) as min open ID",
        )
    if open_ids and min_open < open_ids[0]:
        raise InvalidWriteIdListError(
            value,
            expected,
            f"min open ID {min_open} is not open (the lowest open ID is {open_ids[0]}); "
            f"expected the lowest open ID ({open_ids[0]}) as min open ID",
        )
    if not open_ids and min_open <= high_watermark:
        raise InvalidWriteIdListError(
            value,
            expected,
            f"min open ID {min_open} is not open (no open IDs) but is <= the high watermark "
            f"{high_watermark}; expected {LONG_MAX} when nothing is open",
        )


def parse_valid_txn_list(value: str) -> ValidTxnList:
    """Parse Hive's ``ValidReadTxnList`` string; an empty string means everything is committed.

    Raises:
        InvalidWriteIdListError: the string is not in Hive's format.

    >>> parse_valid_txn_list("7:5:5:3").is_txn_valid(4)
    True
    """
    if not value:
        return ValidTxnList()
    hwm, min_open, open_ids, aborted_ids = _parse_tail(value, _java_split(value), _TXN_FORMAT, ranges=True)
    return ValidTxnList(hwm, open_ids, aborted_ids, min_open)


def parse_valid_write_id_list(value: str) -> ValidWriteIdList:
    """Parse Hive's ``ValidReaderWriteIdList`` string; empty means everything is committed.

    Raises:
        InvalidWriteIdListError: the string is not in Hive's format.

    >>> parse_valid_write_id_list("db.t:7:5:5:3").is_write_id_valid(5)
    False
    """
    if not value:
        return ValidWriteIdList()
    parts = _java_split(value)
    if len(parts) < 3:
        raise InvalidWriteIdListError(
            value, _WRITE_ID_FORMAT, "needs a table name, a high watermark and a min open write ID"
        )
    table = None if parts[0].lower() == "null" else parts[0]
    hwm, min_open, open_ids, aborted_ids = _parse_tail(value, parts[1:], _WRITE_ID_FORMAT)
    return ValidWriteIdList(hwm, open_ids, aborted_ids, min_open, table)


def parse_valid_compactor_write_id_list(value: str) -> ValidCompactorWriteIdList:
    """Parse a compactor list string (same format; every exception should be aborted)."""
    reader = parse_valid_write_id_list(value)
    return ValidCompactorWriteIdList(
        reader.high_watermark, reader.open_ids, reader.aborted_ids, reader.min_open_id, reader.table_name
    )


@dataclass(frozen=True, slots=True)
class NewlyValidWriteIds:
    """The write IDs valid in one snapshot of a table and not in an earlier one (``newly_valid_write_ids``).

    Attributes:
        above: IDs greater than this ...
        up_to: ... and at most this (an empty range when ``up_to <= above``) ...
        also: ... and these, at or below ``above``: exceptions of the earlier snapshot (open or
            aborted then) that the later one holds valid, ascending.

    Every ID in the range that the later snapshot does not hold valid (open or aborted in it) is
    included too: the range is a superset, meant to be matched against committed writes only
    (Hive's COMPLETED_TXN_COMPONENTS), which never hold an open or aborted ID.
    """

    above: int
    up_to: int
    also: tuple[int, ...] = ()

    @property
    def is_empty(self) -> bool:
        """Whether no ID at all is newly valid."""
        return self.up_to <= self.above and not self.also


def newly_valid_write_ids(previous: ValidWriteIdList, current: ValidWriteIdList) -> NewlyValidWriteIds | None:
    """The write IDs ``current`` holds valid and ``previous`` did not, or None when that is not a range.

    The initiator's skip in HMS mode (``compaction.backlog``): a write committed under one of these
    IDs happened (for the compactor) after the previous cycle's snapshot. None when ``current``'s
    high watermark is below ``previous``'s, or an ID valid before is not valid now (never so for
    two snapshots of one table taken in order): the caller then trusts neither.

    >>> before, after = ValidWriteIdList(7, open_ids=(5,), aborted_ids=(3,)), ValidWriteIdList(9, aborted_ids=(3,))
    >>> newly_valid_write_ids(before, after)
    NewlyValidWriteIds(above=7, up_to=9, also=(5,))
    >>> newly_valid_write_ids(after, before) is None
    True
    """
    if current.high_watermark < previous.high_watermark:
        return None
    for write_id in current.exceptions:
        if write_id <= previous.high_watermark and previous.is_write_id_valid(write_id):
            return None
    also = tuple(
        w for w in previous.exceptions if w <= previous.high_watermark and current.is_write_id_valid(w)
    )
    return NewlyValidWriteIds(previous.high_watermark, current.high_watermark, also)
