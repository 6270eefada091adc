"""Run a batch producer in its own thread: decode and merge on one core, encode on the other.

    prefetch(batches, depth=2)              -> iterator      the producer runs in a background thread
    write_csv(batches, schema, sink)        -> rows written  CSV batch by batch (``acidflow read``)

Why threads: pyarrow releases the GIL while it decodes and encodes ORC (and numpy while it
merges), so a producer thread (decode + merge-on-read) and the consumer (encode + write) use two
cores at once. ``prefetch`` keeps at most ``depth`` items between them, so memory stays bounded
(``depth`` batches plus the one each side is working on) whatever the table size.

Invariants: items arrive in the producer's order; an exception in the producer is raised in the
consumer at the position it happened (after the items before it); when the consumer stops early
(an error, a limit, ``close()``), the producer is told to stop, its iterator is closed in its own
thread (so its ``finally`` blocks run) and the thread is joined before ``prefetch`` returns.
Not here: what the batches are (``orc.reader``), ORC files (``orc.writer``).
Errors: whatever the producer raises.
"""

from __future__ import annotations

import itertools
import queue
import threading
from typing import IO, TYPE_CHECKING, Final, TypeVar

import pyarrow as pa

if TYPE_CHECKING:
    from collections.abc import Generator, Iterable

__all__ = ["prefetch", "write_csv"]

T = TypeVar("T")

_POLL_SECONDS: Final = 0.05


class _End:
    """The producer's last message: finished (``error`` None) or failed."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


def prefetch(
    items: Iterable[T], depth: int = 2, *, name: str = "acidflow-prefetch"
) -> Generator[T, None, None]:
    """Iterate ``items`` in a background thread, keeping at most ``depth`` items ready.

    >>> list(prefetch(iter(range(5))))
    [0, 1, 2, 3, 4]
    """
    if depth < 1:
        raise ValueError(f"prefetch depth must be >= 1, got {depth}")
    ready: queue.Queue[T | _End] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: T | _End) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=_POLL_SECONDS)
            except queue.Full:
                continue
            return True
        return False

    def produce() -> None:
        iterator = iter(items)
        try:
            for item in iterator:
                if not offer(item):
                    return
            offer(_End(None))
        except BaseException as error:  # handed to the consumer, raised there
            offer(_End(error))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        stop.set()
        thread.join()


def write_csv(batches: Iterable[pa.RecordBatch], schema: pa.Schema, sink: IO[bytes]) -> int:
    """Write batches to ``sink`` as CSV as they come: one header, then each batch; returns the rows.

    Struct columns are flattened (``row__id`` becomes ``row__id.writeid``, ``row__id.bucketid``,
    ``row__id.rowid``). Only one batch is in memory at a time, so the peak does not grow with the
    rows; with no batches only the header is written.

    >>> import io
    >>> out = io.BytesIO()
    >>> write_csv([pa.record_batch({"a": [1, 2]})], pa.schema([("a", pa.int64())]), out)
    2
    >>> out.getvalue().splitlines()
    [b'"a"', b'1', b'2']
    """
    import pyarrow.csv as pa_csv

    flat = schema.empty_table().flatten().schema
    rows = 0
    # The first batch before the header: a table that fails on its first batch writes nothing.
    iterator = iter(batches)
    first = next(iterator, None)
    with pa_csv.CSVWriter(sink, flat) as writer:
        for batch in () if first is None else itertools.chain((first,), iterator):
            writer.write_table(pa.Table.from_batches([batch]).flatten())
            rows += batch.num_rows
    return rows
