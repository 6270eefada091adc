"""prefetch: a producer in its own thread, items in order, errors and early stops handled."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.orc.stream import prefetch


def _alive_prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("test-prefetch")]


@settings(max_examples=50, deadline=None)
@given(items=st.lists(st.integers()), depth=st.integers(1, 4))
def test_prefetch_yields_every_item_in_order(items, depth):
    assert list(prefetch(iter(items), depth, name="test-prefetch")) == items
    assert _alive_prefetch_threads() == []


def test_prefetch_runs_the_producer_in_another_thread():
    consumer = threading.get_ident()

    def produce():
        for _ in range(3):
            yield threading.get_ident()

    assert all(ident != consumer for ident in prefetch(produce(), name="test-prefetch"))


@settings(max_examples=30, deadline=None)
@given(before=st.integers(0, 6), depth=st.integers(1, 3))
def test_prefetch_raises_the_producers_error_after_the_items_before_it(before, depth):
    def produce():
        yield from range(before)
        raise ValueError("bad stripe")

    seen = []

    def consume():
        for item in prefetch(produce(), depth, name="test-prefetch"):
            seen.append(item)

    with pytest.raises(ValueError, match="bad stripe"):
        consume()
    assert seen == list(range(before))
    assert _alive_prefetch_threads() == []


@settings(max_examples=30, deadline=None)
@given(taken=st.integers(0, 5), depth=st.integers(1, 3))
def test_prefetch_closed_early_closes_the_producer_and_joins_its_thread(taken, depth):
    closed = threading.Event()
    produced = []

    def produce():
        try:
            for i in range(1000):
                produced.append(i)
                yield i
        finally:
            closed.set()

    stream = prefetch(produce(), depth, name="test-prefetch")
    got = [item for _, item in zip(range(taken), stream, strict=False)]
    stream.close()
    assert got == list(range(taken))
    # the producer's finally ran (its files are closed), or it never started
    assert closed.is_set() or (taken == 0 and produced == [])
    assert len(produced) <= taken + depth + 1  # bounded: never ran ahead by more than depth
    assert _alive_prefetch_threads() == []


def test_prefetch_rejects_a_depth_below_one():
    with pytest.raises(ValueError, match="depth must be >= 1"):
        list(prefetch(iter([1]), 0))


def test_write_csv_writes_each_batch_before_the_next_is_produced():
    import io

    import pyarrow as pa

    from acid_core.orc.stream import write_csv

    schema = pa.schema([("row__id", pa.struct([("writeid", pa.int64())])), ("a", pa.string())])
    sink = io.BytesIO()
    seen_lines: list[int] = []

    def batches():
        for i in range(3):
            seen_lines.append(len(sink.getvalue().splitlines()))  # header + rows written so far
            yield pa.record_batch([pa.array([{"writeid": i}]), pa.array([f'x,"{i}'])], schema=schema)

    assert write_csv(batches(), schema, sink) == 3
    assert seen_lines == [0, 2, 3]  # never collected: each batch was out before the next was made
    assert sink.getvalue().splitlines() == [
        b'"row__id.writeid","a"',
        b'0,"x,""0"',
        b'1,"x,""1"',
        b'2,"x,""2"',
    ]


def test_write_csv_failing_first_batch_writes_nothing():
    import io

    import pyarrow as pa

    from acid_core.orc.stream import write_csv

    def batches():
        raise ValueError("corrupt stripe")
        yield  # pragma: no cover

    sink = io.BytesIO()
    with pytest.raises(ValueError, match="corrupt stripe"):
        write_csv(batches(), pa.schema([("a", pa.int64())]), sink)
    assert sink.getvalue() == b""


def test_write_csv_with_no_batches_writes_the_header():
    import io

    import pyarrow as pa

    from acid_core.orc.stream import write_csv

    sink = io.BytesIO()
    assert write_csv([], pa.schema([("a", pa.int64())]), sink) == 0
    assert sink.getvalue() == b'"a"\n'
