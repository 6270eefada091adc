"""ZooKeeper fails under a writer that holds a lock: its session expires, or the server restarts (issue 24).

Two holders share one table and one metastore, each with its own ZooKeeper session. When the first
holder's session expires (kazoo's harness trick: another client joins the session and closes it),
the second can take the lock; the first must learn it (``LockLostError``), stop and abort, so its
write never interleaves with the second's (fencing, as kazoo's lock recipe advises). A server
restart leaves the session in doubt: the commit waits for it, and fails in one line if it lasts.
The commit's fence asks ZooKeeper itself, so a holder paused past its session (or whose node an
operator deleted) learns it even before its client has heard of it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from acid_core.errors import LockLostError, failed_service
from acid_core.locks import LockMode, LockRequest
from acid_core.locks.port import parse_lock_object
from acid_core.locks.zookeeper import KazooLockManager
from acid_core.metastore import Column, SqlMetastore, TableDefinition, TxnState
from acid_core.writes import Warehouse, transaction

pytestmark = pytest.mark.integration("zookeeper")

_TABLE_X = [LockRequest(parse_lock_object("default.t"), LockMode.EXCLUSIVE)]


@pytest.fixture
def holders(tmp_path, zookeeper_server):
    """``holder(name)``: a Warehouse with its own ZooKeeper session, on one shared warehouse and metastore."""
    root, url = str(tmp_path / "wh"), f"sqlite:///{tmp_path}/metastore.db"
    opened = []

    def holder(name, session_timeout=4.0):
        manager = KazooLockManager(zookeeper_server.hosts, session_timeout=session_timeout, host=name)
        wh = Warehouse(root, SqlMetastore(url, warehouse=root), manager, user=name, heartbeat_seconds=None)
        opened.append((wh, manager))
        return wh

    first = holder("a")
    first.metastore.create_table(
        TableDefinition("t", (Column("id", "int"),), properties={"transactional": "true"})
    )
    _insert(first, 1)
    yield holder
    for wh, manager in opened:
        wh.close()
        manager.close()


def _insert(wh, value, txn=None):
    if txn is not None:
        txn.insert("t", pa.table({"id": pa.array([value], pa.int32())}))
        return
    with wh.transaction() as t:
        t.acquire_locks(_TABLE_X)
        t.insert("t", pa.table({"id": pa.array([value], pa.int32())}))


def _insert_in_with_block(txn, value):
    with txn:  # an error inside aborts the transaction
        _insert(None, value, txn)


def _ids(wh):
    return sorted(wh.read("t").column("id").to_pylist())


def _wait_for(condition, seconds=15.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _expire(zookeeper_server, wh, txn):
    handle = txn._locks[0]
    zookeeper_server.expire_session(wh.lock_manager.client_id)
    _wait_for(lambda: handle.is_lost)


def _second_holder_commits_first_is_aborted(a, b, txn, lost_because):
    """B takes the X that A lost and commits; A's commit is aborted in one line naming ZooKeeper."""
    _insert(b, 3)
    with pytest.raises(LockLostError) as info:
        txn.commit()
    assert str(info.value) == (
        f"Transaction {txn.txn_id} was aborted before its commit: Locks of holder "
        f"'a@{socket.gethostname()}' (txn {txn.txn_id}) on X default.t were lost: {lost_because}; expected a "
        "live session; hint: stop writing and abort the transaction, then retry it from the start"
    )
    # The service is known to the alert (and the soak's fault check), not only in the text.
    assert failed_service(info.value) == "ZooKeeper"
    assert a.metastore.get_txn(txn.txn_id).state is TxnState.ABORTED
    assert _ids(a) == [1, 3]  # A's row never visible: no interleaving


def test_transaction_session_expired_before_commit_aborts_and_second_holder_wins(zookeeper_server, holders):
    """A's session expires while it holds X; B takes X and commits; A's commit is refused and A aborted."""
    a, b = holders("a"), holders("b")
    txn_a = a.transaction().begin()
    txn_a.acquire_locks(_TABLE_X)
    _insert(a, 2, txn_a)
    _expire(zookeeper_server, a, txn_a)
    _second_holder_commits_first_is_aborted(
        a, b, txn_a, f"the ZooKeeper session to {zookeeper_server.hosts!r} expired"
    )
    _insert(a, 2)  # the next run of A, on the manager's new session
    assert _ids(a) == [1, 2, 3]


def test_transaction_session_expired_write_after_loss_is_refused_and_aborted(zookeeper_server, holders):
    """A write after the loss stops at once (before any file); the with-block aborts the transaction."""
    a = holders("a")
    txn = a.transaction().begin()
    txn.acquire_locks(_TABLE_X)
    _expire(zookeeper_server, a, txn)
    with pytest.raises(LockLostError, match=r"were lost: the ZooKeeper session to "):
        _insert_in_with_block(txn, 2)
    assert txn.written == []
    assert a.metastore.get_txn(txn.txn_id).state is TxnState.ABORTED
    assert _ids(a) == [1]


