"""Loss and delay between acidflow and PostgreSQL / the HMS / ZooKeeper, made by Toxiproxy (issue 24).

This kernel cannot do ``tc netem`` (``test_network_faults.py`` records what ``tc`` says), so every
byte between acidflow and the server here crosses a Toxiproxy proxy (``tests/fixtures/toxiproxy.py``)
whose toxics the tests add and remove at chosen points:

    delay                      ``latency`` (+ ``jitter``) on the answers
    loss                       what TCP makes of it: ``latency`` with a large jitter (retransmission
                               spikes), and ``timeout`` blackholes: the bytes stop, the connection is
                               closed after N ms (TCP giving up), or held open for ever (timeout 0)
    an answer cut mid-frame    ``limit_data`` (the connection closed after N bytes), ``slicer``
                               (answers in pieces of a few bytes)

Checked, as for the other service faults: no committed row lost, no uncommitted row visible, the
commit sent once and read back when its answer did not come, the error one line naming the service,
no hang (a call ends within acidflow's timeouts), and under ZooKeeper latency no two writers
interleave (fencing).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

import pyarrow as pa
import pytest
from sqlalchemy import make_url

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import execute_compaction, run_worker
from acid_core.errors import (
    CommitStateUnknownError,
    HiveMetastoreLostCommitAbortedError,
    HiveMetastoreUnavailableError,
    LockLostError,
    LockServiceUnavailableError,
    LostCommitAbortedError,
)
from acid_core.locks import LockMode, LockRequest
from acid_core.locks.port import parse_lock_object
from acid_core.locks.zookeeper import KazooLockManager
from acid_core.metastore import (
    Column,
    CompactionState,
    CompactionType,
    SqlMetastore,
    TableDefinition,
    TxnState,
)
from acid_core.writes import Warehouse
from tests.fixtures.postgres import drop_database, execute_admin
from tests.reliability.faults import at_commit, at_thrift_call, commit_statements, sql_warehouse

pytestmark = [pytest.mark.integration("postgres"), pytest.mark.timeout(300)]

_HEAL_AFTER_SECONDS = 2.0


# ---------------------------------------------------------------- PostgreSQL behind the proxy


@pytest.fixture
def pg_proxy(postgres_server, toxiproxy):
    """``(url, proxy)``: a fresh database of the session's PostgreSQL, reached only through a proxy."""
    admin = make_url(postgres_server)
    name = f"toxic_{uuid.uuid4().hex[:12]}"
    execute_admin(postgres_server, f'CREATE DATABASE "{name}"')
    proxy = toxiproxy.proxy(admin.port, admin.host)
    try:
        yield admin.set(database=name, port=proxy.port).render_as_string(hide_password=False), proxy
    finally:
        proxy.delete()
        drop_database(postgres_server, name)


def _with_rows(wh, rows):
    wh.metastore.create_table(
        TableDefinition("t", (Column("id", "int"),), properties={"transactional": "true"})
    )
    for row in rows:
        with wh.transaction() as txn:
            txn.insert("t", pa.table({"id": pa.array([row], pa.int32())}))


def _ids(wh, table="t"):
    return sorted(wh.read(table).column("id").to_pylist())


def _open_txns(metastore):
    return [t.txn_id for t in metastore.show_transactions() if t.state is TxnState.OPEN]


def test_postgres_latency_with_jitter_write_compaction_and_clean_commit_once(tmp_path, pg_proxy):
    """Every answer of PostgreSQL late (what a lossy link's retransmissions look like): 200 ms +- 150 ms
    for a write (17 statements), 30 ms +- 25 ms for a major compaction and its clean (~80): each
    succeeds, each commit sent once, every row intact, nothing left open."""
    url, proxy = pg_proxy
    with sql_warehouse(tmp_path, url) as wh:
        _with_rows(wh, [1, 2])
        sent = commit_statements(wh.metastore._engine)
        toxic = proxy.add("latency", "downstream", latency=200, jitter=150)
        started = time.monotonic()
        with wh.transaction() as txn:
            txn.insert("t", pa.table({"id": pa.array([3], pa.int32())}))
        assert time.monotonic() - started > 0.8  # the proxy did delay the answers (17 x >= 50 ms)
        assert wh.metastore.get_txn(txn.txn_id).state is TxnState.COMMITTED
        proxy.remove(toxic)
        proxy.add("latency", "downstream", latency=30, jitter=25)
        wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
        [outcome] = run_worker(wh.metastore, worker_id="worker-1")
        assert outcome.status == "compacted"
        assert _compaction_committed(wh.metastore)
        assert [r.status for r in run_cleaner(wh.metastore)] == ["cleaned"]
        assert len(sent) == 2, sent  # the write's and the compaction's, once each
        assert [c.state for c in wh.metastore.show_compactions()] == [CompactionState.SUCCEEDED]
        assert _ids(wh) == [1, 2, 3]
        assert sorted(d for d in _directories(wh) if not d.startswith("_")) == list(outcome.outputs)
        assert _open_txns(wh.metastore) == []


