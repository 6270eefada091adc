"""Progress lines for ``acidflow compact``: which compaction, which bucket, how long, still alive.

::

    compaction 3 (/wh/web_events/ds=2024-01-01): 2 buckets, embedded
    compaction 3: bucket 1/2 merged (0.4 s)
    compaction 3: still merging bucket 2/2 (elapsed 30 s)        every ``interval`` seconds
    compaction 3: bucket 2/2 merged (31.2 s)
    compaction 4 (/wh/clicks): 1 bucket, on Spark
    compaction 4: still running on Spark (elapsed 30 s)

``ProgressReporter.wrap(runner, where)`` returns a task runner (the worker's ``run_tasks`` or
``WorkerOptions.large_runner`` signature) that reports around the real one; nothing else changes:
the same tasks run, in the same order, with the same heartbeats.
Lines go to a text stream (stderr by default), so ``--json`` output on stdout stays parseable.
Not here: the compaction itself (``worker``). Errors: whatever the wrapped runner raises, unchanged.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from acid_core.compaction.worker import BucketResult, BucketTask

    TaskRunner = Callable[[Sequence[BucketTask], Callable[[], None]], list[BucketResult]]

__all__ = ["ProgressReporter"]


class ProgressReporter:
    """Prints progress lines of compactions to ``stream``, and a "still ..." line every ``interval`` s.

    Args:
        stream: where the lines go (default ``sys.stderr``).
        interval: seconds between "still running" lines while one step takes long.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        """Print one progress line (thread-safe, flushed)."""
        stream = self._stream or sys.stderr
        with self._lock:
            stream.write(text + "\n")
            stream.flush()

    def _ticking(self, label: Callable[[], str], started: float) -> tuple[threading.Event, threading.Thread]:
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self._interval):
                self.line(f"{label()} (elapsed {self._clock() - started:.0f} s)")

        thread = threading.Thread(target=tick, name="acidflow-progress", daemon=True)
        thread.start()
        return stop, thread

    def wrap(self, runner: TaskRunner, where: str) -> TaskRunner:
        """A runner that reports around ``runner``; ``where`` is ``embedded`` or ``on Spark``."""

        def run(tasks: Sequence[BucketTask], heartbeat: Callable[[], None]) -> list[BucketResult]:
            if not tasks:
                return runner(tasks, heartbeat)
            compaction_id = tasks[0].compaction_id
            count = len(tasks)
            self.line(
                f"compaction {compaction_id} ({tasks[0].location}): {count} bucket{'s' if count != 1 else ''}, {where}"
            )
            started = self._clock()
            if where != "embedded":
                stop, thread = self._ticking(
                    lambda: f"compaction {compaction_id}: still running {where}", started
                )
                try:
                    return runner(tasks, heartbeat)
                finally:
                    stop.set()
                    thread.join()
            results: list[BucketResult] = []
            current = [0]
            stop, thread = self._ticking(
                lambda: f"compaction {compaction_id}: still merging bucket {current[0]}/{count}", started
            )
            try:
                for index, task in enumerate(tasks, start=1):
                    current[0] = index
                    results.extend(runner([task], heartbeat))
                    self.line(
                        f"compaction {compaction_id}: bucket {index}/{count} merged "
                        f"({self._clock() - started:.1f} s)"
                    )
            finally:
                stop.set()
                thread.join()
            return results

        return run
