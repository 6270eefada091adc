"""PostgreSQL behind the metastore fails during a commit: killed, restarted, or the answer lost (issue 24).

Each test injects one fault at a chosen point of one operation (``tests.reliability.faults``), lets it
heal, and checks what the issue asks: no committed row lost, no aborted or uncommitted row visible,
no transaction left open past the reaper, a lost ``commit_txn`` checked and never re-sent, and one
line naming PostgreSQL and what acidflow does next. The cluster is the module's own
(``private_postgres``), so stopping it disturbs no other test.
"""

from __future__ import annotations

import os
import threading
import time

import pyarrow as pa
import pytest

from acid_core.compaction.backlog import run_initiator
from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.initiator import InitiatorConfig
from acid_core.compaction.worker import execute_compaction, run_worker
from acid_core.errors import (
    CommitStateUnknownError,
    LostCommitAbortedError,
    MetastoreDatabaseUnavailableError,
)
from acid_core.metastore import (
    Column,
    CompactionState,
    CompactionType,
    TableDefinition,
    TxnState,
)
from tests.reliability.faults import (
    CuttingProxy,
    at_commit,
    at_statement,
    client_port,
    commit_statements,
    sql_warehouse,
)

pytestmark = pytest.mark.integration("postgres")

_RESUME_AFTER_SECONDS = 1.0


def _shown(url):
    from sqlalchemy import make_url

    return make_url(url).render_as_string(hide_password=True)


@pytest.fixture
def kill_and_resume(private_postgres):
    """``kill()`` now and ``resume()`` after a second from a timer: a PostgreSQL restart mid-call."""
    fault = _KillAndResume(private_postgres)
    yield fault
    fault.healed()


class _KillAndResume:
    def __init__(self, cluster):
        self.cluster = cluster
        self.timers = []

    def __call__(self, *_):
        self.cluster.kill()
        timer = threading.Timer(_RESUME_AFTER_SECONDS, self.cluster.resume)
        self.timers.append(timer)
        timer.start()

    def healed(self):
        """Wait until the server is back."""
        for timer in self.timers:
            timer.join()


def _with_one_committed_row(wh):
    wh.metastore.create_table(
        TableDefinition("t", (Column("id", "int"),), properties={"transactional": "true"})
    )
    with wh.transaction() as txn:
        txn.insert("t", pa.table({"id": pa.array([1], pa.int32())}))


def _ids(wh):
    return sorted(wh.read("t").column("id").to_pylist())


def test_write_commit_postgres_killed_before_commit_aborts_and_names_postgres(
    tmp_path, private_postgres_url, kill_and_resume
):
    """The server dies before the COMMIT of a write: after the restart the txn is aborted, never committed late."""
    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=10.0) as wh:
        _with_one_committed_row(wh)
        txn = wh.transaction().begin()
        txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
        at_commit(wh.metastore._engine, kill_and_resume)
        with pytest.raises(LostCommitAbortedError) as info:
            txn.commit()
        assert str(info.value).startswith(
            f"PostgreSQL (the metastore database {_shown(private_postgres_url)!r}) went away during the "
            f"commit of transaction {txn.txn_id} ("
        )
        assert str(info.value).endswith(
            "); checked after reconnecting: the commit had not happened, so acidflow aborted the "
            "transaction and nothing it wrote is visible; expected the commit to be answered; hint: run "
            "it again"
        )
        assert "\n" not in str(info.value)
        assert wh.metastore.get_txn(txn.txn_id).state is TxnState.ABORTED
        assert _ids(wh) == [1]
        assert [t.txn_id for t in wh.metastore.show_transactions() if t.state is TxnState.OPEN] == []
        with wh.transaction() as again:  # the statement run again succeeds
            again.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
        assert _ids(wh) == [1, 2]


@pytest.mark.parametrize("restart", [False, True], ids=["answer-lost", "answer-lost-then-restart"])
def test_write_commit_answer_lost_after_commit_is_checked_not_resent(
    tmp_path, private_postgres, private_postgres_url, kill_and_resume, restart
):
    """The server commits but its answer never arrives: the client reads the txn back, committed once."""
    port = int(private_postgres_url.split(":")[2].split("/")[0])
    proxy = CuttingProxy(port, on_cut=kill_and_resume if restart else None)
    try:
        url = private_postgres_url.replace(f":{port}/", f":{proxy.port}/")
        with sql_warehouse(tmp_path, url, commit_check_seconds=10.0) as wh:
            _with_one_committed_row(wh)
            txn = wh.transaction().begin()
            txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
            engine = wh.metastore._engine
            sent = commit_statements(engine)
            commits = []
            at_commit(
                engine, lambda conn: (commits.append(1), proxy.cut_after_next_request(client_port(conn)))
            )
            txn.commit()  # no error: the check found it committed
            kill_and_resume.healed()
            assert proxy.cuts == 1
            assert len(sent) == 1, "the commit was re-sent"
            assert len(commits) == 1
            assert wh.metastore.get_txn(txn.txn_id).state is TxnState.COMMITTED
            assert _ids(wh) == [1, 2]
    finally:
        proxy.close()