def _compaction_committed(metastore):
    [entry] = metastore.show_compactions()
    return entry.state is CompactionState.READY_FOR_CLEANING and (
        metastore.get_txn(entry.txn_id).state is TxnState.COMMITTED
    )


def _directories(wh):
    import os

    return os.listdir(wh.metastore.get_table("t").location)


def _blackhole_at_commit(wh, proxy, stream, *, heal_after):
    """Just before the COMMIT of the write's ``commit_txn`` is sent: the bytes on ``stream`` stop and
    every connection through the proxy is closed after 0.5 s (TCP giving up); removed ``heal_after``
    s later (None: never)."""

    def blackhole(_conn):
        toxic = proxy.add("timeout", stream, timeout=500)
        if heal_after is not None:
            proxy.remove_after(heal_after, toxic)

    at_commit(wh.metastore._engine, blackhole)


def test_postgres_blackhole_of_the_commit_that_heals_reads_back_and_aborts(tmp_path, pg_proxy):
    """The COMMIT never reaches PostgreSQL (a blackhole that closes the connection, healed 2 s later):
    acidflow reads the transaction back once the link heals, finds it open and aborts it; the one line
    says so; the commit is not re-sent, the row never visible, nothing left open."""
    url, proxy = pg_proxy
    with sql_warehouse(tmp_path, url) as wh:
        _with_rows(wh, [1])
        txn = wh.transaction().begin()
        txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
        sent = commit_statements(wh.metastore._engine)
        _blackhole_at_commit(wh, proxy, "upstream", heal_after=_HEAL_AFTER_SECONDS)
        with pytest.raises(LostCommitAbortedError) as info:
            txn.commit()
        proxy.join_timers()
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(
            f"PostgreSQL (the metastore database {_shown(url)!r}) went away during the commit of "
            f"transaction {txn.txn_id} ("
        )
        assert message.endswith(
            "); checked after reconnecting: the commit had not happened, so acidflow aborted the "
            "transaction and nothing it wrote is visible; expected the commit to be answered; hint: run "
            "it again"
        )
        assert len(sent) == 1
        assert wh.metastore.get_txn(txn.txn_id).state is TxnState.ABORTED
        assert _ids(wh) == [1]
        assert _open_txns(wh.metastore) == []


def test_postgres_blackhole_of_the_commit_answer_that_heals_is_read_back_committed(
    tmp_path, pg_proxy, caplog
):
    """PostgreSQL commits but its answer is swallowed (the connection closed after 0.5 s, healed 2 s
    later): acidflow reads the transaction back, committed, exactly once; no error, nothing re-sent."""
    url, proxy = pg_proxy
    with sql_warehouse(tmp_path, url) as wh:
        _with_rows(wh, [1])
        txn = wh.transaction().begin()
        txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
        sent = commit_statements(wh.metastore._engine)
        _blackhole_at_commit(wh, proxy, "downstream", heal_after=_HEAL_AFTER_SECONDS)
        with caplog.at_level(logging.WARNING, logger="acid_core.metastore.sql.metastore"):
            txn.commit()
        proxy.join_timers()
        assert [r.getMessage() for r in caplog.records][-1] == (
            f"commit of txn {txn.txn_id} lost its answer; checked after reconnecting: committed"
        )
        assert len(sent) == 1
        assert wh.metastore.get_txn(txn.txn_id).state is TxnState.COMMITTED
        assert _ids(wh) == [1, 2]


