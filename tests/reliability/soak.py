"""The multi-process kill -9 soak: a writer, a compactor and a cleaner, SIGKILLed at random.

::

    run_soak(SoakConfig(seed=7, warehouse=dir, metastore_url=None | "postgresql+psycopg2://..."))
      1. create default.t; put sentinels outside the table (the warehouse root, a sibling table
         whose name starts with the table's, a directory that looks like a delta) and a hidden
         file inside it
      2. start the three OS processes (``tests.reliability.actors``), each seeded from the run's
         seed; they meet only in the metastore (transactions, queue, leases, SQL locks)
      3. every kill_interval: SIGKILL one of them (writer, compactor or cleaner, at random) once
         it is ready, wait for it, start it again with a new seed; the writer checks SELECT and
         every live lease against the model after each of its steps, and after each restart
      4. when the writer reached its operations: SIGKILL the others; recovery as an operator
         would run it: the writer's journal resolved, its checks once more; every lease released;
         ``acidflow compact --type major``, then ``acidflow clean`` until nothing is ready, in
         rounds until one base is left (at most three; Hive's write-ID rule can need two)
      5. the invariants: no committed row lost and no aborted/uncommitted row visible (SELECT ==
         model), every lease read its rows at every step (no lease broken), every sentinel intact
         (nothing deleted outside the table), the table converged to one base (nothing newer
         was written), no staging directory left

With ``faults`` (the fault profile, issue 24 part 3) a ``FaultInjector`` thread
(``tests.reliability.injector``) breaks the services during step 3 at seeded random times and heals
them (a PostgreSQL restart, an outage, a partition; a Hive Metastore kill -9 and restart; the
warehouse remounted read-only). A writer stopped by a fault exits 4 after one line; the compactor's
and the cleaner's commands fail with ``acidflow: error:`` lines: every such line must name the
service (``writer.names_service``) and come without a traceback, anything else is a failure; the
distinct lines (digits as ``N``) are in the report. The driver starts a stopped writer again (its
recovery resolves the write in flight, as after a kill). Step 4 starts once the last fault has
healed; a cleaning a fault put into its back-off (Hive's ``CQ_RETRY_RETENTION``) is run as the
next run after the back-off would be.

The warehouse may be a URI (``s3://bucket/wh``, with a ``metastore_url`` and a local ``run_dir``):
sentinels, the final listing and the table go through acidflow's own filesystem (``file_io_for``),
the journal, event log and actor logs stay on the local disk.

``python -m tests.reliability.soak --seed 7 --ops 400 [--metastore URL]`` runs one and prints the
report as JSON; the pytest entry points are in ``test_soak.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import posixpath
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from acid_core.cli import main as acidflow
from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import recover_abandoned_compactions
from acid_core.fs import file_io_for
from acid_core.metastore import CompactionState, TxnState, open_metastore
from acid_core.paths import BaseDir, DeltaDir, try_parse_acid_dir
from tests.reliability.actors import SERVICE_FAULT_EXIT, SERVICE_FAULT_PREFIX
from tests.reliability.injector import FaultInjector
from tests.reliability.model import read_records, replay
from tests.reliability.writer import TABLE, SoakWriter, create_soak_table, names_service

if TYPE_CHECKING:
    from acid_core.metastore import Metastore
    from tests.reliability.injector import Fault

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = ("writer", "compactor", "cleaner")
_HIDDEN_OK = ("_acidflow_cleaner", "_acidflow_trash", "_soak_sentinel")


@dataclass(frozen=True, slots=True)
class SoakConfig:
    """One soak run.

    Attributes:
        seed: everything random derives from it (printed on failure).
        warehouse: an empty directory, or a URI (``s3://bucket/wh``, ``hdfs://nn:port/dir``).
        metastore_url: None for the embedded SQLite file, else a SQLAlchemy URL (PostgreSQL, or
            SQLite on the local disk for a warehouse on another store).
        run_dir: a local directory for the journal, events and logs (default ``<warehouse>/_soak``:
            a local warehouse only).
        ops: writer operations (each streaming transaction counts as one).
        kill_interval: seconds between kills, drawn uniformly from this range.
        leases: whether the writer takes and releases leases.
        chaos_seconds: the chaos phase ends then even if the writer has not reached ``ops`` (it is
            then stopped by one more SIGKILL, and recovery runs as after any other).
        faults: the fault profile's faults (empty: kills only).
        fault_interval: seconds between two faults (after the previous one healed), uniformly.
        min_faults_each: the chaos phase goes on past ``chaos_seconds`` (up to three times that)
            until every kind of fault was injected this many times.
        zookeeper: ``host:port`` of a ZooKeeper that holds the locks (None: the SQL locks in the
            metastore); the writer publishes its session in ``<run_dir>/zookeeper-session.json``.
    """

    seed: int
    warehouse: str
    metastore_url: str | None = None
    ops: int = 60
    kill_interval: tuple[float, float] = (1.0, 3.0)
    chaos_seconds: float = 60.0
    leases: bool = True
    run_dir: str | None = None
    faults: tuple[Fault, ...] = ()
    fault_interval: tuple[float, float] = (3.0, 8.0)
    min_faults_each: int = 0
    zookeeper: str | None = None


@dataclass
class SoakReport:
    """What a run did and found (``failures`` empty means every invariant held)."""

    seed: int
    backend: str
    operations: int = 0
    writes_committed: int = 0
    writes_aborted: int = 0
    write_kinds: dict[str, int] = field(default_factory=dict)
    leases_taken: int = 0
    leases_released: int = 0
    compactor_runs: int = 0
    compactions_succeeded: int = 0
    compactions_lock_refused: int = 0  # refused because the maintenance lock was taken
    cleaner_runs: int = 0
    kills: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    faults: dict[str, int] = field(default_factory=dict)
    fault_log: list[tuple[float, str, float]] = field(default_factory=list)
    stopped_by_fault: dict[str, int] = field(default_factory=dict)
    fault_lines: dict[str, int] = field(default_factory=dict)
    checks: int = 0
    rows_checked: int = 0
    rows_lost: int = 0
    final_rows: int = 0
    writer_errors: list[str] = field(default_factory=list)
    compaction_errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        """One paragraph for logs and assertion messages."""
        return json.dumps(asdict(self), indent=1, sort_keys=True)


class _Actor:
    def __init__(self, role: str, config: SoakConfig, run_dir: str, rng: random.Random) -> None:
        self.role, self.config, self.run_dir, self.rng = role, config, run_dir, rng
        self.process: subprocess.Popen[str] | None = None
        self.ready = False
        self.incarnation = 0
        self.seed = 0
        self.baseline = 0

    def start(self) -> None:
        self.incarnation += 1
        self.baseline = self.progress()
        self.seed = self.rng.randrange(2**31)
        argv = [
            sys.executable,
            "-m",
            "tests.reliability.actors",
            self.role,
            "--warehouse",
            self.config.warehouse,
            "--seed",
            str(self.seed),
            "--events",
            os.path.join(self.run_dir, "events.jsonl"),
        ]
        if self.config.metastore_url:
            argv += ["--metastore", self.config.metastore_url]
        if self.role == "writer":
            argv += ["--journal", os.path.join(self.run_dir, "journal.jsonl"), "--ops", str(self.config.ops)]
            argv += [] if self.config.leases else ["--no-leases"]
        env = {"USER": "soak", **os.environ, "PYTHONPATH": ROOT, "ACIDFLOW_LOCK_MANAGER": "sql"}
        if self.config.zookeeper:
            env.update(ACIDFLOW_LOCK_MANAGER="zookeeper", ACIDFLOW_ZOOKEEPER=self.config.zookeeper)
            if self.role == "writer":
                argv += ["--zookeeper", self.config.zookeeper, "--session-file", session_file(self.run_dir)]
        log = open(os.path.join(self.run_dir, f"{self.role}.{self.incarnation}.log"), "w")  # noqa: SIM115
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True
        )
        log.close()
        self.ready = False
        os.set_blocking(self.process.stdout.fileno(), False)  # type: ignore[union-attr]

    def progress(self) -> int:
        """Actions this role completed so far: the writer's checked steps, the others' runs."""
        if self.role == "writer":
            records = read_records(os.path.join(self.run_dir, "journal.jsonl"))
            return sum(1 for r in records if r.get("t") == "check")
        records = read_records(os.path.join(self.run_dir, "events.jsonl"))
        return sum(1 for r in records if r.get("role") == self.role)

    def poll_ready(self) -> bool:
        if not self.ready and self.process is not None and self.process.stdout is not None:
            with contextlib.suppress(TypeError, BlockingIOError):
                if "ready" in (self.process.stdout.read() or ""):
                    self.ready = True
        return self.ready

    def kill(self) -> int | None:
        """SIGKILL the process; its own exit code if it had already ended by itself, else None."""
        if self.process is None:
            return None
        code = self.process.poll()
        if code is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code

    def log_tail(self) -> str:
        return self.log()[-3000:]

    def log(self) -> str:
        path = os.path.join(self.run_dir, f"{self.role}.{self.incarnation}.log")
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()


def _killed(report: SoakReport, actor: _Actor, config: SoakConfig) -> None:
    """SIGKILL ``actor``; a writer a fault had stopped just before (exit 4) still has its line counted.

    The chaos loop polls every 50 ms: a writer that ended between the poll and the kill (or when
    the chaos phase ended, as a paused writer's aborted commit often does) used to be taken for a
    killed one, and its one line naming the service was never read.
    """
    code = actor.kill()
    if code == SERVICE_FAULT_EXIT and actor.role == "writer" and config.faults:
        _stopped_writer(report, actor)


def _fault_line(report: SoakReport, line: str, where: str) -> None:
    """Count one error line a fault caused; a line that names no service is a failure."""
    text = line.strip().removeprefix("acidflow: error: ")
    if not names_service(text):
        report.failures.append(f"{where} failed without naming the service: {line.strip()[:600]}")
        return
    key = re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'...'", text))[:240]  # distinct up to paths and IDs
    report.fault_lines[key] = report.fault_lines.get(key, 0) + 1


def _stopped_writer(report: SoakReport, actor: _Actor) -> bool:
    """A writer that a fault stopped (exit 4): its one line counted; False when it is not that."""
    log = actor.log()
    lines = [line for line in log.splitlines() if line.startswith(SERVICE_FAULT_PREFIX)]
    if "Traceback" in log or len(lines) != 1:
        report.failures.append(
            f"writer (seed {actor.seed}) exited {SERVICE_FAULT_EXIT} without one line naming the "
            f"service: {log[-3000:]}"
        )
        return False
    _fault_line(report, lines[0].removeprefix(SERVICE_FAULT_PREFIX), f"writer (seed {actor.seed})")
    report.stopped_by_fault[actor.role] = report.stopped_by_fault.get(actor.role, 0) + 1
    return True


def session_file(run_dir: str) -> str:
    """Where the writer publishes its ZooKeeper session (``injector.zookeeper_faults`` reads it)."""
    return os.path.join(run_dir, "zookeeper-session.json")


def _sentinels(config: SoakConfig, table_location: str) -> dict[str, str]:
    """Files acidflow must never touch (written through the warehouse's store); path -> digest."""
    parent = posixpath.dirname(table_location.rstrip("/"))
    paths = [
        posixpath.join(config.warehouse, "soak_sentinel.txt"),
        posixpath.join(
            parent,
            posixpath.basename(table_location.rstrip("/")) + "_sibling",
            "delta_0000001_0000001_0000",
            "bucket_00000",
        ),
        posixpath.join(parent, "outside", "base_0000001", "bucket_00000"),
        posixpath.join(table_location, "_soak_sentinel", "keep.txt"),
    ]
    digests = {}
    for index, path in enumerate(paths):
        file_io, store_path = file_io_for(path)
        data = f"sentinel {index} of seed {config.seed}\n".encode()
        file_io.write_bytes_atomic(store_path, data)
        digests[path] = hashlib.sha256(data).hexdigest()
    return digests


def _sentinel_digest(path: str) -> str | None:
    file_io, store_path = file_io_for(path)
    if file_io.info(store_path) is None:
        return None
    return hashlib.sha256(file_io.read_bytes(store_path)).hexdigest()


def _cli(config: SoakConfig, *argv: str) -> tuple[int, str]:
    full = [*argv, "--warehouse", config.warehouse]
    if config.metastore_url:
        full += ["--metastore", config.metastore_url]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = acidflow(full)
    return code, out.getvalue()


def _failed_cleanings(output: str) -> list[str]:
    """The messages of ``clean --json``'s results that failed (``retrying`` or ``failed``)."""
    messages = []
    for line in output.splitlines():
        with contextlib.suppress(ValueError):
            result = json.loads(line)
            if isinstance(result, dict) and result.get("status") in ("retrying", "failed"):
                messages.append(str(result.get("message", "")))
    return messages


def _count_events(report: SoakReport, run_dir: str, *, faulty: bool = False) -> None:
    for record in read_records(os.path.join(run_dir, "events.jsonl")):
        role = record.get("role")
        if "crash" in record:
            report.failures.append(f"{role} crashed: {record['crash']}")
        elif role == "writer":
            report.writer_errors.append(str(record["error"]))
        elif role == "compactor":
            report.compactor_runs += 1
            output = str(record["output"])
            if "Traceback" in output:
                report.failures.append(f"acidflow {record['action']} printed a traceback: {output}")
            elif "acidflow: error:" in output and faulty:
                for line in output.splitlines():
                    if line.startswith("acidflow: error:"):
                        _fault_line(report, line, f"acidflow {record['action']}")
            elif "acidflow: error:" in output:
                report.failures.append(f"acidflow {record['action']}: {output.strip()}")
            report.compactions_succeeded += output.count(": compacted:") + output.count(
                ": nothing_to_rewrite:"
            )
            report.compactions_lock_refused += output.count(": refused: the maintenance lock")
            for line in output.splitlines():
                if ": failed:" in line and "died; compaction queued again" not in line:
                    report.compaction_errors.append(line.strip())
        elif role == "cleaner":
            report.cleaner_runs += 1
            output = str(record["output"])
            errors = [line for line in output.splitlines() if line.startswith("acidflow: error:")]
            errors += _failed_cleanings(output)
            errors += [line for line in output.splitlines() if ": cleaning failed (" in line]
            if "Traceback" in output:
                report.failures.append(f"acidflow {record['action']} printed a traceback: {output}")
            elif record["rc"] != 0 and faulty and errors:
                for line in errors:
                    _fault_line(report, line, f"acidflow {record['action']}")
            elif record["rc"] != 0:
                report.failures.append(
                    f"acidflow {record['action']} exited {record['rc']}: {record['output']}"
                )


def run_soak(config: SoakConfig) -> SoakReport:
    """Run one soak (see the module docstring); never raises for a broken invariant: see ``failures``."""
    started = time.monotonic()
    rng = random.Random(config.seed)
    backend = (config.metastore_url or "sqlite").split(":", 1)[0].split("+", 1)[0]
    if "://" in config.warehouse:
        backend = f"{backend}, {config.warehouse.split('://', 1)[0]}"
    report = SoakReport(config.seed, backend)
    run_dir = config.run_dir or os.path.join(config.warehouse, "_soak")
    os.makedirs(run_dir, exist_ok=True)
    create_soak_table(config.warehouse, config.metastore_url)
    with open_metastore(config.metastore_url, config.warehouse) as metastore:
        location = metastore.get_table(TABLE).location
    digests = _sentinels(config, location)
    actors = {role: _Actor(role, config, run_dir, random.Random(rng.randrange(2**31))) for role in ROLES}
    injector = None
    if config.faults:
        injector = FaultInjector(config.faults, random.Random(rng.randrange(2**31)), config.fault_interval)
    try:
        for actor in actors.values():
            actor.start()
        if injector is not None:
            injector.start()
        _chaos(config, rng, actors, report, started, injector)
    finally:
        try:
            if injector is not None:
                injector.stop()  # every service whole again before the recovery
        finally:
            for actor in actors.values():
                _killed(report, actor, config)
    if injector is not None:
        _wait_until_answering(config, report)
        report.faults = dict(sorted(injector.counts.items()))
        report.fault_log = list(injector.log)
        report.failures += [f"fault injection failed: {error}" for error in injector.errors]
    _count_events(report, run_dir, faulty=bool(config.faults))
    if not report.failures:
        _recover_and_converge(config, report, location, run_dir)
    for path, digest in digests.items():
        found = _sentinel_digest(path)
        if found is None:
            report.failures.append(f"sentinel {path} outside what acidflow owns was deleted")
        elif found != digest:
            report.failures.append(f"sentinel {path} was changed")
    state = replay(read_records(os.path.join(run_dir, "journal.jsonl")))
    report.operations = state.next_op
    report.writes_committed, report.writes_aborted = state.committed, state.aborted
    report.write_kinds = dict(sorted(state.kinds.items()))
    report.leases_taken, report.leases_released = state.leases_taken, state.leases_released
    report.checks, report.rows_checked = state.checks, state.rows_checked
    report.failures[:0] = state.failures
    report.seconds = round(time.monotonic() - started, 1)
    return report


def _wait_until_answering(config: SoakConfig, report: SoakReport, seconds: float = 180.0) -> None:
    """After the last fault healed: wait until the metastore answers (an HMS takes a while after
    its port opens) before the recovery, as an operator would."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with open_metastore(config.metastore_url, config.warehouse) as metastore:
                metastore.get_table(TABLE)
            return
        except Exception as error:
            if time.monotonic() > deadline:
                report.failures.append(
                    f"the metastore did not answer {seconds:g} s after the faults healed: {error}"
                )
                return
            time.sleep(1.0)


def _writer_spared(config: SoakConfig) -> bool:
    """Whether a fault aimed at the writer waits for it to reach its commit (``WriterGrace``)."""
    return any(f.writer_grace is not None and f.writer_grace.active() for f in config.faults)


def _chaos_over(config: SoakConfig, started: float, injector: FaultInjector | None) -> bool:
    elapsed = time.monotonic() - started
    if elapsed <= config.chaos_seconds:
        return False
    if injector is None or not injector.is_alive() or elapsed > 3 * config.chaos_seconds:
        return True
    return all(injector.counts[fault.kind] >= config.min_faults_each for fault in config.faults)


def _chaos(
    config: SoakConfig,
    rng: random.Random,
    actors: dict[str, _Actor],
    report: SoakReport,
    started: float,
    injector: FaultInjector | None = None,
) -> None:
    writer = actors["writer"]
    next_kill = time.monotonic() + rng.uniform(*config.kill_interval)
    while True:
        time.sleep(0.05)
        if _chaos_over(config, started, injector):
            if injector is not None and _writer_spared(config):
                # No new fault; the last aimed one may still show at the writer's commit.
                injector.stop()
            else:
                report.notes.append(
                    f"chaos phase ended after {round(time.monotonic() - started)} s (writer stopped by SIGKILL)"
                )
                return
        for actor in actors.values():
            actor.poll_ready()
            code = actor.process.poll() if actor.process is not None else None
            if code is None:
                continue
            if actor is writer and code == 0:
                return
            if actor is writer and code == SERVICE_FAULT_EXIT and config.faults:
                if not _stopped_writer(report, actor):
                    return
                actor.kill()
                actor.start()  # the next writer resolves the write in flight from the metastore
                continue
            report.failures.append(
                f"{actor.role} (seed {actor.seed}) exited {code} by itself: {actor.log_tail()}"
            )
            return
        if time.monotonic() < next_kill:
            continue
        victim = actors[rng.choices(ROLES, (2, 4, 3))[0]]
        needed = 2 if victim.role == "writer" else 1  # the writer restarts slowest: let it progress
        if not victim.poll_ready() or victim.progress() < victim.baseline + needed:
            continue  # still importing or recovering: let it finish some work first
        if victim is writer and _writer_spared(config):
            continue  # an aimed fault's effect shows at its commit: another victim instead
        _killed(report, victim, config)
        report.kills[victim.role] += 1
        victim.start()
        next_kill = time.monotonic() + rng.uniform(*config.kill_interval)


def _recover_and_converge(config: SoakConfig, report: SoakReport, location: str, run_dir: str) -> None:
    journal = os.path.join(run_dir, "journal.jsonl")
    writer = SoakWriter.open(config.warehouse, config.metastore_url, journal, zookeeper=config.zookeeper)
    try:
        writer.check("recovery")
        # Every lease released (those the journal knows were checked at every step above).
        for lease_id in writer.live_leases():
            writer.release_lease(lease_id)
        for lease in writer.wh.metastore.list_leases(
            TABLE
        ):  # taken by a writer killed before its journal line
            code, output = _cli(config, "lease", "release", str(lease.lease_id))
            if code != 0:
                report.failures.append(f"acidflow lease release {lease.lease_id} exited {code}: {output}")
        _converge(config, report, writer, location)
        state = writer.state
        report.final_rows = len(state.rows)
        report.rows_lost = len(set(state.rows) - {row[0] for row in writer.select_rows()})
        writer.check("compaction and cleaning with no lease")
    except AssertionError as failure:
        report.failures.append(str(failure))
    finally:
        writer.close()


def _clean_until_done(config: SoakConfig, report: SoakReport, metastore: Metastore) -> None:
    for _ in range(10):
        code, output = _cli(config, "clean", "--json")
        if code != 0:
            report.failures.append(f"acidflow clean exited {code}: {output}")
            return
        ready = [
            c for c in metastore.show_compactions(TABLE) if c.state is CompactionState.READY_FOR_CLEANING
        ]
        if not ready:
            return
        if config.faults:
            # Cleanings a fault failed wait their back-off (300 s, doubled): the run after it.
            later = time.time() + 2**6 * 300.0
            results = run_cleaner(metastore, now=later)
            report.notes.append(
                "cleaned after the back-off: " + ", ".join(f"{r.compaction_id} {r.status}" for r in results)
            )


def _converge(config: SoakConfig, report: SoakReport, writer: SoakWriter, location: str) -> None:
    metastore = writer.wh.metastore
    # Recovery first, as ``acidflow compact`` starts: the killed workers' compactions are finished
    # or undone and queued again; the queued ones are then aborted (Hive's ABORT COMPACTIONS) so
    # that the final major compaction is the next one to run.
    recover_abandoned_compactions(metastore)
    for entry in metastore.show_compactions(TABLE):
        if entry.state is CompactionState.INITIATED:
            metastore.abort_compaction(entry.id)
    if (config.metastore_url or "").startswith("thrift://"):
        # On a Hive Metastore the HMS reaps a silent transaction itself (AcidHouseKeeperService,
        # hive.txn.timeout), which the tests' servers do not run: with no process of the soak
        # alive, do what it would do once the timeout passed. A transaction a killed process
        # left open is that process's, never acidflow's to reap (acidflow's own compaction
        # transactions were settled by the recovery above).
        orphans = [t.txn_id for t in metastore.show_transactions() if t.state is TxnState.OPEN]
        for txn_id in orphans:
            metastore.abort_txn(txn_id)
        if orphans:
            report.notes.append(f"the HMS's reaper emulated: aborted {orphans} (no process alive)")
    still_open = [t.txn_id for t in metastore.show_transactions() if t.state is TxnState.OPEN]
    if still_open:
        report.failures.append(f"open transactions {still_open} left after recovery (no process alive)")
    # The first ``acidflow compact`` after the kills must compact: a killed worker's maintenance
    # lock dies with its process (SQL locks: its session's dead pid; ZooKeeper locks: its node's
    # dead pid, also while ZooKeeper still keeps the dead session, whose timeout each restart
    # re-arms: the run with seed 1194515100 was refused here), and minor compactions not cleaned
    # yet do not block a major one.
    report.notes.append(f"before the final compaction: {_metastore_view(metastore)}")
    # Rounds of a major compaction and cleans, as a scheduler runs them: one is not always enough
    # (Hive's rule in ``_FINAL_ROUNDS``'s comment).
    file_io, path = file_io_for(location)
    for round_number in range(1, _FINAL_ROUNDS + 1):
        code, output = _cli(config, "compact", "--table", TABLE, "--type", "major", "--executor", "embedded")
        # "refused: major compaction not needed": one base already, the directory check decides.
        if not (
            any(f": {status}:" in output for status in ("compacted", "nothing_to_rewrite"))
            or "refused: major compaction not needed" in output
        ):
            report.failures.append(f"the final major compaction did not run: exit {code}: {output.strip()}")
            return
        which = "" if round_number == 1 else f" (round {round_number})"
        report.notes.append(f"final major compaction{which}: {' '.join(output.split())[-300:]}")
        _clean_until_done(config, report, metastore)
        left = _table_names(file_io, path)[2]
        if len(left) == 1 and left[0].startswith("base_"):
            break
        if round_number < _FINAL_ROUNDS:
            report.notes.append(f"round {round_number} left {left}; now {_metastore_view(metastore)}")
    stuck = [c.id for c in metastore.show_compactions(TABLE) if c.state is CompactionState.READY_FOR_CLEANING]
    if stuck:
        report.failures.append(
            f"compactions {stuck} still ready for cleaning after 10 cleaner runs with no lease and no writer"
        )
    working = [c.id for c in metastore.show_compactions(TABLE) if c.state is CompactionState.WORKING]
    if working:
        report.failures.append(f"compactions {working} still 'working' with no worker alive")
    names, visible, acid = _table_names(file_io, path)
    bases = [n for n in acid if n.startswith("base_")]
    if len(bases) != 1 or len(acid) != 1:
        # What the compactor and the cleaner see (the metastore is gone once the test ends).
        report.failures.append(
            f"the table did not converge to one base: {visible}; now {_metastore_view(metastore)}; "
            f"{_forensics(metastore, acid, writer.journal.records())}"
        )
    if set(visible) - set(acid):
        report.failures.append(
            f"files in the table directory that are not ACID directories: {sorted(set(visible) - set(acid))}"
        )
    staging = [n for n in names if n.startswith(".acidflow-staging-")]
    if staging:
        report.failures.append(f"staging directories left: {staging}")
    hidden = [n for n in names if n.startswith(("_", ".")) and n not in _HIDDEN_OK and n not in staging]
    if hidden:
        report.notes.append(f"hidden names in the table directory: {hidden}")


# Hive's GetValidWriteIdsForTableFunction: with no committed TXN_TO_WRITE_ID row left under the
# high watermark (housekeeping deleted them all while a txn had no write ID yet), the lowest invalid
# write ID is the watermark. A second aborted write above it is neither valid nor aborted to the
# compactor and the cleaner until the cleaner has forgotten the first one's txn: the next round
# removes it (``test_regressions.py::test_aborted_writes_above_a_table_with_no_committed_write_id_
# row_converge_in_two_rounds``). A third round only in case the second one's clean is retried.
_FINAL_ROUNDS = 3


def _table_names(file_io: Any, path: str) -> tuple[list[str], list[str], list[str]]:
    """The table directory's names, sorted: all, the visible ones, the ACID directories."""
    names = sorted(entry.name for entry in file_io.list_dir(path))
    visible = [n for n in names if not n.startswith(("_", "."))]
    return names, visible, [n for n in visible if try_parse_acid_dir(n) is not None]


def _metastore_view(metastore: Metastore) -> str:
    """The compactor's write-ID list of the soak table and the last open or aborted txns, one line."""
    write_ids = metastore.get_compactor_write_ids(TABLE, metastore.get_valid_txns()).to_string()
    txns = ", ".join(f"{t.txn_id} {t.state.value}" for t in metastore.show_transactions()[-8:])
    return f"write IDs {write_ids}; txns {txns or 'none'}"


def _forensics(metastore: Metastore, acid: list[str], journal: list[dict[str, Any]]) -> str:
    """Where each write ID above the newest base came from, one line (a table that did not converge).

    For each such write ID of the SQL metastore: its ``TXN_TO_WRITE_ID`` row's txn (or none), that
    txn's ``TXNS`` state (or none) and ``TXN_COMPONENTS`` count; the settled mark, the table's
    newest write-ID rows, its last compactions (state, highest write ID, txn, next txn); and the
    writer journal's last records. Read through the metastore's engine: diagnostics only.
    """
    import sqlalchemy as sa
    from sqlalchemy.orm import Session

    from acid_core.metastore.sql import models as m

    parsed = [try_parse_acid_dir(n) for n in acid]
    floor = max((d.write_id for d in parsed if isinstance(d, BaseDir)), default=0)
    above = sorted(
        {
            w
            for d in parsed
            if isinstance(d, DeltaDir)
            for w in range(max(d.min_write_id, floor + 1), d.max_write_id + 1)
        }
    )
    tail = [{k: r[k] for k in ("t", "op", "kind", "txn", "outcome") if k in r} for r in journal[-6:]]
    engine = getattr(metastore, "_engine", None)
    if engine is None:
        return f"forensics: write IDs above the base {above}; journal tail {tail}"
    database, table = TABLE.split(".")
    lines = [f"write IDs above the base {above}"]
    with Session(engine) as s:
        same = (m.TxnToWriteId.database == database, m.TxnToWriteId.table == table)
        for write_id in above:
            txn_id = s.scalar(
                sa.select(m.TxnToWriteId.txn_id).where(*same, m.TxnToWriteId.write_id == write_id)
            )
            state = None if txn_id is None else s.scalar(sa.select(m.Txn.state).where(m.Txn.txn_id == txn_id))
            components = (
                None
                if txn_id is None
                else s.scalar(sa.select(sa.func.count()).where(m.TxnComponent.txn_id == txn_id))
            )
            lines.append(f"write {write_id}: txn {txn_id} state {state} components {components}")
        newest = s.execute(
            sa.select(m.TxnToWriteId.write_id, m.TxnToWriteId.txn_id)
            .where(*same)
            .order_by(m.TxnToWriteId.write_id.desc())
            .limit(4)
        ).all()
        lines.append(f"newest write-ID rows {[tuple(r) for r in newest]}")
        next_write = s.scalar(
            sa.select(m.NextWriteId.next_write_id).where(
                m.NextWriteId.database == database, m.NextWriteId.table == table
            )
        )
        lines.append(
            f"next write ID {next_write}; settled mark {s.scalar(sa.select(m.NextTxnId.next_txn_id))}"
        )
        models: tuple[Any, ...] = (m.CompactionQueueEntry, m.CompletedCompaction)
        for model in models:
            rows = s.scalars(sa.select(model).order_by(model.id.desc()).limit(4)).all()
            lines.append(
                f"{model.__tablename__} "
                + str([(r.id, r.state, r.highest_write_id, r.txn_id, r.next_txn_id) for r in rows])
            )
    return "forensics: " + "; ".join(lines) + f"; journal tail {tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.reliability.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--ops", type=int, default=400)
    parser.add_argument("--warehouse", required=True, help="an empty directory")
    parser.add_argument("--metastore", default=None)
    parser.add_argument("--seconds", type=float, default=1800.0, help="length of the chaos phase")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    # SIGTERM (e.g. timeout(1)) unwinds through run_soak's finally, which SIGKILLs the actors.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    report = run_soak(
        SoakConfig(seed, args.warehouse, args.metastore, ops=args.ops, chaos_seconds=args.seconds)
    )
    print(report.summary())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
