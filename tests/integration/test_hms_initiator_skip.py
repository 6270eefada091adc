"""The initiator's skip of unchanged partitions on real Hive 2.3.10, 3.1.3 and 4.0.1 Metastores.

Each cycle opens the metastore anew (as a restarted ``acidflow initiate`` does): the marks live in
acidflow's side store (``ACIDFLOW_LEASE_STORE``, here a SQLite file) and carry the compactor's
write-ID list of the cycle. Directory listings are counted through the ``FileIO`` port (a
counting wrapper around what ``file_io_for`` returns to the initiator), by path.

With the backend database (``ACIDFLOW_HMS_DB``) the skip is exact per partition
(COMPLETED_TXN_COMPONENTS under the newly valid write IDs, TXN_COMPONENTS of aborted txns); by
Thrift alone it is per table (the write-ID list unchanged and no aborted write in it: nothing
listed; else every partition). On 2.3 write IDs are txn IDs: the backend's CTC_TXNID answers, and
by Thrift alone the table's list is the whole HMS's txn list (any transaction anywhere lists it
all; these tests run nothing else in between).

Writes come from acidflow's HMS-mode writer (``acidflow sql INSERT``: open_txns,
allocate_table_write_ids, lock with isTransactional, the delta files, commit_txn) and a Hive-style
aborted transaction through Thrift (the same lock, then abort_txn).
"""

from __future__ import annotations

import uuid

import pytest

from acid_core.cli import main as acidflow
from acid_core.compaction import backlog
from acid_core.compaction.backlog import InitiatorStats, iter_initiator
from acid_core.metastore import WriteOperation
from acid_core.metastore.factory import open_metastore

pytestmark = [pytest.mark.integration("hive"), pytest.mark.slow, pytest.mark.timeout(600)]

PARTITIONS = 6
_SERVERS = {
    "2.3.10": "hive_metastore_server",
    "3.1.3": "hive_metastore_server_31",
    "4.0.1": "hive_metastore_server_4",
}


@pytest.fixture(scope="module", params=list(_SERVERS), ids=lambda v: f"hive-{v}")
def server(request):
    return request.getfixturevalue(_SERVERS[request.param])


@pytest.fixture(scope="module", params=["3.1.3", "4.0.1"], ids=lambda v: f"hive-{v}")
def write_id_server(request):
    """The servers with table write IDs (the Thrift-only skip is per table there)."""
    return request.getfixturevalue(_SERVERS[request.param])


class _CountingIO:
    """A ``FileIO`` that records every listing and stat it is asked for (path by path)."""

    def __init__(self, io, calls):
        self._io, self._calls = io, calls

    def __getattr__(self, name):
        return getattr(self._io, name)

    def _record(self, method, path):
        self._calls.append((method, path.rstrip("/")))

    def list_dir(self, path):
        self._record("list_dir", path)
        return self._io.list_dir(path)

    def list_entries(self, path):
        self._record("list_entries", path)
        return self._io.list_entries(path)

    def list_tree(self, path):
        self._record("list_tree", path)
        return self._io.list_tree(path)

    def info(self, path):
        self._record("info", path)
        return self._io.info(path)


@pytest.fixture
def calls(monkeypatch):
    recorded: list[tuple[str, str]] = []
    original = backlog.file_io_for

    def counting(location):
        io, root = original(location)
        return _CountingIO(io, recorded), root

    monkeypatch.setattr(backlog, "file_io_for", counting)
    return recorded


@pytest.fixture
def env(server, tmp_path, monkeypatch):
    """The side store in ``tmp_path`` (it survives the "restarts"); the table's name.

    The server is the session's: the compactions a test queued are refused at its end, so that no
    later test's ``find_next_to_compact`` claims them.
    """
    table = _env(tmp_path, monkeypatch)
    yield table
    _refuse_queued(server, tmp_path, table)


@pytest.fixture
def write_id_env(write_id_server, tmp_path, monkeypatch):
    """``env`` on the servers with table write IDs; what the test queued is refused at its end."""
    table = _env(tmp_path, monkeypatch)
    yield table
    _refuse_queued(write_id_server, tmp_path, table)