def test_postgres_blackhole_of_the_commit_that_does_not_heal_is_one_line_then_reaped(tmp_path, pg_proxy):
    """The blackhole stays past ``commit_check_seconds`` (1 s): one line naming PostgreSQL, the commit
    not re-sent; healed, the transaction is still open (the COMMIT never arrived) and the reaper aborts it."""
    url, proxy = pg_proxy
    with sql_warehouse(tmp_path, url, commit_check_seconds=1.0) as wh:
        _with_rows(wh, [1])
        txn = wh.transaction().begin()
        txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
        sent = commit_statements(wh.metastore._engine)
        _blackhole_at_commit(wh, proxy, "upstream", heal_after=None)
        try:
            with pytest.raises(CommitStateUnknownError) as info:
                txn.commit()
        finally:
            for toxic in proxy.toxics():
                proxy.remove(toxic)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(
            f"PostgreSQL (the metastore database {_shown(url)!r}) went away during the commit of "
            f"transaction {txn.txn_id} ("
        )
        assert "acidflow does not re-send the commit" in message
        assert len(sent) == 1
        assert wh.metastore.get_txn(txn.txn_id).state is TxnState.OPEN
        assert _ids(wh) == [1]
        assert wh.metastore.abort_timed_out_txns(0.0, now=10**10) == [txn.txn_id]
        assert _ids(wh) == [1]
        assert _open_txns(wh.metastore) == []


def _shown(url):
    return make_url(url).render_as_string(hide_password=True)


# ---------------------------------------------------------------- the Hive Metastore behind the proxy

_HMS_DB = "toxics"


@pytest.fixture
def hms_proxy(hive_metastore_server_31, toxiproxy, tmp_path, monkeypatch):
    """``open_store(timeout, commit_check_seconds)``: acidflow's store on the session's Hive 3.1.3
    Metastore through a proxy (``ACIDFLOW_HMS_TIMEOUT`` = timeout), and the proxy."""
    from acid_core.metastore.hive.metastore import HiveMetastore
    from acid_core.metastore.hive.queue_sql import HiveQueueSql
    from acid_core.metastore.hive.thrift import ThriftHmsConnection, parse_metastore_uris

    server = hive_metastore_server_31
    proxy = toxiproxy.proxy(server.port)
    opened = []

    def open_store(timeout=60.0, commit_check_seconds=60.0):
        connection = ThriftHmsConnection(
            parse_metastore_uris(f"thrift://127.0.0.1:{proxy.port}"), timeout_seconds=timeout
        )
        store = HiveMetastore(
            connection,
            queue_sql=HiveQueueSql(server.backend_url),
            lease_store=None,
            warehouse=str(server.warehouse),
            commit_check_seconds=commit_check_seconds,
        )
        opened.append(store)
        if _HMS_DB not in store.list_databases():
            store.create_database(_HMS_DB)
        return store

    yield open_store, proxy
    proxy.delete()
    for store in opened:
        store.close()


def _hms_table_with_rows(store, rows):
    wh = Warehouse(store._warehouse, store, heartbeat_seconds=None)
    table = f"{_HMS_DB}.t_{uuid.uuid4().hex[:8]}"
    store.create_table(
        TableDefinition(
            table,
            (Column("id", "int"),),
            properties={"transactional": "true", "transactional_properties": "default"},
        )
    )
    for row in rows:
        with wh.transaction() as txn:
            txn.insert(table, pa.table({"id": pa.array([row], pa.int32())}))
    return wh, table


def _commit_calls(connection):
    sent = []
    call = connection.call

    def counting(name, *args):
        if name == "commit_txn":
            sent.append(args)
        return call(name, *args)

    connection.call = counting
    return sent


