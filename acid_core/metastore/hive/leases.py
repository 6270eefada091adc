"""Reader leases on a Hive Metastore: an open HMS transaction, plus acidflow's record of its snapshot.

A lease on an HMS is what a Hive reader holds while its query runs (Hive's ``DbTxnManager``)::

    take     open_txns                    the lease ID *is* this transaction's ID
             lock(SHARED_READ, TABLE, txn) Hive 2.x cleaners wait for such locks
             get_open_txns_* / write IDs  the snapshot, as the transaction sees it
             side store: READER_LEASES    (ID, table, ValidWriteIdList, ValidTxnList, owner, expiry)
    renew    heartbeat(txn) + new expiry  every < hive.txn.timeout (300 s by default)
    release  commit_txn (releases the lock) + delete the record
    expire   delete expired records + abort their transactions

So every cleaner respects it: Hive's own (a cleaner waits for transactions that started before
the compaction committed -- HIVE-24291 -- and, on 2.x, for locks taken before it), and acidflow's
(``find_ready_to_clean`` waits for the lowest open transaction and for those locks; ``list_leases``
keeps every directory the recorded snapshot reads). ``acidflow read --lease ID`` reads exactly the
recorded snapshot.

The side store is acidflow's own SQL store (``SqlMetastore``): ``ACIDFLOW_LEASE_STORE`` (a
SQLAlchemy URL; ``none`` switches it off) or, by default, the embedded SQLite file next to the
warehouse (``<warehouse>/.acidflow/metastore.sqlite``), opened on first use. Hosts that share leases
(an Airflow deployment) need one shared database there.

Heartbeats: the HMS aborts a transaction not heartbeated within ``hive.txn.timeout``. acidflow does
not run a background thread for a lease taken from the command line (the command exits): the holder
runs ``acidflow lease renew ID`` (``renew``) more often than the timeout. A lease whose transaction
timed out no longer holds Hive's cleaner back; acidflow's cleaner keeps honouring the record until it
expires, and ``renew`` says the transaction is lost (``LeaseLostError``).

Invariants: a lease's ID is its HMS transaction's ID; the record is written only after the
transaction, its lock and its snapshot exist (a failure in between aborts the transaction).
Not here: the Thrift calls themselves (``hive``), the lease table (``sql``).
Errors: ``NoSuchLeaseError``; ``LeaseLostError``; ``LockTimeoutError`` when the read lock waits
longer than ``lock_wait_seconds`` (an EXCLUSIVE lock, e.g. a DROP, holds the table);
``HiveMetastoreCapabilityError`` when no side store is configured (``ACIDFLOW_LEASE_STORE=none``).
"""

from __future__ import annotations

import logging
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Final, Protocol

from acid_core.errors import (
    HiveMetastoreCapabilityError,
    LeaseLostError,
    LockTimeoutError,
    MetastoreError,
    NoSuchLeaseError,
    NoSuchTxnError,
    TxnNotOpenError,
)
from acid_core.metastore.hive.values import (
    LOCK_ACQUIRED,
    LOCK_LEVEL_TABLE,
    LOCK_SHARED_READ,
    ThriftErrors,
    thrift_types,
)
from acid_core.metastore.port import Lease, Metastore, check_lease_ttl, split_table_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from acid_core.metastore.hive.thrift import HmsConnection
    from acid_core.metastore.sql.metastore import SqlMetastore

__all__ = ["DEFAULT_LOCK_WAIT_SECONDS", "HiveLeases", "LeaseHost"]

_LOG = logging.getLogger(__name__)


class LeaseHost(Metastore, Protocol):
    """What the lease calls need of the adapter they belong to (``HiveMetastore``).

    The port, and who and where to record on the transaction and lock; typed so, this module
    does not import the adapter (no cycle).
    """

    @property
    def description(self) -> str:
        """The metastore URIs."""
        ...

    @property
    def user(self) -> str:
        """The user recorded on transactions and locks."""
        ...

    @property
    def host(self) -> str:
        """The host name recorded on transactions and locks."""
        ...


DEFAULT_LOCK_WAIT_SECONDS: Final = 30.0
_OP_SELECT: Final = 1  # DataOperationType.SELECT
_LOCK_WAITING: Final = 2