def _refuse_queued(server, tmp_path, table):
    store = open_metastore(server.uri, str(tmp_path), hms_db=server.backend_url)
    try:
        for entry in store.show_compactions(table):
            if entry.state.value in ("initiated", "working"):
                store.mark_refused(entry.id, "refused by the test that queued it (test_hms_initiator_skip)")
        left = [e.id for e in store.show_compactions(table) if e.state.value in ("initiated", "working")]
        assert left == [], f"compactions of {table} still queued after the test: {left}"
    finally:
        store.close()


def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDFLOW_LEASE_STORE", f"sqlite:///{tmp_path / 'side.sqlite'}")
    for name in ("ACIDFLOW_HMS_DB", "ACIDFLOW_LOCK_MANAGER", "ACIDFLOW_ZOOKEEPER"):
        monkeypatch.delenv(name, raising=False)
    return f"skip_{uuid.uuid4().hex[:8]}.t"


def _sql(server, tmp_path, capsys, *statements):
    capsys.readouterr()
    code = acidflow(["sql", "--metastore", server.uri, "--warehouse", str(tmp_path), *statements])
    assert code == 0, capsys.readouterr().err


def _create_and_fill(server, tmp_path, capsys, table):
    database = table.split(".")[0]
    values = ", ".join(f"({p}, 'v', {p})" for p in range(PARTITIONS))
    _sql(
        server,
        tmp_path,
        capsys,
        f"CREATE DATABASE {database}",
        # bucketed: Hive 2.3 refuses an unbucketed ACID table
        f"CREATE TABLE {table} (id int, v string) PARTITIONED BY (p int) CLUSTERED BY (id) INTO 1 BUCKETS "
        "STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true', "
        "'compactorthreshold.hive.compactor.delta.num.threshold'='2')",
        f"INSERT INTO {table} PARTITION (p) VALUES {values}",
    )


def _cycle(server, tmp_path, table, calls, hms_db):
    """One initiator cycle by a fresh process's adapter: (decided partitions, listed partitions, stats)."""
    calls.clear()
    stats = InitiatorStats()
    store = open_metastore(server.uri, str(tmp_path), hms_db=server.backend_url if hms_db else "")
    try:
        entries = list(iter_initiator(store, tables=[table], stats=stats, lookback_seconds=0))
        queued = {
            e.partition for e in store.show_compactions(table) if e.state.value in ("initiated", "working")
        }
    finally:
        store.close()
    decided = sorted(e.decision.partition for e in entries)
    listed = sorted({path.rsplit("/", 1)[-1] for method, path in calls if method.startswith("list")})
    return decided, listed, stats, queued


def _hive_style_write(server, tmp_path, table, partition, *, commit):
    """A Hive-style writer's transaction by Thrift: open_txns, allocate + lock (TXN_COMPONENTS),
    then commit_txn (COMPLETED_TXN_COMPONENTS) or abort_txn (a writer that died)."""
    store = open_metastore(server.uri, str(tmp_path), hms_db="")
    try:
        txn = store.open_txn()
        store.add_write_component(txn, table, partition, WriteOperation.INSERT)
        if commit:
            store.commit_txn(txn)
        else:
            store.abort_txn(txn)
    finally:
        store.close()


