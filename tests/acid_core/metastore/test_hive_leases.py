"""Reader leases on a Hive Metastore (``hive_leases``) over recorded Hive 4 shapes and a real side store.

The real Hive 2.3 server path is in ``tests/integration/test_hive_metastore.py``; here the Thrift
side is ``RecordedHmsConnection`` (requests are checked field by field) and the side store is a
real ``SqlMetastore`` on SQLite in ``tmp_path``.
"""

from __future__ import annotations

import pytest
from hive_metastore import ttypes as T

from acid_core.errors import LeaseLostError, LockTimeoutError, NoSuchLeaseError
from acid_core.metastore.factory import _side_store
from acid_core.metastore.hive.metastore import HiveMetastore
from acid_core.metastore.sql.metastore import SqlMetastore
from acid_core.writeids import ValidTxnList
from tests.acid_core.metastore.test_hive_shapes import _hive4

LEASE_TXN = 12


def _table():
    sd = T.StorageDescriptor(cols=[T.FieldSchema("a", "int", "")], location="file:/wh/db.db/t", numBuckets=-1)
    return T.Table(tableName="t", dbName="db", sd=sd, partitionKeys=[], parameters={"transactional": "true"})


def _connection(lock_state=T.LockState.ACQUIRED, **responses):
    base = {
        "get_table_req": T.GetTableResult(table=_table()),
        "open_txns": T.OpenTxnsResponse(txn_ids=[LEASE_TXN]),
        "lock": T.LockResponse(lockid=77, state=lock_state),
        "get_open_txns_req": T.GetOpenTxnsResponse(
            txn_high_water_mark=LEASE_TXN, open_txns=[5, 9, LEASE_TXN], min_open_txn=5, abortedBits=b"\x02"
        ),
        "get_valid_write_ids": lambda request: (
            T.GetValidWriteIdsResponse(
                tblValidWriteIds=[
                    T.TableValidWriteIds(
                        fullTableName="db.t",
                        writeIdHighWaterMark=3,
                        invalidWriteIds=[2],
                        minOpenWriteId=2,
                        abortedBits=b"",
                    )
                ]
            )
            if request.fullTableNames == ["db.t"]
            else T.NoSuchObjectException("no such table")
        ),
        "heartbeat": None,
        "commit_txn": None,
        "abort_txn": None,
    }
    return _hive4(**{**base, **responses})


@pytest.fixture
def side_store(tmp_path):
    store = SqlMetastore(f"sqlite:///{tmp_path / 'side.sqlite'}", warehouse=str(tmp_path / "wh"))
    yield store
    store.close()


def test_hive_lease_is_an_open_txn_with_a_read_lock_and_its_snapshot_recorded(side_store):
    connection = _connection()
    store = HiveMetastore(connection, lease_store=side_store, clock=lambda: 1_000.0)

    lease = store.take_lease("DB.T", 600, owner="spark:ann@h")

    assert lease.lease_id == LEASE_TXN  # the lease ID is the HMS transaction's ID
    assert (lease.table, lease.owner, lease.created, lease.expires) == (
        "db.t",
        "spark:ann@h",
        1_000.0,
        1_600.0,
    )
    # The snapshot the lease txn sees: nothing above itself; 9 aborted (bit 1), 5 open.
    assert lease.txns == ValidTxnList(LEASE_TXN, (5,), (9,), 5)
    assert lease.write_ids.to_string() == "db.t:3:2:2:"
    [(lock,)] = connection.requests("lock")
    [component] = lock.component
    assert (lock.txnid, component.type, component.level, component.operationType) == (
        LEASE_TXN,
        T.LockType.SHARED_READ,
        T.LockLevel.TABLE,
        T.DataOperationType.SELECT,
    )
    assert (component.dbname, component.tablename, component.isTransactional) == ("db", "t", True)
    assert side_store.get_lease(LEASE_TXN) == lease
    assert store.get_lease(LEASE_TXN) == lease
    assert store.list_leases("db.t") == [lease]


def test_hive_lease_release_commits_its_txn_and_drops_the_record(side_store):
    connection = _connection()
    store = HiveMetastore(connection, lease_store=side_store)
    store.take_lease("db.t", 600)

    store.release_lease(LEASE_TXN)

    assert [r[0].txnid for r in connection.requests("commit_txn")] == [LEASE_TXN]
    assert store.list_leases() == []
    with pytest.raises(NoSuchLeaseError):
        store.release_lease(LEASE_TXN)


