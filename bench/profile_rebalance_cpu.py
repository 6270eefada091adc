"""Issue 23c: which processes and threads use the CPU while a rebalance's Spark job runs.

    python -m bench.profile_rebalance_cpu [--rows 4000000] [--rounds 2] [--conf k=v ...]

Not a goal benchmark (no ``bench_`` prefix: ``python -m bench`` and the smoke test skip it); the
measurement behind the "where the second core goes" part of ``bench/RESULTS.md``. The goal's
pinned cluster (``start_cluster(pin_cores=True)``: worker N, its executor and Python workers on
CPU N; the driver unpinned) runs ``bench_rebalance``'s rebalance with 1 and then 2 workers,
``--rounds`` times, each with Spark's event log on. A sampling thread reads ``/proc`` every
``--interval`` seconds: the CPU time of every Spark process (driver JVM, executor JVMs, the
master and worker daemons, ``pyspark.daemon`` and its Python workers) and of each thread of the
driver and executor JVMs. Printed for each run: the compaction job's wall (its submission to its
end, from the event log) and the CPU each process kind, and the busiest JVM threads, used in that
window. The sampler costs CPU itself (~0.1 s per second of job on this machine), so the walls here
are not the bench's; compare the CPU split. ``--conf k=v`` adds driver settings to every
``spark-submit`` (e.g. ``spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench import bench_rebalance

_TICK = os.sysconf("SC_CLK_TCK")
# (marker in /proc/PID/cmdline, kind), first match wins: JVMs by their main class, then Python.
_KINDS = (
    ("CoarseGrainedExecutorBackend", "executor JVM"),
    ("org.apache.spark.deploy.worker.Worker", "worker daemon JVM"),
    ("org.apache.spark.deploy.master.Master", "master JVM"),
    ("org.apache.spark.deploy.SparkSubmit", "driver JVM"),
    ("pyspark.daemon", "Python workers (pyspark.daemon)"),
    ("pyspark.worker", "Python workers (pyspark.daemon)"),
    ("spark_jobs/compact.py", "driver Python"),
)
_THREADED = ("executor JVM", "driver JVM")


def _kind(pid: int) -> str | None:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    return next((kind for marker, kind in _KINDS if marker in command), None)


def _ticks(stat: str) -> tuple[str, int]:
    """(comm, utime + stime) of a /proc stat line."""
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat.rsplit(")", 1)[1].split()
    return comm, int(fields[11]) + int(fields[12])


class Sampler:
    """Samples the CPU ticks of Spark's processes (and their JVM threads) in a thread."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.samples: list[tuple[float, dict[tuple[str, int], int]]] = []
        self._kinds: dict[int, tuple[int, str | None]] = {}  # pid: (start time, kind)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            uptime = float(Path("/proc/uptime").read_text().split()[0])
            snapshot: dict[tuple[str, int], int] = {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                pid = int(entry)
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    started = int(stat.rsplit(")", 1)[1].split()[19])
                    # A new PID, a reused one, or one young enough to exec into another program
                    # (spark-submit's shell becomes the driver JVM): classify it (again).
                    cached = self._kinds.get(pid)
                    if cached is None or cached[0] != started or uptime - started / _TICK < 5:
                        self._kinds[pid] = cached = (started, _kind(pid))
                    kind = cached[1]
                    if kind is None:
                        continue
                    snapshot[(kind, pid)] = _ticks(stat)[1]
                    if kind in _THREADED:
                        for tid in os.listdir(f"/proc/{pid}/task"):
                            comm, ticks = _ticks(Path(f"/proc/{pid}/task/{tid}/stat").read_text())
                            snapshot[(f"{kind} / {comm}", -int(tid))] = ticks
                except OSError:  # the process or thread ended between the listing and the read
                    continue
            self.samples.append((now, snapshot))
            self._stop.wait(self.interval)

    def cpu_between(self, start: float, end: float) -> dict[tuple[str, int], float]:
        """CPU seconds of each (kind, pid or -tid) from the last sample before ``start`` to the first after ``end``."""
        before = max((s for s in self.samples if s[0] <= start), key=lambda s: s[0])[1]
        after = min((s for s in self.samples if s[0] >= end), key=lambda s: s[0])[1]
        return {
            key: (ticks - before.get(key, 0)) / _TICK
            for key, ticks in after.items()
            if ticks > before.get(key, 0)
        }


def _job_window(event_log: Path) -> tuple[float, float]:
    """(submission, completion) epoch seconds of the compaction job in a Spark event log."""
    for path in event_log.rglob("events_*"):
        described: dict[int, tuple[str, float]] = {}
        for text in path.read_text().splitlines():
            event = json.loads(text)
            if event["Event"] == "SparkListenerJobStart":
                description = event.get("Properties", {}).get("spark.job.description") or ""
                described[event["Job ID"]] = (description, event["Submission Time"] / 1000)
            elif event["Event"] == "SparkListenerJobEnd":
                description, submitted = described.get(event["Job ID"], ("", 0.0))
                if bench_rebalance.is_compaction_job(description):
                    return submitted, event["Completion Time"] / 1000
    raise SystemExit(f"no compaction job in the event log {event_log}")


def main(argv: list[str] | None = None) -> int:
    from tests.fixtures.spark_cluster import start_cluster

    parser = argparse.ArgumentParser(prog="profile_rebalance_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--deltas", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--interval", type=float, default=0.02, help="sampling interval, seconds")
    parser.add_argument("--conf", action="append", default=[], help="a --conf k=v for every spark-submit")
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="acidflow-profile-rebalance-cpu-") as scratch,
        Sampler(args.interval) as sampler,
    ):
        root = Path(scratch)
        cluster = start_cluster(root / "cluster", workers=2, pin_cores=True)
        if args.conf:
            base_args = cluster.conf_args
            cluster.conf_args = lambda: [*base_args(), *(a for c in args.conf for a in ("--conf", c))]  # type: ignore[method-assign]
        try:
            for round_ in range(args.rounds):
                for workers in (1, 2):
                    warehouse = str(root / f"wh-{workers}-{round_}")
                    compaction_id = bench_rebalance.build(warehouse, args.rows, args.deltas, 2)
                    event_log = root / f"events-{workers}-{round_}"
                    _, work = bench_rebalance._submit(cluster, warehouse, compaction_id, workers, event_log)
                    start, end = _job_window(event_log)
                    time.sleep(3 * args.interval)  # a sample after the job's end
                    cpu = sampler.cpu_between(start, end)
                    kinds: dict[str, float] = defaultdict(float)
                    for (kind, pid), seconds in cpu.items():
                        if pid > 0:
                            kinds[kind] += seconds
                    threads = sorted(((s, k) for (k, pid), s in cpu.items() if pid < 0), reverse=True)[:8]
                    print(
                        f"{workers} worker(s), round {round_ + 1}: job {end - start:.2f} s (rebalance {work:.2f} s);"
                        " CPU in the job: "
                        + ", ".join(
                            f"{k} {s:.2f} s" for k, s in sorted(kinds.items(), key=lambda kv: -kv[1])
                        ),
                        flush=True,
                    )
                    print(
                        "    busiest JVM threads: " + ", ".join(f"{k} {s:.2f} s" for s, k in threads),
                        flush=True,
                    )
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