def test_empty_commit_postgres_killed_before_commit_function_aborts(
    tmp_path, private_postgres_url, kill_and_resume
):
    """A txn that wrote nothing commits in one autocommit call; the server dying before it aborts the txn."""
    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=10.0) as wh:
        txn_id = wh.metastore.open_txn()
        at_statement(wh.metastore._engine, "acidflow_commit_txn", kill_and_resume)
        with pytest.raises(LostCommitAbortedError, match=rf"commit of transaction {txn_id} "):
            wh.metastore.commit_txn(txn_id)
        assert wh.metastore.get_txn(txn_id).state is TxnState.ABORTED


def test_write_commit_postgres_down_past_check_is_unknown_then_reaped(
    tmp_path, private_postgres, private_postgres_url
):
    """The server stays down past the check: the state is unknown (one line); once back, the reaper ends it."""
    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=1.0) as wh:
        _with_one_committed_row(wh)
        txn = wh.transaction().begin()
        txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
        sent = commit_statements(wh.metastore._engine)
        at_commit(wh.metastore._engine, lambda _conn: private_postgres.kill())
        with pytest.raises(CommitStateUnknownError) as info:
            txn.commit()
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(
            f"PostgreSQL (the metastore database {_shown(private_postgres_url)!r}) went away during the "
            f"commit of transaction {txn.txn_id} ("
        )
        assert message.endswith(
            ") and did not answer for 1 s; the transaction may or may not be committed; expected an "
            "answer; acidflow does not re-send the commit: it stays committed, or the reaper aborts it "
            f"once its heartbeats time out; hint: when the server is back, SHOW TRANSACTIONS lists "
            f"{txn.txn_id} if it did not commit (then run the statement again)"
        )
        private_postgres.resume()
        assert len(sent) == 1
        assert wh.metastore.get_txn(txn.txn_id).state is TxnState.OPEN  # the crash rolled the COMMIT back
        assert _ids(wh) == [1]
        assert wh.metastore.abort_timed_out_txns(0.0, now=10**10) == [txn.txn_id]
        assert _ids(wh) == [1]


def test_metastore_call_postgres_down_is_one_line_naming_postgres(
    tmp_path, private_postgres, private_postgres_url
):
    """Any other call while the server is down: ``MetastoreDatabaseUnavailableError``, one line; then it heals."""
    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=10.0) as wh:
        _with_one_committed_row(wh)
        private_postgres.kill()
        try:
            with pytest.raises(MetastoreDatabaseUnavailableError) as info:
                wh.metastore.open_txn()
        finally:
            private_postgres.resume()
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(
            f"PostgreSQL (the metastore database {_shown(private_postgres_url)!r}) could not be reached "
            "during 'open_txn': OperationalError: "
        )
        assert message.endswith(
            "; expected a server answering; acidflow stops this run and the next run starts from the "
            "state the database holds; hint: check the server (pg_isready) and rerun"
        )
        assert _ids(wh) == [1]  # the pool reconnects: the next call works


def test_write_commit_postgres_restarted_before_commit_commits(
    tmp_path, private_postgres, private_postgres_url
):
    """A restart while the txn writes (before its commit is sent): the commit finds a live connection and commits."""
    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=10.0) as wh:
        _with_one_committed_row(wh)
        txn = wh.transaction().begin()
        txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
        private_postgres.kill()
        private_postgres.resume()
        txn.commit()
        assert wh.metastore.get_txn(txn.txn_id).state is TxnState.COMMITTED
        assert _ids(wh) == [1, 2]


# --- a compaction's commit, markCleaned --------------------------------------------------------


def _with_three_deltas(wh):
    _with_one_committed_row(wh)
    for row in (2, 3):
        with wh.transaction() as txn:
            txn.insert("t", pa.table({"id": pa.array([row], pa.int32())}))


def _directories(wh):
    return sorted(os.listdir(wh.metastore.get_table("t").location))


def _claim_major(wh):
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    return wh.metastore.find_next_to_compact("worker-1")


