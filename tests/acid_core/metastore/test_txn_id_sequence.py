"""PostgreSQL transaction IDs from a sequence (Hive 4's openTxns): the snapshot guarantees.

Opens share-lock NEXT_TXN_ID and draw from ``TXN_ID_SEQ``, so an open can be *in flight*: its ID
handed out, its TXNS row not yet visible. Expected outcomes:
- a snapshot taken meanwhile lists the in-flight ID as open (a gap at or above the settled mark),
  even when a higher txn has committed; once the open commits the ID stays open (it is open);
- a writer's commit (update/delete footprint) waits for in-flight opens, so its commit ID covers
  them and the write-write conflict check sees them (Hive 4's exclusive ``acquireTxnLock``);
- a rolled-back open leaves a gap that stays open until housekeeping settles it, then is gone.
"""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from acid_core.errors import CommitConflictError
from acid_core.metastore import Column, SqlMetastore, TableDefinition, WriteOperation

pytestmark = [pytest.mark.backend("postgres"), pytest.mark.integration("postgres")]


@pytest.fixture
def store(postgres_schema_url):
    with SqlMetastore(postgres_schema_url) as store:
        store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))
        yield store


class _InFlightOpen:
    """An open_txn stopped after drawing its ID: share lock held, TXNS row not committed."""

    def __init__(self, url: str) -> None:
        self.engine = sa.create_engine(url, isolation_level="READ COMMITTED")
        self.connection = self.engine.connect()
        self.transaction = self.connection.begin()
        self.connection.execute(sa.text('SELECT "NTXN_NEXT" FROM "NEXT_TXN_ID" FOR SHARE'))
        self.txn_id = int(self.connection.execute(sa.text("SELECT nextval('\"TXN_ID_SEQ\"')")).scalar_one())

    def finish(self, *, commit: bool) -> None:
        if commit:
            self.connection.execute(
                sa.text(
                    'INSERT INTO "TXNS" ("TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", '
                    "\"TXN_USER\", \"TXN_HOST\", \"TXN_TYPE\") VALUES (:t, 'o', 0, 0, 'u', 'h', 0)"
                ),
                {"t": self.txn_id},
            )
            self.transaction.commit()
        else:
            self.transaction.rollback()
        self.connection.close()
        self.engine.dispose()


def test_in_flight_open_is_open_in_a_snapshot_taken_after_a_higher_txn_committed(store, postgres_schema_url):
    """The lower ID has no visible row yet; the higher one committed: the lower is listed open."""
    in_flight = _InFlightOpen(postgres_schema_url)
    try:
        later = store.open_txn()
        store.commit_txn(later)
        snapshot = store.get_valid_txns()
        assert later > in_flight.txn_id
        assert snapshot.high_watermark >= later
        assert in_flight.txn_id in snapshot.open_ids
        assert not snapshot.is_txn_valid(in_flight.txn_id)
        assert snapshot.is_txn_valid(later)
        assert store.min_open_txn_id() == in_flight.txn_id
    finally:
        in_flight.finish(commit=True)
    assert in_flight.txn_id in store.get_valid_txns().open_ids


def _wait_for_lock_wait(url: str) -> None:
    """Poll until some session of this database waits on a lock (the writer's commit)."""
    engine = sa.create_engine(url)
    try:
        for _ in range(600):
            with engine.connect() as connection:
                waiting = connection.execute(
                    sa.text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    )
                ).scalar_one()
            if waiting:
                return
            time.sleep(0.05)
        pytest.fail("the writer's commit never waited for the in-flight open")
    finally:
        engine.dispose()


def test_writer_commit_waits_for_in_flight_opens_and_its_commit_id_covers_them(store, postgres_schema_url):
    """Hive 4's mutex: the update's commit ID is at least the in-flight txn's ID, so it conflicts."""
    writer = store.open_txn()
    store.allocate_write_id(writer, "t")
    store.add_write_component(writer, "t", None, WriteOperation.UPDATE)
    in_flight = _InFlightOpen(postgres_schema_url)
    errors: list[BaseException] = []

    def commit() -> None:
        try:
            store.commit_txn(writer)
        except BaseException as e:  # reported to the test thread
            errors.append(e)

    thread = threading.Thread(target=commit)
    thread.start()
    _wait_for_lock_wait(postgres_schema_url)
    in_flight.finish(commit=True)
    thread.join(timeout=60)
    assert not errors
    engine = sa.create_engine(postgres_schema_url)
    try:
        with engine.connect() as connection:
            commit_id = connection.execute(sa.text('SELECT "WS_COMMIT_ID" FROM "WRITE_SET"')).scalar_one()
    finally:
        engine.dispose()
    assert commit_id >= in_flight.txn_id
    # The in-flight txn updates the same table: it must lose (committed.WS_COMMIT_ID >= its TXN_ID).
    store.allocate_write_id(in_flight.txn_id, "t")
    store.add_write_component(in_flight.txn_id, "t", None, WriteOperation.UPDATE)
    with pytest.raises(CommitConflictError):
        store.commit_txn(in_flight.txn_id)


def test_rolled_back_open_stays_open_until_housekeeping_settles_it(store, postgres_schema_url):
    """A gap is conservative (open) until the exclusive lock proves nothing is in flight."""
    in_flight = _InFlightOpen(postgres_schema_url)
    in_flight.finish(commit=False)
    assert in_flight.txn_id in store.get_valid_txns().open_ids
    store.housekeeping()
    snapshot = store.get_valid_txns()
    assert in_flight.txn_id not in snapshot.open_ids
    assert snapshot.is_txn_valid(in_flight.txn_id)
