"""Many processes against one metastore, on a SQLite file and on a real PostgreSQL.

Each worker is a separate OS process with its own ``SqlMetastore`` (own engine and connections),
as concurrent writers and the compactor are in production. Expected outcomes (Hive's
``TxnHandler`` guarantees):
- transaction IDs are unique, and increase within each process;
- write IDs of one table are unique and, with every transaction allocating once, exactly 1..N;
- every commit a worker saw succeed is committed in the store, every abort is aborted (no lost
  commit), and every aborted write ID is in the aborted list of the final snapshot;
- of N transactions that all updated the same table concurrently, exactly one commits and the
  others get ``CommitConflictError``;
- N processes opening a fresh database at once migrate it exactly once, without errors.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

import pytest

from acid_core.errors import CommitConflictError, NoSuchLeaseError
from acid_core.metastore import (
    Column,
    InMemoryMetastore,
    SqlMetastore,
    TableDefinition,
    TxnState,
    WriteOperation,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

_PROCESSES = 8
_TXNS_PER_PROCESS = 12
_TIMEOUT_SECONDS = 90

# fork: the workers are plain functions of this module; each builds its own engine after the fork.
_CONTEXT = multiprocessing.get_context("fork")

_PARAMS = [
    pytest.param("sqlite", marks=pytest.mark.backend("sqlite")),
    pytest.param("postgres", marks=[pytest.mark.backend("postgres"), pytest.mark.integration("postgres")]),
]


@pytest.fixture(params=_PARAMS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/metastore.sqlite"
    return str(request.getfixturevalue("postgres_schema_url"))


def _create_table(url: str) -> None:
    with SqlMetastore(url) as store:
        store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))


def _run_workers(target: Callable[..., None], args: list[tuple[Any, ...]]) -> list[Any]:
    """Run one process per args tuple; each puts ("ok", result) or ("error", traceback) on the queue."""
    queue = _CONTEXT.Queue()
    processes = [_CONTEXT.Process(target=target, args=(queue, *a)) for a in args]
    for process in processes:
        process.start()
    results = [queue.get(timeout=_TIMEOUT_SECONDS) for _ in processes]
    for process in processes:
        process.join(timeout=_TIMEOUT_SECONDS)
    errors = [payload for kind, payload in results if kind == "error"]
    assert not errors, "worker failed:\n" + "\n".join(errors)
    return [payload for _, payload in results]


def _mixed_worker(queue: Any, url: str, worker: int, barrier: Any) -> None:
    try:
        with SqlMetastore(url) as store:
            barrier.wait(timeout=_TIMEOUT_SECONDS)
            done = []
            for i in range(_TXNS_PER_PROCESS):
                txn = store.open_txn(f"worker-{worker}", "test")
                write_id = store.allocate_write_id(txn, "t")
                store.add_write_component(txn, "t", None, WriteOperation.INSERT)
                if (worker + i) % 3 == 0:
                    store.abort_txn(txn)
                    done.append((txn, write_id, "aborted"))
                else:
                    store.commit_txn(txn)
                    done.append((txn, write_id, "committed"))
        queue.put(("ok", done))
    except BaseException:  # report everything to the parent, which fails the test
        queue.put(("error", traceback.format_exc()))


def test_concurrent_open_allocate_commit_abort_keeps_ids_unique_and_commits(url):
    """8 processes x 12 txns: unique increasing txn IDs, write IDs exactly 1..96, nothing lost."""
    _create_table(url)
    barrier = _CONTEXT.Barrier(_PROCESSES)
    per_worker = _run_workers(_mixed_worker, [(url, w, barrier) for w in range(_PROCESSES)])

    records = [r for worker in per_worker for r in worker]
    total = _PROCESSES * _TXNS_PER_PROCESS
    txn_ids = [txn for txn, _, _ in records]
    write_ids = [write_id for _, write_id, _ in records]
    assert len(set(txn_ids)) == total
    assert sorted(txn_ids) == list(range(1, total + 1))
    for worker in per_worker:
        ids = [txn for txn, _, _ in worker]
        assert ids == sorted(ids), "IDs increase within each process"
    assert sorted(write_ids) == list(range(1, total + 1))

    with SqlMetastore(url) as store:
        for txn, _, outcome in records:
            assert store.get_txn(txn).state is TxnState(outcome)
        snapshot = store.get_valid_write_ids("t", store.get_valid_txns())
        aborted = sorted(w for _, w, outcome in records if outcome == "aborted")
        assert snapshot.high_watermark == total
        assert list(snapshot.aborted_ids) == aborted
        assert snapshot.open_ids == ()


def _conflict_worker(queue: Any, url: str, opened: Any, go: Any) -> None:
    try:
        with SqlMetastore(url) as store:
            txn = store.open_txn()
            store.add_write_component(txn, "t", None, WriteOperation.UPDATE)
            opened.wait(timeout=_TIMEOUT_SECONDS)  # every txn is open before anyone commits
            go.wait(timeout=_TIMEOUT_SECONDS)
            try:
                store.commit_txn(txn)
                outcome = "committed"
            except CommitConflictError:
                outcome = "conflict"
        queue.put(("ok", (txn, outcome)))
    except BaseException:
        queue.put(("error", traceback.format_exc()))


def test_concurrent_updates_of_one_table_exactly_one_wins(url):
    """8 overlapping UPDATE txns on one table: 1 commits, 7 get CommitConflictError and are aborted."""
    _create_table(url)
    opened, go = _CONTEXT.Barrier(_PROCESSES), _CONTEXT.Barrier(_PROCESSES)
    outcomes = _run_workers(_conflict_worker, [(url, opened, go) for _ in range(_PROCESSES)])

    winners = [txn for txn, outcome in outcomes if outcome == "committed"]
    losers = [txn for txn, outcome in outcomes if outcome == "conflict"]
    assert len(winners) == 1
    assert len(losers) == _PROCESSES - 1
    with SqlMetastore(url) as store:
        assert store.get_txn(winners[0]).state is TxnState.COMMITTED
        assert all(store.get_txn(txn).state is TxnState.ABORTED for txn in losers)


def _open_worker(queue: Any, url: str, barrier: Any) -> None:
    try:
        barrier.wait(timeout=_TIMEOUT_SECONDS)
        with SqlMetastore(url) as store:
            txn = store.open_txn()
        queue.put(("ok", txn))
    except BaseException:
        queue.put(("error", traceback.format_exc()))


def test_concurrent_first_open_migrates_once(url):
    """8 processes open a brand-new database at the same instant: all succeed, IDs 1..8."""
    barrier = _CONTEXT.Barrier(_PROCESSES)
    txns = _run_workers(_open_worker, [(url, barrier) for _ in range(_PROCESSES)])
    assert sorted(txns) == list(range(1, _PROCESSES + 1))
    with SqlMetastore(url) as store:
        assert store.list_databases() == ["default"]


_THREAD_PARAMS = [
    pytest.param("memory", marks=pytest.mark.backend("memory")),
    *_PARAMS,
]


@pytest.fixture(params=_THREAD_PARAMS)
def shared_store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "memory":
        store = InMemoryMetastore()
    elif request.param == "sqlite":
        store = SqlMetastore(f"sqlite:///{tmp_path}/metastore.sqlite")
    else:
        store = SqlMetastore(request.getfixturevalue("postgres_schema_url"))
    store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))
    yield store
    store.close()


def test_threads_sharing_one_store_race_for_one_commit(shared_store):
    """8 threads on one store object: unique txn and write IDs, and exactly one UPDATE commits."""
    opened = threading.Barrier(_PROCESSES)
    outcomes: list[tuple[int, int, str]] = []
    errors: list[BaseException] = []

    def race() -> None:
        try:
            txn = shared_store.open_txn()
            write_id = shared_store.add_write_component(txn, "t", None, WriteOperation.UPDATE)
            opened.wait(timeout=_TIMEOUT_SECONDS)
            try:
                shared_store.commit_txn(txn)
                outcomes.append((txn, write_id, "committed"))
            except CommitConflictError:
                outcomes.append((txn, write_id, "conflict"))
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=race) for _ in range(_PROCESSES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=_TIMEOUT_SECONDS)
    assert errors == []
    assert sorted(txn for txn, _, _ in outcomes) == list(range(1, _PROCESSES + 1))
    assert sorted(w for _, w, _ in outcomes) == list(range(1, _PROCESSES + 1))
    assert [outcome for _, _, outcome in outcomes].count("committed") == 1


def _doomed_writer(queue: Any, url: str) -> None:
    try:
        store = SqlMetastore(url)
        txn = store.open_txn("doomed", "test", now=1000.0)
        write_id = store.allocate_write_id(txn, "t")
        queue.put(("ok", (txn, write_id)))
    except BaseException:
        queue.put(("error", traceback.format_exc()))
        return
    time.sleep(_TIMEOUT_SECONDS)  # heartbeats never come; the parent kills this process


def test_killed_writer_is_reaped_and_its_write_id_stays_invalid(url):
    """A writer killed mid-transaction stops heartbeating; the reaper aborts it (AcidHouseKeeperService)."""
    _create_table(url)
    queue = _CONTEXT.Queue()
    writer = _CONTEXT.Process(target=_doomed_writer, args=(queue, url))
    writer.start()
    kind, payload = queue.get(timeout=_TIMEOUT_SECONDS)
    assert kind == "ok", payload
    txn, write_id = payload
    writer.kill()
    writer.join(timeout=_TIMEOUT_SECONDS)

    with SqlMetastore(url) as store:
        assert store.abort_timed_out_txns(300, now=1000.0 + 299) == []
        assert store.abort_timed_out_txns(300, now=1000.0 + 301) == [txn]
        later = store.open_txn()
        store.allocate_write_id(later, "t")
        store.commit_txn(later)
        snapshot = store.get_valid_write_ids("t", store.get_valid_txns())
        assert snapshot.aborted_ids == (write_id,)
        assert snapshot.is_write_id_valid(write_id + 1)


_LEASE_ROUNDS = 60


def _race_renew_and_expire(
    renewer: SqlMetastore, expirer: SqlMetastore, lease_id: int, expiry: float
) -> dict:
    """Renew at ``expiry - 0.001`` and expire at ``expiry + 0.5`` at once, from two threads."""
    both = threading.Barrier(2)
    outcome: dict[str, bool] = {}

    def renew() -> None:
        both.wait(timeout=_TIMEOUT_SECONDS)
        try:
            renewer.renew_lease(lease_id, 1.0, now=expiry - 0.001)
            outcome["renewed"] = True
        except NoSuchLeaseError:
            outcome["renewed"] = False

    def expire() -> None:
        both.wait(timeout=_TIMEOUT_SECONDS)
        outcome["expired"] = lease_id in expirer.expire_leases(now=expiry + 0.5)

    threads = [threading.Thread(target=renew), threading.Thread(target=expire)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=_TIMEOUT_SECONDS)
    return outcome


def test_renewal_racing_the_expiry_never_revives_a_deleted_lease(url):
    """A renew that passes its expiry check as ``expire_leases`` deletes the lease must not put it back.

    Each round takes a lease expiring at T; one thread renews it at T - 0.001 (in time), another
    store expires leases at T + 0.5 (a renewed lease then lives to T + 0.999 and stays). Either
    order is fine, but never both: a renewal that succeeded while the expiry deleted the lease (the
    cleaner then deletes what it reads) leaves the reader believing in a lease nobody honours.
    Found on PostgreSQL: renew read, then wrote, in two transactions; expire selected, then deleted.
    """
    _create_table(url)
    with SqlMetastore(url) as renewer, SqlMetastore(url) as expirer:
        for round_ in range(_LEASE_ROUNDS):
            lease = renewer.take_lease("t", 1.0, now=10_000.0 * (round_ + 1))
            outcome = _race_renew_and_expire(renewer, expirer, lease.lease_id, lease.expires)
            assert set(outcome) == {"renewed", "expired"}, f"round {round_}: a thread failed"
            assert not (outcome["renewed"] and outcome["expired"]), (
                f"round {round_}: a deleted lease was renewed"
            )
            leases = [x.lease_id for x in renewer.list_leases()]
            assert (lease.lease_id in leases) == outcome["renewed"]
            for lease_id in leases:
                renewer.release_lease(lease_id)