@pytest.mark.integration("hive")
@pytest.mark.parametrize(
    "toxic",
    [
        ("latency", {"latency": 100, "jitter": 80}),
        ("slicer", {"average_size": 3, "size_variation": 2, "delay": 200}),
    ],
    ids=["latency-jitter", "slicer"],
)
def test_hms_latency_or_sliced_answers_compaction_commits_once(hms_proxy, toxic):
    """Every HMS answer 100 ms +- 80 ms late, or in pieces of 1-5 bytes: a major compaction and its
    clean go through, ``commit_txn`` sent once, every row intact."""
    open_store, proxy = hms_proxy
    store = open_store()
    wh, table = _hms_table_with_rows(store, [1, 2, 3])
    # Its own entry by ID: the session's 3.1.3 server is shared, and another module's leftover
    # 'initiated' entry would be the one find_next_to_compact hands out.
    claimed = store.claim_compaction(store.enqueue_compaction(table, None, CompactionType.MAJOR), "worker-1")
    sent = _commit_calls(store._hms)
    kind, attributes = toxic
    proxy.add(kind, "downstream", **attributes)
    outcome = execute_compaction(store, claimed)
    assert outcome.status == "compacted"
    assert len(sent) == 1
    assert store.get_txn(store.get_compaction(claimed.id).txn_id).state is TxnState.COMMITTED
    cleaned = {r.compaction_id: r.status for r in run_cleaner(store)}
    assert cleaned[claimed.id] == "cleaned"
    assert [c.state for c in store.show_compactions() if c.table == table] == [CompactionState.SUCCEEDED]
    assert sorted(wh.read(table).column("id").to_pylist()) == [1, 2, 3]


@pytest.mark.integration("hive")
def test_hms_blackhole_held_open_past_the_timeout_is_one_line_naming_the_hms(hms_proxy):
    """The HMS's answers stop and the connection is held open for ever (a blackhole behind something
    that still acks): ``get_table`` ends after ``ACIDFLOW_HMS_TIMEOUT`` (2 s) with one line naming the
    HMS, not a hang; healed, the next call works."""
    open_store, proxy = hms_proxy
    store = open_store(timeout=2.0)
    wh, table = _hms_table_with_rows(store, [1])
    uri = store._hms.description
    toxic = proxy.add("timeout", "downstream", timeout=0)
    try:
        with pytest.raises(HiveMetastoreUnavailableError) as info:  # without the timeout: a hang
            store.get_table(table)
    finally:
        proxy.remove(toxic)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"Cannot reach the Hive Metastore {uri!r} during 'get_table': ")
    assert message.endswith(
        "acidflow stops this run and the next run starts from the state the metastore holds; hint: check "
        "that the server runs, ACIDFLOW_METASTORE (hive.metastore.uris) and ACIDFLOW_HMS_TIMEOUT, then rerun"
    )
    assert store.get_table(table).name == table.split(".")[1]
    assert sorted(wh.read(table).column("id").to_pylist()) == [1]


@pytest.mark.integration("hive")
def test_hms_commit_answer_cut_mid_frame_is_read_back_committed_not_resent(hms_proxy, caplog):
    """``commit_txn`` reaches the HMS, its answer is cut after 5 bytes (``limit_data``: mid-frame, the
    connection closed) and the cut stays 2 s: acidflow reads the transaction back once it can,
    committed; one warning line, ``commit_txn`` sent once, the row visible once."""
    open_store, proxy = hms_proxy
    store = open_store(timeout=10.0)
    wh, table = _hms_table_with_rows(store, [1])
    txn = wh.transaction().begin()
    txn.insert(table, pa.table({"id": pa.array([2], pa.int32())}))
    sent = _commit_calls(store._hms)
    at_thrift_call(
        store._hms,
        "commit_txn",
        lambda: proxy.remove_after(_HEAL_AFTER_SECONDS, proxy.add("limit_data", "downstream", bytes=5)),
    )
    with caplog.at_level(logging.WARNING, logger="acid_core.metastore.hive.metastore"):
        txn.commit()
    proxy.join_timers()
    assert len(sent) == 1
    assert store.get_txn(txn.txn_id).state is TxnState.COMMITTED
    assert sorted(wh.read(table).column("id").to_pylist()) == [1, 2]
    warnings = [r.getMessage() for r in caplog.records if "commit of txn" in r.getMessage()]
    assert warnings[-1] == (
        f"commit of txn {txn.txn_id} was not answered; checked after reconnecting: committed"
    )
    assert all("\n" not in w for w in warnings)