def _at_compaction_commit(wh, action):
    """``action(conn)`` just before the COMMIT of the compaction txn's ``commit_txn``."""

    def on_step(step):
        if step == "committing":
            at_commit(wh.metastore._engine, action)

    return on_step


def _succeeded(wh):
    return [c.id for c in wh.metastore.show_compactions() if c.state is CompactionState.SUCCEEDED]


def test_compaction_commit_postgres_killed_before_commit_undone_then_converges(
    tmp_path, private_postgres_url, kill_and_resume
):
    """Killed before the compaction txn commits: T aborted, its output removed, entry failed; the rerun compacts."""
    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=10.0) as wh:
        _with_three_deltas(wh)
        claimed = _claim_major(wh)
        with pytest.raises(LostCommitAbortedError):
            execute_compaction(wh.metastore, claimed, on_step=_at_compaction_commit(wh, kill_and_resume))
        kill_and_resume.healed()
        entry = wh.metastore.get_compaction(claimed.id)
        assert entry.state is CompactionState.FAILED
        assert wh.metastore.get_txn(entry.txn_id).state is TxnState.ABORTED
        assert [d for d in _directories(wh) if d.startswith(("base_", ".acidflow-staging"))] == []
        assert _ids(wh) == [1, 2, 3]
        # The next run (the initiator queues it again) converges: one compaction, cleaned, same rows.
        wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
        [outcome] = run_worker(wh.metastore, worker_id="worker-2")
        assert outcome.status == "compacted"
        assert [r.status for r in run_cleaner(wh.metastore)] == ["cleaned"]
        assert len(_succeeded(wh)) == 1
        assert [d for d in _directories(wh) if not d.startswith("_")] == list(outcome.outputs)
        assert _ids(wh) == [1, 2, 3]


def test_compaction_commit_answer_lost_server_down_keeps_output_recovery_marks_compacted(
    tmp_path, private_postgres, private_postgres_url
):
    """T commits, the answer is lost and the server stays down: nothing deleted; recovery marks it compacted once."""
    port = int(private_postgres_url.split(":")[2].split("/")[0])
    proxy = CuttingProxy(port, on_cut=private_postgres.kill)
    try:
        url = private_postgres_url.replace(f":{port}/", f":{proxy.port}/")
        with sql_warehouse(tmp_path, url, commit_check_seconds=1.0) as wh:
            _with_three_deltas(wh)
            claimed = _claim_major(wh)
            cut = _at_compaction_commit(wh, lambda conn: proxy.cut_after_next_request(client_port(conn)))
            with pytest.raises(CommitStateUnknownError, match=r"^PostgreSQL \(the metastore database "):
                execute_compaction(wh.metastore, claimed, on_step=cut)
            private_postgres.resume()
            entry = wh.metastore.get_compaction(claimed.id)
            assert entry.state is CompactionState.WORKING
            assert wh.metastore.get_txn(entry.txn_id).state is TxnState.COMMITTED
            [base] = [d for d in _directories(wh) if d.startswith("base_")]  # kept: T committed it
            assert _ids(wh) == [1, 2, 3]
            # The next run: recovery finds T committed and marks the entry compacted; no second compaction.
            assert run_worker(wh.metastore, worker_id="worker-2", worker_timeout_seconds=0.0) == []
            assert wh.metastore.get_compaction(claimed.id).state is CompactionState.READY_FOR_CLEANING
            assert [r.status for r in run_cleaner(wh.metastore)] == ["cleaned"]
            assert _succeeded(wh) == [claimed.id]
            assert [d for d in _directories(wh) if not d.startswith("_")] == [base]
            assert _ids(wh) == [1, 2, 3]
    finally:
        proxy.close()


