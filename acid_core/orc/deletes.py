"""Delete-event registries: which row versions merge-on-read hides, vectorized on numpy.

A registry holds *overrides* keyed by Hive's ``RecordIdentifier`` order ``(originalTransaction,
bucket, rowId)``; each carries ``hide_below``: a row version whose ``currentTransaction`` is below it
is hidden::

    delete event (operation 2), valid in the snapshot   hide_below = LONG_MAX  (every version)
    legacy update (operation 1) written by write ID U    hide_below = U        (older versions)

    registry (sorted, unique keys)         batch of row events              hidden?
    (2, 536870912, 0)  LONG_MAX            (2, 536870912, 0) cur 2          yes
    (2, 536870912, 7)  LONG_MAX            (2, 536870912, 1) cur 2          no
    (5, 536870912, 3)  6                   (5, 536870912, 3) cur 5          yes (updated by 6)
                                           (5, 536870912, 3) cur 6          no  (the newest version)

Two implementations, as in Hive's ``VectorizedOrcAcidRowBatchReader``:

- ``ColumnizedDeleteRegistry`` loads every valid event into four sorted arrays (Hive's
  ``ColumnizedDeleteEventRegistry``); a batch is looked up with binary searches on one int64 key
  built from the batch's key ranges, or with a lexsort merge when the ranges do not fit 62 bits.
- ``SortMergedDeleteRegistry`` streams the events of every delete file in key order and keeps only
  those between the lowest and highest key of the current batch (Hive's
  ``SortMergedDeleteEventRegistry``); memory is one stripe per delete file plus that window. Batches
  must come mostly in ascending key order; a batch whose lowest key is below the window restarts
  the streams (correct, only slower).

``bucket`` values are compared after ``normalize_bucket``: Hive 2 (BucketCodec V0) values are the
plain bucket number, Hive 3 (V1) values encode bucket and statement; V0 values are re-encoded as V1
with statement 0 so a Hive 3 delete of a row written by Hive 2 (or of an original file's synthetic
row) still matches.

Invariants: ``hidden`` depends only on the set of events, never on their order across files.
Not here: choosing files or snapshots (``reader``), decoding ORC (``reader``).
Errors: ``InvalidEventError`` when the sort-merge registry meets a delete file out of key order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from acid_core.errors import InvalidEventError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

__all__ = [
    "LONG_MAX",
    "ColumnizedDeleteRegistry",
    "DeleteRegistry",
    "EventChunk",
    "SortMergedDeleteRegistry",
    "hide_all",
    "lex_search",
    "normalize_bucket",
]

LONG_MAX: Final = 2**63 - 1
_V1_FLAG: Final = 1 << 29
_COMBINED_LIMIT: Final = 2**62
_CHECK_BLOCK: Final = 1 << 16

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
EventChunk = tuple[I64, I64, I64, I64]
"""``(originalTransaction, bucket (normalized), rowId, hide_below)`` arrays of equal length."""


def normalize_bucket(bucket: npt.NDArray[np.integer]) -> I64:
    """Bucket property values as int64, Hive 2 (V0) values re-encoded as V1 with statement 0.

    >>> normalize_bucket(np.array([0, 2, 537001984], dtype=np.int32)).tolist()
    [536870912, 537001984, 537001984]
    """
    values = bucket.astype(np.int64, copy=False)
    if values.size == 0 or int(values.min()) >= _V1_FLAG:
        return values
    return np.where((values >> 29) == 0, _V1_FLAG | (values << 16), values)


def _empty() -> I64:
    return np.empty(0, dtype=np.int64)


def hide_all(size: int) -> I64:
    """``hide_below`` of ``size`` delete events: LONG_MAX, as a zero-memory broadcast view."""
    return np.broadcast_to(np.int64(LONG_MAX), (size,))


def _gather(chunks: Iterable[EventChunk], capacity: int | None) -> EventChunk:
    """Concatenate chunks, into one allocation of ``capacity`` rows when the caller knows it.

    ``hide_below`` stays a broadcast view while every chunk is a pure delete (no legacy update),
    so a delete set costs 24 bytes per event, not 32.
    """
    if capacity is None:
        parts = list(chunks)
        if not parts:
            return _empty(), _empty(), _empty(), _empty()
        o = np.concatenate([p[0] for p in parts])
        b = np.concatenate([p[1] for p in parts])
        r = np.concatenate([p[2] for p in parts])
        if all(p[3].strides == (0,) and p[3].size and p[3][0] == LONG_MAX for p in parts if p[3].size):
            return o, b, r, hide_all(o.size)
        return o, b, r, np.concatenate([np.asarray(p[3]) for p in parts])
    o, b, r = (np.empty(capacity, dtype=np.int64) for _ in range(3))
    h: I64 | None = None
    size = 0
    for co, cb, cr, ch in chunks:
        end = size + co.size
        if end > capacity:  # more events than announced: stop preallocating
            rest = _gather(chunks, None)
            head = (o[:size], b[:size], r[:size], hide_all(size) if h is None else h[:size])
            return _gather([head, (co, cb, cr, ch), rest], None)
        o[size:end], b[size:end], r[size:end] = co, cb, cr
        if h is None and not (ch.strides == (0,) and (ch.size == 0 or ch[0] == LONG_MAX)):
            h = np.full(capacity, LONG_MAX, dtype=np.int64)
        if h is not None:
            h[size:end] = ch
        size = end
    if size < capacity // 2:  # many events were not valid: do not keep the unused half
        o, b, r = o[:size].copy(), b[:size].copy(), r[:size].copy()
        h = None if h is None else h[:size].copy()
    return o[:size], b[:size], r[:size], hide_all(size) if h is None else h[:size]


def _sort_unique(chunks: Iterable[EventChunk], capacity: int | None = None) -> EventChunk:
    o, b, r, h = _gather(chunks, capacity)
    if o.size == 0 or _strictly_increasing(o, b, r):
        return o, b, r, h  # delete deltas are written in key order: usually nothing to sort
    order = np.lexsort((h, r, b, o))
    o, b, r, h = o[order], b[order], r[order], h[order]
    # Keep the last of equal keys: the one with the highest hide_below (sorted last).
    last = np.ones(o.size, dtype=np.bool_)
    last[:-1] = (o[1:] != o[:-1]) | (b[1:] != b[:-1]) | (r[1:] != r[:-1])
    if last.all():
        return o, b, r, h
    return o[last], b[last], r[last], h[last]


def _strictly_increasing(o: I64, b: I64, r: I64) -> bool:
    """Whether consecutive keys strictly increase (so the arrays are sorted and unique).

    Checked in overlapping blocks so the temporaries stay small next to a large delete set.
    """
    for start in range(0, max(o.size - 1, 0), _CHECK_BLOCK):
        part = slice(start, start + _CHECK_BLOCK + 1)
        if not _block_increasing(o[part], b[part], r[part]):
            return False
    return True


def _block_increasing(o: I64, b: I64, r: I64) -> bool:
    omin, bmin, rmin = int(o.min()), int(b.min()), int(r.min())
    b_span, r_span = int(b.max()) - bmin + 1, int(r.max()) - rmin + 1
    if (int(o.max()) - omin + 1) * b_span * r_span < _COMBINED_LIMIT:
        key = ((o - omin) * b_span + (b - bmin)) * r_span + (r - rmin)
        return bool(np.all(key[1:] > key[:-1]))
    do, db, dr = o[1:] - o[:-1], b[1:] - b[:-1], r[1:] - r[:-1]
    return bool(np.all((do > 0) | ((do == 0) & ((db > 0) | ((db == 0) & (dr > 0))))))


def lex_search(o: I64, b: I64, r: I64, key: tuple[int, int, int], right: bool) -> int:
    """The insertion point of ``key`` in lexicographically sorted ``(o, b, r)`` (numpy's searchsorted).

    Args:
        o: first key column, sorted.
        b: second key column, sorted within equal ``o``.
        r: third key column, sorted within equal ``(o, b)``.
        key: the key to look up.
        right: return the position after equal keys instead of before.

    >>> a = np.array([1, 1, 2], dtype=np.int64)
    >>> lex_search(a, np.array([5, 6, 5], dtype=np.int64), np.array([0, 0, 0], dtype=np.int64), (1, 6, 0), right=True)
    2
    """
    side: Final = "right" if right else "left"
    ko, kb, kr = key
    lo = int(np.searchsorted(o, ko, "left"))
    hi = int(np.searchsorted(o, ko, "right"))
    if lo == hi:
        return lo
    lo, hi = lo + int(np.searchsorted(b[lo:hi], kb, "left")), lo + int(np.searchsorted(b[lo:hi], kb, "right"))
    if lo == hi:
        return lo
    return lo + int(np.searchsorted(r[lo:hi], kr, side))


def _lex_min(o: I64, b: I64, r: I64) -> tuple[int, int, int]:
    omin = o.min()
    at = o == omin
    bmin = b[at].min()
    return int(omin), int(bmin), int(r[at & (b == bmin)].min())


def _lex_max(o: I64, b: I64, r: I64) -> tuple[int, int, int]:
    omax = o.max()
    at = o == omax
    bmax = b[at].max()
    return int(omax), int(bmax), int(r[at & (b == bmax)].max())


class DeleteRegistry:
    """What the scan asks of a registry (a base class rather than a Protocol: two implementations)."""

    def hidden(self, o: I64, b: I64, r: I64, current: I64) -> Mask | None:
        """Which rows of a batch are hidden; None when none is.

        Args:
            o: ``originalTransaction`` of each row event.
            b: ``bucket``, normalized with ``normalize_bucket``.
            r: ``rowId``.
            current: ``currentTransaction`` of each row event.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release open files (a no-op for in-memory registries)."""


class ColumnizedDeleteRegistry(DeleteRegistry):
    """Every valid override in memory, as sorted arrays with unique keys."""

    def __init__(self, chunks: Iterable[EventChunk], capacity: int | None = None) -> None:
        """Load and sort the events.

        Args:
            chunks: the valid overriding events, in any order.
            capacity: an upper bound of their number (from file footers), to allocate once.
        """
        self.o, self.b, self.r, self.h = _sort_unique(chunks, capacity)

    def __len__(self) -> int:
        return int(self.o.size)

    def hidden(self, o: I64, b: I64, r: I64, current: I64) -> Mask | None:
        """See ``DeleteRegistry.hidden``."""
        if o.size == 0 or self.o.size == 0:
            return None
        omin, omax = int(o.min()), int(o.max())
        bmin, bmax = int(b.min()), int(b.max())
        rmin, rmax = int(r.min()), int(r.max())
        start = lex_search(self.o, self.b, self.r, (omin, bmin, rmin), right=False)
        stop = lex_search(self.o, self.b, self.r, (omax, bmax, rmax), right=True)
        if start >= stop:
            return None
        ro, rb, rr, rh = self.o[start:stop], self.b[start:stop], self.r[start:stop], self.h[start:stop]
        if omin == omax and bmin == bmax:
            # The common batch: one insert delta's rows of one bucket and statement.
            return _match_sorted(rr, rh, r, current)
        keep = (rb >= bmin) & (rb <= bmax) & (rr >= rmin) & (rr <= rmax)
        if not keep.all():
            ro, rb, rr, rh = ro[keep], rb[keep], rr[keep], rh[keep]
            if ro.size == 0:
                return None
        b_span, r_span = bmax - bmin + 1, rmax - rmin + 1
        if (omax - omin + 1) * b_span * r_span < _COMBINED_LIMIT:
            # One order-preserving int64 key per row; the registry slice stays sorted.
            row_key = ((o - omin) * b_span + (b - bmin)) * r_span + (r - rmin)
            reg_key = ((ro - omin) * b_span + (rb - bmin)) * r_span + (rr - rmin)
            return _match_sorted(reg_key, rh, row_key, current)
        return _match_lexsort(ro, rb, rr, rh, o, b, r, current)


def _match_sorted(reg_key: I64, reg_hide: I64, row_key: I64, current: I64) -> Mask | None:
    if reg_key.size * 4 < row_key.size and bool(np.all(row_key[1:] > row_key[:-1])):
        # Few overrides against sorted, unique rows (the usual batch): search the rows instead.
        at = np.searchsorted(row_key, reg_key)
        inside = at < row_key.size
        at, hide = at[inside], reg_hide[inside]
        found = row_key[at] == reg_key[inside]
        at, hide = at[found], hide[found]
        if at.size == 0:
            return None
        hidden = np.zeros(row_key.size, dtype=np.bool_)
        hidden[at] = current[at] < hide
        return hidden if hidden.any() else None
    pos = np.searchsorted(reg_key, row_key)
    np.minimum(pos, reg_key.size - 1, out=pos)
    hidden = (reg_key[pos] == row_key) & (current < reg_hide[pos])
    return hidden if hidden.any() else None


def _match_lexsort(ro: I64, rb: I64, rr: I64, rh: I64, o: I64, b: I64, r: I64, current: I64) -> Mask | None:
    d = ro.size
    ko, kb, kr = np.concatenate([ro, o]), np.concatenate([rb, b]), np.concatenate([rr, r])
    tag = np.concatenate([np.zeros(d, dtype=np.int8), np.ones(o.size, dtype=np.int8)])
    order = np.lexsort((tag, kr, kb, ko))  # registry entries sort before rows with the same key
    so, sb, sr = ko[order], kb[order], kr[order]
    is_reg = order < d
    # For each sorted position, the latest registry entry at or before it.
    latest = np.where(is_reg, np.arange(order.size), -1)
    np.maximum.accumulate(latest, out=latest)
    has = latest >= 0
    safe = np.where(has, latest, 0)
    same = has & (so[safe] == so) & (sb[safe] == sb) & (sr[safe] == sr) & ~is_reg
    hidden = np.zeros(o.size, dtype=np.bool_)
    rows = order[same] - d
    registry_index = order[safe[same]]
    hidden[rows] = current[rows] < rh[registry_index]
    return hidden if hidden.any() else None


def _non_decreasing(o: I64, b: I64, r: I64) -> bool:
    do, db, dr = o[1:] - o[:-1], b[1:] - b[:-1], r[1:] - r[:-1]
    return bool(np.all((do > 0) | ((do == 0) & ((db > 0) | ((db == 0) & (dr >= 0))))))


class _Stream:
    """One delete file's valid events in key order, with a buffered window."""

    def __init__(self, label: str, chunks: Iterator[EventChunk]) -> None:
        self.label = label
        self.last: tuple[int, int, int] | None = None
        self.chunks = chunks
        self.buffer: EventChunk = (_empty(), _empty(), _empty(), _empty())
        self.exhausted = False

    def window(self, low: tuple[int, int, int], high: tuple[int, int, int]) -> EventChunk:
        o, b, r, h = self.buffer
        cut = lex_search(o, b, r, low, right=False)
        if cut:
            self.buffer = (o[cut:], b[cut:], r[cut:], h[cut:])
        while not self.exhausted and (
            self.buffer[0].size == 0
            or (int(self.buffer[0][-1]), int(self.buffer[1][-1]), int(self.buffer[2][-1])) <= high
        ):
            chunk = next(self.chunks, None)
            if chunk is None:
                self.exhausted = True
                break
            if chunk[0].size == 0:
                continue
            self._check_sorted(chunk)
            self.buffer = tuple(  # type: ignore[assignment]
                np.concatenate([old, new]) for old, new in zip(self.buffer, chunk, strict=True)
            )
            o, b, r, h = self.buffer
            cut = lex_search(o, b, r, low, right=False)
            if cut:
                self.buffer = (o[cut:], b[cut:], r[cut:], h[cut:])
        o, b, r, h = self.buffer
        stop = lex_search(o, b, r, high, right=True)
        return o[:stop], b[:stop], r[:stop], h[:stop]

    def _check_sorted(self, chunk: EventChunk) -> None:
        # Streaming relies on key order (so does Hive's SortMergedDeleteEventRegistry); a file out
        # of order would silently lose deletes, so it is an error here.
        o, b, r, _ = chunk
        first = (int(o[0]), int(b[0]), int(r[0]))
        if (self.last is not None and first < self.last) or not _non_decreasing(o, b, r):
            raise InvalidEventError(
                self.label,
                "delete events are not sorted by (originalTransaction, bucket, rowId)",
                "sorted delete deltas, as Hive writes them; hint: raise "
                "reader.delete-events-in-memory so the in-memory registry (which sorts) is used",
            )
        self.last = (int(o[-1]), int(b[-1]), int(r[-1]))


class SortMergedDeleteRegistry(DeleteRegistry):
    """Overrides streamed from sorted delete files; only the current batch's key window in memory.

    Args:
        open_streams: opens ``(file name, iterator of sorted EventChunk)`` per delete file; called
            again to restart when a batch's keys go below the current window.

    Raises:
        InvalidEventError: (from ``hidden``) a delete file whose events are not in key order.
    """

    def __init__(self, open_streams: Callable[[], list[tuple[str, Iterator[EventChunk]]]]) -> None:
        self._open_streams = open_streams
        self._streams: list[_Stream] | None = None
        self._floor: tuple[int, int, int] | None = None
        self.restarts = 0

    def hidden(self, o: I64, b: I64, r: I64, current: I64) -> Mask | None:
        """See ``DeleteRegistry.hidden``."""
        if o.size == 0:
            return None
        low, high = _lex_min(o, b, r), _lex_max(o, b, r)
        if self._streams is None or (self._floor is not None and low < self._floor):
            if self._streams is not None:
                self.restarts += 1
            self.close()
            self._streams = [_Stream(label, chunks) for label, chunks in self._open_streams()]
        self._floor = low
        windows = [stream.window(low, high) for stream in self._streams]
        registry = ColumnizedDeleteRegistry(w for w in windows if w[0].size)
        return registry.hidden(o, b, r, current)

    def close(self) -> None:
        """Close the delete files' iterators."""
        for stream in self._streams or ():
            close = getattr(stream.chunks, "close", None)
            if close is not None:
                close()
        self._streams = None