class HiveLeases:
    """The lease calls of ``HiveMetastore`` (see the module docstring).

    Args:
        metastore: the adapter (transactions, snapshots, heartbeats).
        connection: its Thrift connection (for the read lock).
        side_store: acidflow's SQL store for the records, a function opening it on first use, or None.
        clock: epoch seconds.
        sleep: the pause while a read lock waits.
        lock_wait_seconds: how long ``take`` waits for its read lock.
    """

    def __init__(
        self,
        metastore: LeaseHost,
        connection: HmsConnection,
        side_store: SqlMetastore | Callable[[], SqlMetastore] | None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        lock_wait_seconds: float = DEFAULT_LOCK_WAIT_SECONDS,
    ) -> None:
        self._metastore, self._hms = metastore, connection
        self._opener = side_store if callable(side_store) else None
        self._store: SqlMetastore | None = None if callable(side_store) else side_store
        self._clock, self._sleep, self._lock_wait = clock, sleep, lock_wait_seconds

    def store(self) -> SqlMetastore | None:
        """The side store, opened on first use; None when none is configured."""
        if self._store is None and self._opener is not None:
            self._store = self._opener()
        return self._store

    def _required(self, operation: str) -> SqlMetastore:
        store = self.store()
        if store is None:
            raise HiveMetastoreCapabilityError(
                self._metastore.description,
                operation,
                "reader leases need acidflow's side store and it is switched off (ACIDFLOW_LEASE_STORE=none)",
                "set ACIDFLOW_LEASE_STORE to a SQLAlchemy URL of acidflow's own store, or unset it to use "
                "<warehouse>/.acidflow/metastore.sqlite",
            )
        return store

    def close(self) -> None:
        """Close the side store if it was opened."""
        if self._store is not None:
            self._store.close()

    def take(self, table: str, ttl_seconds: float, owner: str | None, now: float | None) -> Lease:
        """See ``Metastore.take_lease``: open a txn, lock the table for read, record its snapshot."""
        check_lease_ttl(ttl_seconds)
        store = self._required("take a reader lease")
        full = self._metastore.get_table(table).full_name
        txn_id = self._metastore.open_txn()
        try:
            self._lock_for_read(txn_id, full)
            # The snapshot the transaction itself sees (Hive's createValidReadTxnList with currentTxn).
            txns = self._metastore.get_valid_txns(current_txn_id=txn_id)
            write_ids = self._metastore.get_valid_write_ids(full, txns)
            created = self._clock() if now is None else now
            lease = Lease(
                lease_id=txn_id,
                table=full,
                write_ids=write_ids,
                owner=owner if owner is not None else f"{self._metastore.user}@{self._metastore.host}",
                created=created,
                expires=created + ttl_seconds,
                txns=txns,
            )
            return store.put_lease(lease)
        except BaseException:
            with suppress(Exception):  # best effort: the HMS times the transaction out otherwise
                self._metastore.abort_txn(txn_id)
            raise

    def _lock_for_read(self, txn_id: int, table: str) -> None:
        # What a Hive 2.x query's DbTxnManager takes for a SELECT: SHARED_READ on the table, in its txn.
        t = thrift_types()
        database, name = split_table_name(table)
        component = t.LockComponent(
            type=LOCK_SHARED_READ,
            level=LOCK_LEVEL_TABLE,
            dbname=database,
            tablename=name,
            operationType=_OP_SELECT,
            isTransactional=True,
        )
        request = t.LockRequest(
            component=[component],
            txnid=txn_id,
            user=self._metastore.user,
            hostname=self._metastore.host,
            agentInfo="acidflow lease",
        )
        errors = ThriftErrors(self._metastore.description, "lock", table, txn_id, "lock for read in")
        with errors:
            response = self._hms.call("lock", request)
        deadline = self._clock() + self._lock_wait
        pause = 0.05
        while int(response.state) != LOCK_ACQUIRED:
            if int(response.state) != _LOCK_WAITING or self._clock() >= deadline:
                raise LockTimeoutError(
                    f"The read lock of lease transaction {txn_id} on {table!r} was not granted within "
                    f"{self._lock_wait:g} s (state {response.state}); expected SHARED_READ to be granted; "
                    "hint: an EXCLUSIVE lock (DROP, INSERT OVERWRITE) holds the table: see SHOW LOCKS"
                )
            self._sleep(pause)
            pause = min(pause * 2, 1.0)
            with errors:
                response = self._hms.call("check_lock", t.CheckLockRequest(lockid=response.lockid))

    def get(self, lease_id: int) -> Lease:
        """See ``Metastore.get_lease``."""
        store = self.store()
        if store is None:
            raise NoSuchLeaseError(lease_id)
        return store.get_lease(lease_id)

    def renew(self, lease_id: int, ttl_seconds: float, now: float | None) -> Lease:
        """See ``Metastore.renew_lease``: heartbeat the transaction, then move the expiry."""
        store = self._required("renew a reader lease")
        # NoSuchLeaseError first: an unknown or expired lease is not a lost one (and is not revived).
        # One clock, the adapter's, decides expiry for the HMS txn and the side store's record.
        now_s = self._clock() if now is None else now
        if store.get_lease(lease_id).expires <= now_s:
            raise NoSuchLeaseError(lease_id)
        try:
            self._metastore.heartbeat(lease_id)
        except TxnNotOpenError as e:
            raise LeaseLostError(lease_id, "aborted") from e
        except NoSuchTxnError as e:
            raise LeaseLostError(lease_id, "committed or unknown to the HMS") from e
        return store.renew_lease(lease_id, ttl_seconds, now_s)

    def release(self, lease_id: int) -> None:
        """See ``Metastore.release_lease``: end the transaction (its lock goes with it), drop the record."""
        store = self._required("release a reader lease")
        store.get_lease(lease_id)
        with suppress(NoSuchTxnError, TxnNotOpenError):  # already ended: only the record is left
            self._metastore.commit_txn(lease_id)
        store.release_lease(lease_id)

    def list_all(self, table: str | None) -> list[Lease]:
        """See ``Metastore.list_leases``; none without a side store."""
        store = self.store()
        return [] if store is None else store.list_leases(table)

    def expire(self, now: float | None) -> list[int]:
        """See ``Metastore.expire_leases``: drop the expired records, abort their transactions."""
        store = self.store()
        if store is None:
            return []
        expired = store.expire_leases(self._clock() if now is None else now)
        for txn_id in expired:
            try:
                self._metastore.abort_txn(txn_id)
            except (NoSuchTxnError, TxnNotOpenError):
                continue  # it ended already
            except MetastoreError as e:  # the HMS times it out anyway (no more heartbeats)
                _LOG.warning("expired lease %d: aborting its transaction failed: %s", txn_id, e)
        return expired