@pytest.mark.parametrize("point", ["before-commit", "answer-lost"])
def test_mark_cleaned_postgres_fault_next_cleaner_run_converges(
    tmp_path, private_postgres, private_postgres_url, kill_and_resume, point
):
    """markCleaned's commit killed (or its answer lost): the run fails in one line; the next run finishes once."""
    port = int(private_postgres_url.split(":")[2].split("/")[0])
    proxy = CuttingProxy(port, on_cut=kill_and_resume)
    try:
        url = private_postgres_url.replace(f":{port}/", f":{proxy.port}/")
        with sql_warehouse(tmp_path, url, commit_check_seconds=10.0) as wh:
            _with_three_deltas(wh)
            wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
            [outcome] = run_worker(wh.metastore, worker_id="worker-1")
            engine = wh.metastore._engine
            if point == "before-commit":
                fault = lambda conn: kill_and_resume()  # noqa: E731
            else:
                fault = lambda conn: proxy.cut_after_next_request(client_port(conn))  # noqa: E731
            at_statement(
                engine, 'INSERT INTO "COMPLETED_COMPACTIONS"', lambda _conn: at_commit(engine, fault)
            )
            with pytest.raises(MetastoreDatabaseUnavailableError):
                run_cleaner(wh.metastore)
            kill_and_resume.healed()
            assert _ids(wh) == [1, 2, 3]
            assert [d for d in _directories(wh) if not d.startswith("_")] == list(outcome.outputs)
            # The next run (later than any retry retention the failed run recorded) converges.
            later = time.time() + 3600
            results = run_cleaner(wh.metastore, now=later)
            assert [r.status for r in results] == ([] if point == "answer-lost" else ["cleaned"])
            assert _succeeded(wh) == [outcome.compaction_id]
            assert run_cleaner(wh.metastore, now=later + 1) == []
            assert _ids(wh) == [1, 2, 3]
    finally:
        proxy.close()


# --- the initiator's cycle, a lease take --------------------------------------------------------


def _through_proxy(private_postgres_url, on_cut):
    port = int(private_postgres_url.split(":")[2].split("/")[0])
    proxy = CuttingProxy(port, on_cut=on_cut)
    return proxy, private_postgres_url.replace(f":{port}/", f":{proxy.port}/")


def _fault_at_commit_after(engine, fragment, point, proxy, kill_and_resume):
    """At the COMMIT that follows the statement containing ``fragment``: kill the server, or lose the answer."""
    if point == "before-commit":
        fault = lambda conn: kill_and_resume()  # noqa: E731
    else:
        fault = lambda conn: proxy.cut_after_next_request(client_port(conn))  # noqa: E731
    at_statement(engine, fragment, lambda _conn: at_commit(engine, fault))


@pytest.mark.parametrize("point", ["before-commit", "answer-lost"])
def test_initiator_cycle_postgres_fault_next_cycle_queues_one_compaction(
    tmp_path, private_postgres_url, kill_and_resume, point
):
    """The enqueue's commit killed or its answer lost: the cycle fails in one line; the next queues exactly one."""
    proxy, url = _through_proxy(private_postgres_url, kill_and_resume)
    config = InitiatorConfig(delta_num_threshold=2)
    try:
        with sql_warehouse(tmp_path, url, commit_check_seconds=10.0) as wh:
            _with_three_deltas(wh)
            _fault_at_commit_after(
                wh.metastore._engine, 'INSERT INTO "COMPACTION_QUEUE"', point, proxy, kill_and_resume
            )
            with pytest.raises(
                MetastoreDatabaseUnavailableError, match=r"^PostgreSQL \(the metastore database "
            ):
                run_initiator(wh.metastore, config=config)
            kill_and_resume.healed()
            run_initiator(wh.metastore, config=config)
            queued = [c for c in wh.metastore.show_compactions() if c.table == "default.t"]
            assert [c.state for c in queued] == [CompactionState.INITIATED]
            [outcome] = run_worker(wh.metastore, worker_id="worker-1")
            assert outcome.status == "compacted"
            assert _ids(wh) == [1, 2, 3]
    finally:
        proxy.close()


def test_take_lease_answer_lost_orphan_lease_protects_its_snapshot_until_its_ttl(
    tmp_path, private_postgres_url, kill_and_resume
):
    """The lease row commits but its ID is lost: the orphan keeps what it reads until it expires, then the cleaner runs."""
    proxy, url = _through_proxy(private_postgres_url, kill_and_resume)
    try:
        with sql_warehouse(tmp_path, url, commit_check_seconds=10.0) as wh:
            _with_three_deltas(wh)
            _fault_at_commit_after(
                wh.metastore._engine, 'INSERT INTO "READER_LEASES"', "answer-lost", proxy, kill_and_resume
            )
            taken = time.time()
            with pytest.raises(MetastoreDatabaseUnavailableError, match=r"during 'take_lease'"):
                wh.metastore.take_lease("default.t", ttl_seconds=60.0, now=taken)
            kill_and_resume.healed()
            [orphan] = wh.metastore.list_leases("default.t")
            assert orphan.expires == pytest.approx(taken + 60.0, abs=0.01)
            wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
            [outcome] = run_worker(wh.metastore, worker_id="worker-1")
            deltas = [d for d in _directories(wh) if d.startswith("delta_")]
            assert [r.status for r in run_cleaner(wh.metastore, now=time.time())] == ["waiting"]
            assert [d for d in _directories(wh) if d.startswith("delta_")] == deltas
            assert [r.status for r in run_cleaner(wh.metastore, now=taken + 61)] == ["cleaned"]
            assert [d for d in _directories(wh) if not d.startswith("_")] == list(outcome.outputs)
            assert _ids(wh) == [1, 2, 3]
    finally:
        proxy.close()