@pytest.mark.integration("hive")
def test_hms_commit_request_cut_mid_frame_aborts_in_one_line_not_resent(hms_proxy):
    """``commit_txn``'s request is cut after 5 bytes (the HMS gets half a frame and does nothing), the
    cut stays 2 s: read back open, aborted; one line naming the HMS; not re-sent, the row never visible."""
    open_store, proxy = hms_proxy
    store = open_store(timeout=10.0)
    wh, table = _hms_table_with_rows(store, [1])
    txn = wh.transaction().begin()
    txn.insert(table, pa.table({"id": pa.array([2], pa.int32())}))
    sent = _commit_calls(store._hms)
    at_thrift_call(
        store._hms,
        "commit_txn",
        lambda: proxy.remove_after(_HEAL_AFTER_SECONDS, proxy.add("limit_data", "upstream", bytes=5)),
    )
    with pytest.raises(HiveMetastoreLostCommitAbortedError) as info:
        txn.commit()
    proxy.join_timers()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        f"The Hive Metastore {store._hms.description!r} went away during the commit of transaction "
        f"{txn.txn_id} ("
    )
    assert message.endswith("hint: run it again")
    assert len(sent) == 1
    assert store.get_txn(txn.txn_id).state is TxnState.ABORTED
    assert sorted(wh.read(table).column("id").to_pylist()) == [1]


# ---------------------------------------------------------------- ZooKeeper behind the proxy

_X = [LockRequest(parse_lock_object("default.t"), LockMode.EXCLUSIVE)]


@pytest.fixture
def zk_writers(tmp_path, zookeeper_server, toxiproxy):
    """``(a, b, proxy)``: two warehouses on one SQLite metastore with table t and row 1, each with its own
    2 s ZooKeeper session: A's through a proxy, B's on the loopback."""
    proxy = toxiproxy.proxy(zookeeper_server.port)
    root, url = str(tmp_path / "wh"), f"sqlite:///{tmp_path}/metastore.db"
    managers = [
        KazooLockManager(f"127.0.0.1:{proxy.port}", session_timeout=2.0, host="a"),
        KazooLockManager(zookeeper_server.hosts, session_timeout=2.0, host="b"),
    ]
    a, b = (
        Warehouse(root, SqlMetastore(url, warehouse=root), manager, user=manager.host, heartbeat_seconds=None)
        for manager in managers
    )
    a.metastore.create_table(
        TableDefinition("t", (Column("id", "int"),), properties={"transactional": "true"})
    )
    with a.transaction() as txn:
        txn.acquire_locks(_X)
        txn.insert("t", pa.table({"id": pa.array([1], pa.int32())}))
    try:
        yield a, b, proxy
    finally:
        proxy.delete()
        for wh, manager in zip((a, b), managers, strict=True):
            wh.close()
            manager.close()


def _append_next(wh, txn, current):
    txn.insert("t", pa.table({"id": pa.array([max(current) + 1], pa.int32())}))
    txn.commit()