def test_hive_lease_renew_heartbeats_and_moves_the_expiry(side_store):
    connection = _connection()
    store = HiveMetastore(connection, lease_store=side_store, clock=lambda: 1_000.0)
    taken = store.take_lease("db.t", 60)

    renewed = store.renew_lease(LEASE_TXN, 900, now=1_050.0)

    assert [r[0].txnid for r in connection.requests("heartbeat")] == [LEASE_TXN]
    assert (renewed.expires, renewed.write_ids, renewed.txns) == (1_950.0, taken.write_ids, taken.txns)


def test_hive_lease_renew_after_the_hms_aborted_its_txn_raises_lease_lost(side_store):
    connection = _connection(heartbeat=T.TxnAbortedException("Transaction txnid:12 already aborted"))
    store = HiveMetastore(connection, lease_store=side_store)
    store.take_lease("db.t", 60)

    with pytest.raises(
        LeaseLostError, match=r"^Reader lease 12 lost its Hive Metastore transaction \(aborted\)"
    ):
        store.renew_lease(LEASE_TXN, 60)
    assert store.get_lease(LEASE_TXN).lease_id == LEASE_TXN  # the record still protects until it expires


def test_hive_lease_expire_aborts_the_txns_of_expired_records(side_store):
    connection = _connection()
    store = HiveMetastore(connection, lease_store=side_store, clock=lambda: 1_000.0)
    store.take_lease("db.t", 60)

    assert store.expire_leases(now=1_059.0) == []
    assert store.expire_leases(now=1_060.0) == [LEASE_TXN]

    assert [r[0].txnid for r in connection.requests("abort_txn")] == [LEASE_TXN]
    assert store.list_leases() == []


def test_hive_lease_whose_lock_is_never_granted_aborts_its_txn_and_records_nothing(side_store):
    connection = _connection(
        lock_state=T.LockState.WAITING,
        check_lock=T.LockResponse(lockid=77, state=T.LockState.WAITING),
    )
    ticks = iter(range(0, 10_000, 10))
    store = HiveMetastore(connection, lease_store=side_store)
    store._leases._clock = lambda: float(next(ticks))
    store._leases._sleep = lambda seconds: None

    with pytest.raises(
        LockTimeoutError, match=r"read lock of lease transaction 12 on 'db.t' was not granted"
    ):
        store.take_lease("db.t", 60)

    assert [r[0].txnid for r in connection.requests("abort_txn")] == [LEASE_TXN]
    assert connection.requests("check_lock")
    assert side_store.list_leases() == []


def test_hive_side_store_setting_none_switches_it_off_and_thrift_is_refused(tmp_path):
    assert _side_store("none", str(tmp_path)) is None
    opener = _side_store(None, str(tmp_path / "wh"))
    assert opener is not None
    assert not (tmp_path / "wh").exists()  # opened on first use only
    with opener() as store:
        assert store.list_leases() == []
    assert (tmp_path / "wh" / ".acidflow" / "metastore.sqlite").is_file()
    with pytest.raises(
        ValueError, match=r"Invalid ACIDFLOW_LEASE_STORE 'thrift://h:9083': expected a SQLAlchemy"
    ):
        _side_store("thrift://h:9083", str(tmp_path))


def test_hive_backlog_history_goes_to_the_side_store_by_default(side_store):
    from acid_core.metastore.port import BacklogSample

    store = HiveMetastore(_connection(), lease_store=lambda: side_store)
    sample = BacklogSample("db.t", None, 1_000.0, 3, 1, 300, 100, 0, None)
    store.record_backlog_samples([sample])
    assert store.list_backlog_samples(0.0) == [sample]


def test_hive_housekeeping_expires_leases_and_aborts_their_txns(side_store):
    info = T.GetOpenTxnsInfoResponse(txn_high_water_mark=LEASE_TXN, open_txns=[])
    connection = _connection(get_open_txns_info=info)
    store = HiveMetastore(connection, lease_store=side_store, clock=lambda: 1_000.0)
    store.take_lease("db.t", 60)

    store.housekeeping(now=1_100.0)

    assert side_store.list_leases() == []
    assert [r[0].txnid for r in connection.requests("abort_txn")] == [LEASE_TXN]


def test_hive_lease_renew_after_expiry_raises_no_such_lease_without_a_heartbeat(side_store):
    connection = _connection()
    store = HiveMetastore(connection, lease_store=side_store, clock=lambda: 1_000.0)
    store.take_lease("db.t", 60)

    with pytest.raises(NoSuchLeaseError):
        store.renew_lease(LEASE_TXN, 60, now=1_060.0)
    assert connection.requests("heartbeat") == []