def test_transaction_zookeeper_restart_commit_waits_for_reconnect_and_commits(zookeeper_server, holders):
    """ZooKeeper restarts while A holds X: the commit waits for the session to reconnect (it survives), then commits.

    ZooKeeper keeps a session over a restart only if the client reconnects within its timeout of
    the server's start; 20 s leaves a loaded 2-core CI machine room (4 s expired there once).
    """
    a = holders("a", session_timeout=20.0)
    txn = a.transaction().begin()
    txn.acquire_locks(_TABLE_X)
    _insert(a, 2, txn)
    zookeeper_server.stop()
    try:
        _wait_for(lambda: not txn._locks[0]._live.is_set())
        threading.Timer(1.0, zookeeper_server.start).start()
        txn.commit()
    finally:
        _wait_for(lambda: zookeeper_server.process is not None, 30.0)
    assert a.metastore.get_txn(txn.txn_id).state is TxnState.COMMITTED
    assert _ids(a) == [1, 2]


def test_transaction_zookeeper_down_past_confirm_aborts_in_one_line_next_run_commits(
    zookeeper_server, holders, monkeypatch
):
    """ZooKeeper stays down past the commit's wait: the txn is aborted with one line; after it is back, a rerun commits."""
    monkeypatch.setattr(transaction, "LOCK_CONFIRM_SECONDS", 1.0)
    a = holders("a")
    txn = a.transaction().begin()
    txn.acquire_locks(_TABLE_X)
    _insert(a, 2, txn)
    zookeeper_server.stop()
    # Back after 3 s: past the commit's 1 s wait. The abort's release of the locks waits for it
    # (kazoo queues requests until it reconnects), then deletes the nodes of the surviving session.
    restart = threading.Timer(3.0, zookeeper_server.start)
    try:
        _wait_for(lambda: not a.lock_manager.is_connected)
        restart.start()
        with pytest.raises(LockLostError) as info:
            txn.commit()
    finally:
        if restart.ident is not None:
            restart.join()
        if zookeeper_server.process is None:
            zookeeper_server.start()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"Transaction {txn.txn_id} was aborted before its commit: Locks of holder ")
    assert message.endswith(
        "are in doubt: the session to the lock service stayed disconnected for more than 1 s; expected a "
        "live session; hint: stop writing and abort the transaction, then retry it from the start"
    )
    assert a.metastore.get_txn(txn.txn_id).state is TxnState.ABORTED
    assert _ids(a) == [1]
    _wait_for(lambda: a.lock_manager.is_connected)
    _insert(a, 2)
    assert _ids(a) == [1, 2]


def test_transaction_lock_node_deleted_by_another_client_commit_asks_zookeeper_and_aborts(
    zookeeper_server, holders
):
    """A's lock node is deleted behind its back (an operator's ``deleteall``): its session lives, so
    only ZooKeeper knows; the commit's fence asks it, aborts A in one line, and B's write stands."""
    from kazoo.client import KazooClient

    a, b = holders("a"), holders("b")
    txn = a.transaction().begin()
    txn.acquire_locks(_TABLE_X)
    _insert(a, 2, txn)
    operator = KazooClient(hosts=zookeeper_server.hosts)
    operator.start(timeout=15)
    try:
        path = "/acidflow/locks/default/t"
        (node,) = [f"{path}/{child}" for child in operator.get_children(path)]
        operator.delete(node)
    finally:
        operator.stop()
        operator.close()
    assert not txn._locks[0].is_lost  # nothing told A's client
    _second_holder_commits_first_is_aborted(
        a,
        b,
        txn,
        f"ZooKeeper {zookeeper_server.hosts!r} no longer holds its lock node {node} (deleted by another client)",
    )
    _insert(a, 2)  # the same manager (its session lived) locks and commits again
    assert _ids(a) == [1, 2, 3]


def test_transaction_holder_paused_past_its_session_learns_at_commit_and_aborts(
    tmp_path, zookeeper_server, holders
):
    """A holder process paused (SIGSTOP: a long GC) while its session is expired and B writes: when
    it resumes and commits at once, before kazoo may have heard of the expiry, the commit's fence
    asks ZooKeeper and aborts it; only B's row is visible."""
    b = holders("b")
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.reliability.paused_holder",
            zookeeper_server.hosts,
            str(tmp_path / "wh"),
            f"sqlite:///{tmp_path}/metastore.db",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    ) as worker:
        try:
            published = json.loads(worker.stdout.readline())
            os.kill(worker.pid, signal.SIGSTOP)
            try:
                zookeeper_server.expire_session((published["session"], bytes.fromhex(published["password"])))
                _insert(b, 3)  # B takes the X the paused holder still believes it holds
                worker.stdin.write("commit\n")
                worker.stdin.flush()
            finally:
                os.kill(worker.pid, signal.SIGCONT)
            outcome = worker.stdout.readline().strip()
            assert worker.wait(timeout=60) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
    assert outcome.startswith(f"LOST Transaction {published['txn']} was aborted before its commit: "), outcome
    assert "\n" not in outcome
    assert b.metastore.get_txn(published["txn"]).state is TxnState.ABORTED
    assert _ids(b) == [1, 3]