def test_hms_initiator_with_backend_db_lists_only_changed_partitions(server, env, tmp_path, capsys, calls):
    """First cycle: all; second, nothing written: none (no listing at all); a write to one
    partition: that one, compacted; an aborted write: its partition; every cycle a restart."""
    table = env
    _create_and_fill(server, tmp_path, capsys, table)
    everything = [f"p={p}" for p in range(PARTITIONS)]

    decided, listed, stats, queued = _cycle(server, tmp_path, table, calls, hms_db=True)
    assert decided == everything
    assert listed in (["t"], everything)  # the table at once, or each partition
    assert (stats.listed, stats.skipped, queued) == (PARTITIONS, 0, set())

    decided, listed, stats, queued = _cycle(server, tmp_path, table, calls, hms_db=True)
    assert (decided, calls, stats.skipped) == ([], [], PARTITIONS)

    for i in range(2):  # p=3 now holds 3 deltas: over the threshold of 2
        _sql(server, tmp_path, capsys, f"INSERT INTO {table} PARTITION (p) VALUES ({10 + i}, 'w', 3)")
    decided, listed, stats, queued = _cycle(server, tmp_path, table, calls, hms_db=True)
    assert (decided, listed, stats.reasons) == (["p=3"], ["p=3"], {"written": 1})
    assert queued == {"p=3"}

    _hive_style_write(server, tmp_path, table, "p=5", commit=False)
    decided, listed, stats, _ = _cycle(server, tmp_path, table, calls, hms_db=True)
    # p=3: its compaction is queued (listed until it ends); p=5: the aborted write
    assert decided == ["p=3", "p=5"]
    assert listed in (["t"], ["p=3", "p=5"])  # 2 of 6: over 2%, so the table at once
    assert stats.reasons == {"compaction_activity": 1, "aborted_writes": 1}

    _hive_style_write(server, tmp_path, table, "p=1", commit=True)
    decided, _, stats, _ = _cycle(server, tmp_path, table, calls, hms_db=True)
    assert decided == ["p=1", "p=3", "p=5"]
    assert stats.reasons == {"written": 1, "compaction_activity": 1, "aborted_writes": 1}


def test_hms_initiator_by_thrift_alone_skips_a_table_whose_write_ids_did_not_move(
    write_id_server, write_id_env, tmp_path, capsys, calls
):
    """Without the backend database the unit is the table: unchanged -> nothing listed; one
    write anywhere -> every partition listed, and still only the partition due is queued."""
    server, table = write_id_server, write_id_env
    _create_and_fill(server, tmp_path, capsys, table)
    everything = [f"p={p}" for p in range(PARTITIONS)]

    assert _cycle(server, tmp_path, table, calls, hms_db=False)[0] == everything
    decided, _, stats, _ = _cycle(server, tmp_path, table, calls, hms_db=False)
    assert (decided, calls, stats.skipped) == ([], [], PARTITIONS)

    for i in range(2):
        _sql(server, tmp_path, capsys, f"INSERT INTO {table} PARTITION (p) VALUES ({10 + i}, 'w', 3)")
    decided, _, stats, queued = _cycle(server, tmp_path, table, calls, hms_db=False)
    assert (decided, stats.reasons, queued) == (everything, {"table_written": PARTITIONS}, {"p=3"})

    decided, listed, stats, _ = _cycle(server, tmp_path, table, calls, hms_db=False)
    assert (decided, listed, stats.reasons) == (["p=3"], ["p=3"], {"compaction_activity": 1})

    _hive_style_write(server, tmp_path, table, "p=5", commit=False)
    decided, _, stats, _ = _cycle(server, tmp_path, table, calls, hms_db=False)
    assert decided == everything
    assert stats.reasons == {"table_written": PARTITIONS}


def test_hive23_initiator_by_thrift_alone_lists_the_table_after_any_transaction(
    hive_metastore_server, tmp_path, capsys, calls, monkeypatch
):
    """Hive 2.3 has no table write IDs: a table's list is the HMS's txn list, so by Thrift alone a
    transaction on any other table lists every partition again (never a skip it cannot prove)."""
    server, table = hive_metastore_server, _env(tmp_path, monkeypatch)
    _create_and_fill(server, tmp_path, capsys, table)
    assert len(_cycle(server, tmp_path, table, calls, hms_db=False)[0]) == PARTITIONS

    other = table.replace(".t", ".other")
    _sql(server, tmp_path, capsys, f"CREATE TABLE {other} (id int) CLUSTERED BY (id) INTO 1 BUCKETS "
         "STORED AS ORC TBLPROPERTIES ('transactional'='true')", f"INSERT INTO {other} VALUES (1)")  # fmt: skip
    decided, _, stats, _ = _cycle(server, tmp_path, table, calls, hms_db=False)
    assert (len(decided), stats.reasons) == (PARTITIONS, {"table_written": PARTITIONS})
