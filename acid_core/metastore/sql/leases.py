"""``SqlMetastore``'s reader leases and backlog samples (acidflow's own tables).

A lease stores a reader's snapshot (write-ID list and txn list) with a TTL, so the cleaner keeps
what the reader may still open. Backlog samples are the sensor's measurements for the backlog page.

Errors: ``NoSuchLeaseError``; bad TTLs ``InvalidMetastoreRequestError``.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from acid_core.errors import (
    NoSuchLeaseError,
)
from acid_core.metastore.sql.models import (
    BacklogSampleRow,
    ReaderLease,
)

if TYPE_CHECKING:
    from collections.abc import Sequence


from acid_core.metastore.port import (
    BacklogSample,
    Lease,
    check_lease_ttl,
    split_table_name,
)
from acid_core.metastore.sql.base import (
    SqlMetastoreBase,
    _backlog_sample,
    _check_id,
    _current_user,
    _lease,
    _ms,
)


class SqlLeasePart(SqlMetastoreBase):
    """``SqlMetastore``'s reader leases and backlog samples (acidflow's own tables).."""

    def take_lease(
        self, table: str, ttl_seconds: float, owner: str | None = None, now: float | None = None
    ) -> Lease:
        """See ``Metastore.take_lease``."""
        check_lease_ttl(ttl_seconds)
        database, name = split_table_name(table)
        now_ms = self._now_ms(now)
        with self._transaction("take_lease") as s:
            self._table_row(s, database, name)
            # One database transaction: the write-ID list is exactly the one this txn list implies.
            txns = self._valid_txns(s, None)
            snapshot = self._valid_write_ids(s, database, name, txns)
            row = ReaderLease(
                database=database,
                table=name,
                write_id_list=snapshot.to_string(),
                txn_list=txns.to_string(),
                owner=owner if owner is not None else f"{_current_user()}@{socket.gethostname()}",
                created=now_ms,
                expires=now_ms + _ms(ttl_seconds),
            )
            s.add(row)
            s.flush()
            return _lease(row)

    def renew_lease(self, lease_id: int, ttl_seconds: float, now: float | None = None) -> Lease:
        """See ``Metastore.renew_lease``: the same snapshot, expiring ``ttl_seconds`` from now."""
        check_lease_ttl(ttl_seconds)
        _check_id("lease ID", lease_id)
        now_ms = self._now_ms(now)
        # One database transaction with the row locked: an expiry (``expire_leases``, the cleaner)
        # deleting the lease between the check and the write must not see it written back.
        with self._transaction("renew_lease") as s:
            row = s.get(ReaderLease, lease_id, with_for_update=True)
            if row is None or row.expires <= now_ms:  # the cleaner may already have deleted what it read
                raise NoSuchLeaseError(lease_id)
            row.expires = now_ms + _ms(ttl_seconds)
            s.flush()
            return _lease(row)

    def put_lease(self, lease: Lease) -> Lease:
        """Insert or replace a lease record as given (its ID included), without checking the catalog.

        For a Hive Metastore's side store (``hive.leases``): there the lease ID is the HMS
        transaction that holds the snapshot, and the table lives in the HMS, not here.
        """
        _check_id("lease ID", lease.lease_id)
        database, name = split_table_name(lease.table)
        with self._transaction("put_lease") as s:
            row = ReaderLease(
                id=lease.lease_id,
                database=database,
                table=name,
                write_id_list=lease.write_ids.to_string(),
                txn_list=None if lease.txns is None else lease.txns.to_string(),
                owner=lease.owner,
                created=_ms(lease.created),
                expires=_ms(lease.expires),
            )
            return _lease(s.merge(row))

    def get_lease(self, lease_id: int) -> Lease:
        """See ``Metastore.get_lease``."""
        _check_id("lease ID", lease_id)
        with self._transaction("get_lease") as s:
            row = s.get(ReaderLease, lease_id)
            if row is None:
                raise NoSuchLeaseError(lease_id)
            return _lease(row)

    def release_lease(self, lease_id: int) -> None:
        """See ``Metastore.release_lease``."""
        _check_id("lease ID", lease_id)
        with self._transaction("release_lease") as s:
            result = s.execute(delete(ReaderLease).where(ReaderLease.id == lease_id))
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise NoSuchLeaseError(lease_id)

    def list_leases(self, table: str | None = None) -> list[Lease]:
        """See ``Metastore.list_leases``."""
        query = select(ReaderLease).order_by(ReaderLease.id)
        if table is not None:
            database, name = split_table_name(table)
            query = query.where(ReaderLease.database == database, ReaderLease.table == name)
        with self._transaction("list_leases") as s:
            return [_lease(r) for r in s.scalars(query)]

    def expire_leases(self, now: float | None = None) -> list[int]:
        """See ``Metastore.expire_leases``."""
        now_ms = self._now_ms(now)
        with self._transaction("expire_leases") as s:
            ids = list(
                s.scalars(
                    # Locked: a renewal that moved the expiry first is seen (re-checked) and kept;
                    # one that comes after finds the row gone (``renew_lease`` locks it too).
                    select(ReaderLease.id)
                    .where(ReaderLease.expires <= now_ms)
                    .order_by(ReaderLease.id)
                    .with_for_update()
                )
            )
            if ids:
                s.execute(delete(ReaderLease).where(ReaderLease.id.in_(ids), ReaderLease.expires <= now_ms))
            return ids

    def record_backlog_samples(
        self, samples: Sequence[BacklogSample], prune_before: float | None = None
    ) -> None:
        """See ``Metastore.record_backlog_samples``.

        One database transaction: the pruning and the new rows commit together (a crash keeps
        neither or both; recording again later only adds a point to the history).
        """
        rows = []
        for sample in samples:
            database, name = split_table_name(sample.table)
            rows.append(
                BacklogSampleRow(
                    database=database,
                    table=name,
                    partition=sample.partition,
                    sampled_at=_ms(sample.sampled_at),
                    deltas=sample.deltas,
                    delete_deltas=sample.delete_deltas,
                    delta_bytes=sample.delta_bytes,
                    delete_delta_bytes=sample.delete_delta_bytes,
                    aborted=sample.aborted,
                    oldest_delta_time=None
                    if sample.oldest_delta_time is None
                    else _ms(sample.oldest_delta_time),
                )
            )
        with self._transaction("record_backlog_samples") as s:
            if prune_before is not None:
                s.execute(delete(BacklogSampleRow).where(BacklogSampleRow.sampled_at < _ms(prune_before)))
            s.add_all(rows)

    def list_backlog_samples(self, since: float, table: str | None = None) -> list[BacklogSample]:
        """See ``Metastore.list_backlog_samples``."""
        query = select(BacklogSampleRow).where(BacklogSampleRow.sampled_at >= _ms(since))
        if table is not None:
            database, name = split_table_name(table)
            query = query.where(BacklogSampleRow.database == database, BacklogSampleRow.table == name)
        query = query.order_by(
            BacklogSampleRow.database,
            BacklogSampleRow.table,
            BacklogSampleRow.partition,
            BacklogSampleRow.sampled_at,
            BacklogSampleRow.id,
        )
        with self._transaction("list_backlog_samples") as s:
            return [_backlog_sample(r) for r in s.scalars(query)]