# --- the command line ----------------------------------------------------------------------------


def test_cli_postgres_stopped_prints_one_line_exits_nonzero(
    tmp_path, private_postgres, private_postgres_url, capsys
):
    """``acidflow compact``/``clean`` with the metastore's PostgreSQL stopped: one line naming it, exit 1, no traceback."""
    from acid_core.cli import main as acidflow

    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=10.0) as wh:
        _with_three_deltas(wh)
    private_postgres.kill()
    results = {}
    try:
        for command in ("compact", "clean"):
            capsys.readouterr()
            code = acidflow(
                [command, "--metastore", private_postgres_url, "--warehouse", str(tmp_path / "wh")]
            )
            results[command] = (code, capsys.readouterr())
    finally:
        private_postgres.resume()
    for code, captured in results.values():
        assert code == 1
        assert captured.out == ""
        [line] = captured.err.splitlines()
        assert "Traceback" not in captured.err
        assert line.startswith(
            f"acidflow: error: PostgreSQL (the metastore database {_shown(private_postgres_url)!r}) could not be "
            "reached during 'open': OperationalError: "
        )
        assert line.endswith(
            "acidflow stops this run and the next run starts from the state the database holds; hint: check "
            "the server (pg_isready) and rerun"
        )
    with sql_warehouse(tmp_path, private_postgres_url, commit_check_seconds=10.0) as wh:  # nothing changed
        assert _ids(wh) == [1, 2, 3]
        assert wh.metastore.show_compactions() == []


# --- the SQL lock manager ------------------------------------------------------------------------


def _exclusive(name="default.t"):
    from acid_core.locks import LockMode, LockRequest, parse_lock_object

    return [LockRequest(parse_lock_object(name), LockMode.EXCLUSIVE)]


def test_sql_lock_manager_postgres_restart_within_session_timeout_keeps_the_lock(
    private_postgres, private_postgres_url
):
    """Down: a lock call is one line naming PostgreSQL; back within the session timeout: the held lock
    survived (a second session is refused), and is released normally."""
    from acid_core.errors import LockRefusedError, LockServiceUnavailableError
    from acid_core.locks.sql import SqlLockManager

    first = SqlLockManager(private_postgres_url, session_timeout=30.0)
    try:
        held = first.acquire(_exclusive(), holder="writer-1", retries=0)
        private_postgres.kill()
        try:
            with pytest.raises(LockServiceUnavailableError) as info:
                first.acquire(_exclusive("default.u"), holder="writer-1", retries=0)
        finally:
            private_postgres.resume()
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith("The SQL lock store at ")
        assert (
            f"failed: PostgreSQL (the metastore database {_shown(private_postgres_url)!r}) could not be reached"
            in message
        )
        held.check()  # not lost
        second = SqlLockManager(private_postgres_url, session_timeout=30.0)
        try:
            with pytest.raises(LockRefusedError):
                second.acquire(_exclusive(), holder="writer-2", retries=0)
            first.release(held)
            second.release(second.acquire(_exclusive(), holder="writer-2", retries=0))
        finally:
            second.close()
    finally:
        first.close()


def test_sql_lock_manager_postgres_down_past_session_timeout_fences_the_holder(
    private_postgres, private_postgres_url
):
    """Down longer than the session timeout: once back, the holder learns its lock is lost (LockLostError)
    and another session takes it; the two never hold it together."""
    from acid_core.errors import LockLostError
    from acid_core.locks.sql import SqlLockManager

    first = SqlLockManager(private_postgres_url, session_timeout=1.0)
    try:
        held = first.acquire(_exclusive(), holder="writer-1", retries=0)
        private_postgres.kill()
        time.sleep(2.5)  # the outage outlasts the session timeout
        private_postgres.resume()
        second = SqlLockManager(private_postgres_url, session_timeout=30.0)
        try:
            taken = second.acquire(_exclusive(), holder="writer-2", retries=20, wait_seconds=0.2)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not held.is_lost:
                time.sleep(0.1)  # the first manager's next heartbeat finds its session expired
            with pytest.raises(LockLostError):
                held.check()
            assert [i.holder for i in second.show(extended=True)] == ["writer-2"]
            second.release(taken)
        finally:
            second.close()
    finally:
        first.close()
