"""HMS reader leases against a model: take, renew, release, expire and the HMS's own txn reaper, in any order.

The HMS is a small in-process fake of the transaction calls a lease makes (``open_txns``, ``lock``,
``get_open_txns_req``, ``heartbeat``, ``commit_txn``, ``abort_txn``) that answers as Hive's
TxnHandler does (a heartbeat of an aborted txn is ``TxnAbortedException``, of a committed or unknown
one ``NoSuchTxnException``); the side store is a real ``SqlMetastore`` on SQLite. The model is a dict
lease ID -> (expiry, txn lost?). Invariants after every step: the side store lists exactly the
model's records; a live record's txn is open in the HMS unless the reaper took it; a released
lease's txn committed; an expired one's aborted.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hive_metastore import ttypes as T
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from acid_core.errors import LeaseLostError, NoSuchLeaseError
from acid_core.metastore.hive.metastore import HiveMetastore
from acid_core.metastore.hive.thrift import UNSUPPORTED
from acid_core.metastore.sql.metastore import SqlMetastore
from tests.acid_core.metastore.test_hive_leases import _table

TTL = 100.0


class FakeHmsTxns:
    """Hive 4's transaction calls over a dict txn -> state ('o', 'c', 'a')."""

    description = "thrift://fake:9083"

    def __init__(self):
        self.txns: dict[int, str] = {}

    def call(self, method, *args):
        if method == "get_table":
            return _table()
        if method == "open_txns":
            txn = max(self.txns, default=0) + 1
            self.txns[txn] = "o"
            return T.OpenTxnsResponse(txn_ids=[txn])
        if method == "lock":
            return T.LockResponse(lockid=args[0].txnid, state=T.LockState.ACQUIRED)
        if method == "get_open_txns_req":
            listed = sorted(t for t, s in self.txns.items() if s in "oa")
            bits = sum(1 << i for i, t in enumerate(listed) if self.txns[t] == "a")
            return T.GetOpenTxnsResponse(
                txn_high_water_mark=max(self.txns, default=0),
                open_txns=listed,
                abortedBits=bits.to_bytes(len(listed) // 8 + 1, "little"),
            )
        if method == "get_valid_write_ids":
            request = args[0]
            if request.fullTableNames != ["db.t"]:
                raise T.NoSuchObjectException("no such table")
            return T.GetValidWriteIdsResponse(
                tblValidWriteIds=[
                    T.TableValidWriteIds(fullTableName="db.t", writeIdHighWaterMark=0, invalidWriteIds=[])
                ]
            )
        if method in ("heartbeat", "commit_txn", "abort_txn"):
            txn = args[0].txnid
            state = self.txns.get(txn)
            if state is None or (state == "c" and method != "commit_txn"):
                raise T.NoSuchTxnException(f"No such transaction txnid:{txn}")
            if state == "a" and method != "abort_txn":
                raise T.TxnAbortedException(f"Transaction txnid:{txn} already aborted")
            if method == "commit_txn":
                self.txns[txn] = "c"
            elif method == "abort_txn":
                self.txns[txn] = "a"
            return None
        if method == "get_open_txns_info":
            listed = sorted(t for t, s in self.txns.items() if s in "oa")
            return T.GetOpenTxnsInfoResponse(
                txn_high_water_mark=max(self.txns, default=0),
                open_txns=[
                    T.TxnInfo(id=t, state=T.TxnState.OPEN if self.txns[t] == "o" else T.TxnState.ABORTED)
                    for t in listed
                ],
            )
        raise AssertionError(f"unexpected call {method}")

    def call_optional(self, method, *args):
        if method == "get_latest_committed_compaction_info":
            return UNSUPPORTED
        return self.call(method, *args)

    def close(self):
        pass


_SIDE = SqlMetastore(
    f"sqlite:///{Path(tempfile.mkdtemp(prefix='hms-lease-model-')) / 'side.sqlite'}", warehouse="/nonexistent"
)


class HiveLeaseMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        for lease in _SIDE.list_leases():
            _SIDE.release_lease(lease.lease_id)
        self.hms = FakeHmsTxns()
        self.now = 1_000.0
        self.store = HiveMetastore(self.hms, lease_store=_SIDE, clock=lambda: self.now)
        self.live: dict[int, float] = {}  # lease ID -> expiry
        self.released: set[int] = set()
        self.expired: set[int] = set()
        self.reaped: set[int] = set()  # txns the HMS aborted (no heartbeat within hive.txn.timeout)

    @rule()
    def take(self):
        lease = self.store.take_lease("db.t", TTL)
        assert lease.lease_id not in self.live
        self.live[lease.lease_id] = self.now + TTL

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def renew(self, data):
        lease_id = data.draw(st.sampled_from(sorted(self.live)))
        if lease_id in self.reaped:
            with pytest.raises(LeaseLostError):
                self.store.renew_lease(lease_id, TTL)
        else:
            assert self.store.renew_lease(lease_id, TTL).expires == self.now + TTL
            self.live[lease_id] = self.now + TTL

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def release(self, data):
        lease_id = data.draw(st.sampled_from(sorted(self.live)))
        self.store.release_lease(lease_id)
        del self.live[lease_id]
        self.released.add(lease_id)

    @precondition(lambda self: self.released)
    @rule(data=st.data())
    def release_again_or_renew_released_raises(self, data):
        lease_id = data.draw(st.sampled_from(sorted(self.released)))
        with pytest.raises(NoSuchLeaseError):
            self.store.release_lease(lease_id)
        with pytest.raises(NoSuchLeaseError):
            self.store.renew_lease(lease_id, TTL)

    @rule(seconds=st.sampled_from([1.0, 50.0, 150.0]))
    def time_passes_and_housekeeping_runs(self, seconds):
        self.now += seconds
        self.store.housekeeping()
        for lease_id, expires in list(self.live.items()):
            if expires <= self.now:
                del self.live[lease_id]
                self.expired.add(lease_id)

    @precondition(lambda self: any(t not in self.reaped for t in self.live))
    @rule(data=st.data())
    def hms_reaps_a_silent_txn(self, data):
        lease_id = data.draw(st.sampled_from(sorted(t for t in self.live if t not in self.reaped)))
        self.hms.txns[lease_id] = "a"
        self.reaped.add(lease_id)

    @invariant()
    def side_store_holds_exactly_the_live_records(self):
        assert sorted(lease.lease_id for lease in _SIDE.list_leases()) == sorted(self.live)

    @invariant()
    def hms_txn_states_follow_the_leases(self):
        for lease_id in self.live:
            assert self.hms.txns[lease_id] == ("a" if lease_id in self.reaped else "o")
        for lease_id in self.released:
            assert self.hms.txns[lease_id] == ("a" if lease_id in self.reaped else "c")
        for lease_id in self.expired:
            assert self.hms.txns[lease_id] == "a"


HiveLeaseMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=15, deadline=None)
test_hive_lease_model = HiveLeaseMachine.TestCase