@pytest.mark.integration("zookeeper")
@pytest.mark.parametrize(
    ("latencies", "a_keeps_its_lock"),
    [
        ({"upstream": 300, "downstream": 300}, True),
        ({"upstream": 3000}, False),
    ],
    ids=["round-trip-0.6s-under-the-2s-session", "3s-past-the-2s-session"],
)
def test_zookeeper_latency_near_the_session_timeout_never_lets_two_writers_interleave(
    zk_writers, latencies, a_keeps_its_lock, monkeypatch
):
    """A takes X, reads the table's largest number, then its link to ZooKeeper slows down; B (on the
    loopback) wants X to append the next number; A then appends its next number. Under a round trip
    of 0.6 s (inside the 2 s session) A keeps its lock, commits, and B appends after it. Past the
    session, ZooKeeper expires A's session, B takes X and commits; A's client can no longer reconnect
    (its handshake's answer comes after the client gave up on it), so A's commit waits for the doubt
    to resolve (``LOCK_CONFIRM_SECONDS``, 3 s here), then learns it lost its lock (``LockLostError``,
    one line, aborted: fencing) instead of committing the number B wrote, and its release gives up
    after the session timeout instead of hanging. Either way the committed numbers are 1..n, each
    once: the two writers never interleaved."""
    monkeypatch.setattr("acid_core.writes.transaction.LOCK_CONFIRM_SECONDS", 3.0)
    a, b, proxy = zk_writers
    txn = a.transaction().begin()
    txn.acquire_locks(_X)
    seen_by_a = a.read("t").column("id").to_pylist()
    for stream, latency in latencies.items():
        proxy.add("latency", stream, latency=latency, jitter=0)
    b_done = threading.Event()

    def b_appends():
        with b.transaction() as b_txn:
            b_txn.acquire_locks(_X)
            _append_next(b, b_txn, b.read("t").column("id").to_pylist())
        b_done.set()

    thread = threading.Thread(target=b_appends)
    thread.start()
    try:
        if a_keeps_its_lock:
            time.sleep(2.5)  # longer than the session: A's pings keep it alive through the latency
            assert not b_done.is_set()  # B waits for A's lock
            _append_next(a, txn, seen_by_a)
            thread.join(timeout=120)
            assert a.metastore.get_txn(txn.txn_id).state is TxnState.COMMITTED
        else:
            thread.join(timeout=120)  # B gets X once ZooKeeper expired A's session
            assert b_done.is_set()
            with pytest.raises(LockLostError) as info:
                _append_next(a, txn, seen_by_a)
            assert "\n" not in str(info.value)
            assert str(info.value).startswith(f"Transaction {txn.txn_id} was aborted")
            assert a.metastore.get_txn(txn.txn_id).state is TxnState.ABORTED
    finally:
        for toxic in proxy.toxics():
            proxy.remove(toxic)
        thread.join(timeout=120)
    assert b_done.is_set()
    ids = sorted(b.read("t").column("id").to_pylist())
    assert ids == ([1, 2, 3] if a_keeps_its_lock else [1, 2])
    assert _open_txns(b.metastore) == []


@pytest.mark.integration("zookeeper")
def test_zookeeper_acquire_on_a_link_past_the_session_gives_up_in_one_line_then_works(zk_writers):
    """A's link to ZooKeeper 3 s late, its session 2 s: its client cannot reconnect (each handshake's
    answer comes after it gave up), and kazoo would queue a lock request for ever. The acquire waits
    a session timeout per attempt, then ends in one line naming ZooKeeper, nothing held (B takes X at
    once); healed, A's next acquire works."""
    a, b, proxy = zk_writers
    toxic = proxy.add("latency", "upstream", latency=3000, jitter=0)
    try:
        _wait_for(lambda: not a.lock_manager.is_connected)
        with pytest.raises(LockServiceUnavailableError) as info:
            a.lock_manager.acquire(_X, holder="a", retries=1, wait_seconds=0.1)
    finally:
        proxy.remove(toxic)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        f"Could not lock X default.t on ZooKeeper '127.0.0.1:{proxy.port}': the last of 2 "
    )
    assert message.endswith("hint: check the ZooKeeper server; nothing is held")
    handle = b.lock_manager.acquire(_X, holder="b", retries=0)
    b.lock_manager.release(handle)
    _wait_for(lambda: a.lock_manager.is_connected)
    a.lock_manager.release(a.lock_manager.acquire(_X, holder="a", retries=5))


@pytest.mark.integration("zookeeper")
def test_zookeeper_show_on_a_link_past_the_session_ends_in_one_line_then_works(zk_writers):
    """``show`` (``acidflow lock show``, the operator's page) on a link 3 s late with a 2 s session:
    kazoo would queue the listing and wait for ever; it ends after the session timeout in one line
    naming ZooKeeper; healed, the next ``show`` lists B's lock."""
    a, b, proxy = zk_writers
    toxic = proxy.add("latency", "upstream", latency=3000, jitter=0)
    try:
        _wait_for(lambda: not a.lock_manager.is_connected)
        with pytest.raises(LockServiceUnavailableError) as info:  # before the fix: a hang
            a.lock_manager.show()
    finally:
        proxy.remove(toxic)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"Could not list locks on ZooKeeper '127.0.0.1:{proxy.port}': ")
    handle = b.lock_manager.acquire(_X, holder="b", retries=0)
    _wait_for(lambda: a.lock_manager.is_connected)
    assert [(lock.mode, lock.holder) for lock in a.lock_manager.show(extended=True)] == [
        (LockMode.EXCLUSIVE, "b")
    ]
    b.lock_manager.release(handle)


def _wait_for(condition, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
