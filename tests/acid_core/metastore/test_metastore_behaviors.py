"""The Metastore contract, run on the in-memory fake, a SQLite file and a real PostgreSQL.

Expected values are written from Hive's rules, not from this code's output:
- ValidTxnList: TxnCommonUtils.createValidReadTxnList (hwm = min(current, max txn id); only
  txns below the current one are exceptions; read-only txns left out; minOpen = lowest open one).
- ValidWriteIdList: GetValidWriteIdsForTableFunction (hwm = max write ID allocated by a txn <=
  the txn hwm; write IDs of open/aborted txns or txns above the hwm are exceptions; with no
  committed write at all, only the lowest invalid write ID is reported and becomes the hwm).
- Write-write conflicts: TxnHandler.checkForWriteConflict (update/delete vs update/delete on the
  same table and partition, the other committed at or after our start; D+D conflicts too).
- Compaction queue: CompactionTxnHandler (states i/w/r/s/f/a/c/x) and ReadyToCleanHandler
  (CQ_NEXT_TXN_ID <= min open txn, retention, lowest highest-write-ID per partition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa

from acid_core.errors import (
    CommitConflictError,
    CompactionStateError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    InvalidMetastoreRequestError,
    InvalidPartitionError,
    InvalidTableDefinitionError,
    InvalidTableNameError,
    NoSuchCompactionError,
    NoSuchDatabaseError,
    NoSuchLeaseError,
    NoSuchPartitionError,
    NoSuchTableError,
    NoSuchTxnError,
    PartitionAlreadyExistsError,
    TableAlreadyExistsError,
    TxnNotOpenError,
)
from acid_core.metastore import (
    Column,
    CompactionState,
    CompactionType,
    InMemoryMetastore,
    SqlMetastore,
    TableDefinition,
    TableType,
    TxnState,
    TxnType,
    WriteOperation,
)
from acid_core.metastore.sql.models import Base, CompletedTxnComponent, NextCompactionQueueId, NextTxnId
from acid_core.writeids import LONG_MAX

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path


class FakeClock:
    """An injectable clock: epoch seconds that only move when the test says so."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _memory(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> SqlMetastore:
    return InMemoryMetastore(warehouse="/warehouse", clock=clock)


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> SqlMetastore:
    return SqlMetastore(f"sqlite:///{tmp_path}/metastore.sqlite", warehouse="/warehouse", clock=clock)


_MIGRATED: set[str] = set()


def _empty_metastore_schema(url: str) -> None:
    """Empty every metastore table and re-seed the counters as migration 0001 does (IDs of other rows go on)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            # DELETE, not TRUNCATE: on a handful of rows it is ~100x faster (no new files to fsync).
            for table in reversed(Base.metadata.sorted_tables):
                connection.execute(table.delete())
            connection.execute(sa.insert(NextTxnId).values(next_txn_id=1))
            connection.execute(sa.insert(NextCompactionQueueId).values(next_id=1))
            if connection.dialect.name == "postgresql":
                connection.execute(sa.text('ALTER SEQUENCE "TXN_ID_SEQ" RESTART WITH 1'))
    finally:
        engine.dispose()


def _postgres(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> SqlMetastore:
    # One migrated schema for the suite, emptied per test: a fresh store without re-running the
    # DDL each time (migrations themselves are tested in test_migrations.py).
    url = request.getfixturevalue("postgres_session_schema_url")
    if url not in _MIGRATED:
        SqlMetastore(url).close()
        _MIGRATED.add(url)
    _empty_metastore_schema(url)
    return SqlMetastore(url, warehouse="/warehouse", clock=clock)


_METASTORE_FACTORIES: dict[str, Callable[[pytest.FixtureRequest, Path, FakeClock], SqlMetastore]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "postgres": _postgres,
}
_PARAMS = [
    pytest.param("memory", marks=pytest.mark.backend("memory")),
    pytest.param("sqlite", marks=pytest.mark.backend("sqlite")),
    pytest.param("postgres", marks=[pytest.mark.backend("postgres"), pytest.mark.integration("postgres")]),
]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=_PARAMS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[SqlMetastore]:
    metastore = _METASTORE_FACTORIES[request.param](request, tmp_path, clock)
    yield metastore
    metastore.close()


def _acid(name: str = "t", **kwargs) -> TableDefinition:
    return TableDefinition(
        name,
        (Column("id", "int"), Column("name", "string")),
        properties={"transactional": "true"},
        **kwargs,
    )


@pytest.fixture
def table(store: SqlMetastore) -> str:
    store.create_table(_acid("t"))
    return "default.t"


def _write(store: SqlMetastore, table: str = "t") -> tuple[int, int]:
    txn = store.open_txn("writer", "host")
    return txn, store.allocate_write_id(txn, table)


# ----------------------------------------------------------------------------------------------
# Catalog
# ----------------------------------------------------------------------------------------------


class TestCatalog:
    def test_create_table_default_database_locations_follow_hive(self, store):
        created = store.create_table(_acid("Employee"))
        store.create_database("sales")
        orders = store.create_table(_acid("sales.orders"))

        assert created.full_name == "default.employee"
        assert created.location == "/warehouse/employee"
        assert store.get_database("sales").location == "/warehouse/sales.db"
        assert orders.location == "/warehouse/sales.db/orders"
        assert store.get_table("EMPLOYEE") == created
        assert store.list_tables() == ["employee"]
        assert store.list_tables("sales") == ["orders"]
        assert store.list_databases() == ["default", "sales"]

    def test_set_location_changes_only_the_named_table_or_partition(self, store):
        # Hive's ALTER TABLE [PARTITION] SET LOCATION: the table's partitions keep their locations.
        store.create_table(_acid("p", partition_keys=(Column("ds", "string"),)))
        store.add_partition("p", {"ds": "1"})
        store.set_location("p", None, "/elsewhere/p")
        assert store.get_table("p").location == "/elsewhere/p"
        assert [q.location for q in store.list_partitions("p")] == ["/warehouse/p/ds=1"]
        store.set_location("p", "ds=1", "/other/ds1")
        assert [q.location for q in store.list_partitions("p")] == ["/other/ds1"]
        with pytest.raises(NoSuchPartitionError, match=r"ds=2"):
            store.set_location("p", "ds=2", "/x")
        with pytest.raises(NoSuchTableError):
            store.set_location("nope", None, "/x")

    def test_alter_table_properties_unsets_then_sets_and_follows_transactional(self, store):
        # Hive's ALTER TABLE SET/UNSET TBLPROPERTIES: other keys stay; the type follows 'transactional'.
        store.create_table(
            TableDefinition(
                "t", (Column("id", "int"),), properties={"keep": "1", "NO_AUTO_COMPACTION": "true"}
            )
        )
        assert store.get_table("t").table_type is TableType.PLAIN

        altered = store.alter_table_properties(
            "t", {"no_auto_compaction": "false", "transactional": "true"}, ["NO_AUTO_COMPACTION"]
        )

        expected = {"keep": "1", "no_auto_compaction": "false", "transactional": "true"}
        assert dict(altered.properties) == expected
        assert dict(store.get_table("t").properties) == expected
        assert store.get_table("t").table_type is TableType.ACID
        store.alter_table_properties("t", {}, ["no_auto_compaction", "not-there"])
        assert dict(store.get_table("t").properties) == {"keep": "1", "transactional": "true"}
        with pytest.raises(NoSuchTableError):
            store.alter_table_properties("nope", {"a": "b"})

    def test_create_table_round_trips_schema_bucketing_and_properties(self, store):
        definition = TableDefinition(
            "events",
            (Column("id", "int"), Column("payload", "string")),
            partition_keys=(Column("ds", "string"),),
            bucket_columns=("id",),
            num_buckets=4,
            properties={"transactional": "true", "orc.compress": "ZLIB"},
            location="/data/events",
            owner="etl",
        )
        table = store.create_table(definition)
        loaded = store.get_table("events")

        assert loaded == table
        assert loaded.columns == (Column("id", "int"), Column("payload", "string"))
        assert loaded.partition_keys == (Column("ds", "string"),)
        assert loaded.bucket_columns == ("id",)
        assert loaded.num_buckets == 4
        assert loaded.properties == {"transactional": "true", "orc.compress": "ZLIB"}
        assert loaded.location == "/data/events"
        assert loaded.owner == "etl"

    @pytest.mark.parametrize(
        ("properties", "expected"),
        [
            ({"transactional": "true"}, TableType.ACID),
            ({"transactional": "TRUE"}, TableType.ACID),
            ({"transactional": "true", "transactional_properties": "insert_only"}, TableType.INSERT_ONLY),
            ({"transactional": "true", "transactional_properties": "default"}, TableType.ACID),
            ({"transactional": "false"}, TableType.PLAIN),
            ({}, TableType.PLAIN),
        ],
        ids=["acid", "acid-upper", "insert-only", "default-props", "false", "none"],
    )
    def test_table_type_follows_hive_tblproperties(self, store, properties, expected):
        table = store.create_table(TableDefinition("t", (Column("a", "int"),), properties=properties))
        assert table.table_type is expected

    def test_duplicate_and_missing_tables_raise(self, store, table):
        with pytest.raises(TableAlreadyExistsError, match=r"'default\.t' already exists"):
            store.create_table(_acid("T"))
        with pytest.raises(NoSuchTableError, match=r"'default\.nope'"):
            store.get_table("nope")
        with pytest.raises(NoSuchTableError):
            store.drop_table("nope")
        with pytest.raises(NoSuchDatabaseError, match=r"'nodb'"):
            store.create_table(_acid("nodb.t"))

    def test_drop_table_forgets_it_and_restarts_write_ids(self, store, table):
        txn, write_id = _write(store)
        store.commit_txn(txn)
        store.drop_table("t")
        assert store.list_tables() == []
        store.create_table(_acid("t"))
        # Hive's cleanupRecords deletes NEXT_WRITE_ID: a re-created table starts again at 1.
        assert _write(store)[1] == 1 == write_id

    def test_database_lifecycle(self, store):
        store.create_database("d", description="demo")
        with pytest.raises(DatabaseAlreadyExistsError):
            store.create_database("D")
        store.create_table(_acid("d.x"))
        with pytest.raises(DatabaseNotEmptyError, match=r"\['x'\]"):
            store.drop_database("d")
        store.drop_database("d", cascade=True)
        assert store.list_databases() == ["default"]
        with pytest.raises(NoSuchDatabaseError):
            store.get_database("d")

    @pytest.mark.parametrize(
        ("definition", "match"),
        [
            (TableDefinition("t", ()), "no columns"),
            (TableDefinition("t", (Column("a", "int"), Column("A", "int"))), "declared twice"),
            (
                TableDefinition("t", (Column("a", "int"),), partition_keys=(Column("a", "string"),)),
                "declared twice",
            ),
            (
                TableDefinition("t", (Column("a", "int"),), bucket_columns=("b",), num_buckets=2),
                "not a column",
            ),
            (
                TableDefinition("t", (Column("a", "int"),), bucket_columns=("a",), num_buckets=0),
                "num_buckets 0",
            ),
        ],
        ids=["no-columns", "duplicate", "key-clashes", "bucket-unknown", "zero-buckets"],
    )
    def test_invalid_definition_raises(self, store, definition, match):
        with pytest.raises(InvalidTableDefinitionError, match=match):
            store.create_table(definition)

    @pytest.mark.parametrize("name", ["a.b.c", "", ".t", "db."])
    def test_invalid_table_name_raises(self, store, name):
        with pytest.raises(InvalidTableNameError):
            store.get_table(name)

    def test_partitions_are_named_and_escaped_as_hive(self, store):
        store.create_table(
            TableDefinition(
                "p",
                (Column("id", "int"),),
                partition_keys=(Column("ds", "string"), Column("hr", "string")),
                properties={"transactional": "true"},
            )
        )
        added = store.add_partition("p", {"hr": "12:00", "ds": "2024-01-01"})
        store.add_partition("p", {"ds": "2024-01-02", "hr": None})

        # FileUtils.escapePathName escapes ':' as %3A; null becomes __HIVE_DEFAULT_PARTITION__.
        assert added.name == "ds=2024-01-01/hr=12%3A00"
        assert added.values == ("2024-01-01", "12:00")
        assert added.location == "/warehouse/p/ds=2024-01-01/hr=12%3A00"
        assert [p.name for p in store.list_partitions("p")] == [
            "ds=2024-01-01/hr=12%3A00",
            "ds=2024-01-02/hr=__HIVE_DEFAULT_PARTITION__",
        ]
        with pytest.raises(PartitionAlreadyExistsError):
            store.add_partition("p", {"ds": "2024-01-01", "hr": "12:00"})
        with pytest.raises(InvalidPartitionError, match=r"exactly the partition keys \['ds', 'hr'\]"):
            store.add_partition("p", {"ds": "2024-01-01"})
        store.drop_partition("p", {"ds": "2024-01-01", "hr": "12:00"})
        with pytest.raises(NoSuchPartitionError):
            store.drop_partition("p", {"ds": "2024-01-01", "hr": "12:00"})
        assert len(store.list_partitions("p")) == 1


# ----------------------------------------------------------------------------------------------
# Transactions and snapshots
# ----------------------------------------------------------------------------------------------


class TestTransactions:
    def test_open_txn_ids_start_at_one_and_increase(self, store, clock):
        ids = [store.open_txn("alice", "h1", now=clock.now + i) for i in range(3)]
        assert ids == [1, 2, 3]
        info = store.get_txn(2)
        assert (info.state, info.txn_type, info.user, info.host) == (
            TxnState.OPEN,
            TxnType.DEFAULT,
            "alice",
            "h1",
        )
        assert info.started == info.last_heartbeat == clock.now + 1
        with pytest.raises(NoSuchTxnError, match="No such transaction 99"):
            store.get_txn(99)

    def test_valid_txns_without_current_lists_open_and_aborted(self, store):
        t1, t2, t3, _t4 = (store.open_txn() for _ in range(4))
        store.abort_txn(t2)
        store.commit_txn(t3)
        snapshot = store.get_valid_txns()
        # hwm = max txn id = 4; exceptions: open 1, 4 and aborted 2; minOpen = 1.
        assert snapshot.to_string() == "4:1:1,4:2"
        assert snapshot.is_txn_valid(t3)
        assert not snapshot.is_txn_valid(t1)
        assert snapshot.is_txn_aborted(t2)

    def test_valid_txns_of_current_txn_stop_at_itself(self, store):
        t1, _t2, t3, t4, t5 = (store.open_txn() for _ in range(5))
        store.commit_txn(t1)
        store.abort_txn(t3)
        snapshot = store.get_valid_txns(t4)
        # hwm = min(current 4, max 5) = 4; exceptions below 4 only: open 2, aborted 3.
        assert snapshot.to_string() == "4:2:2:3"
        assert snapshot.is_txn_valid(t4), "a transaction sees its own writes"
        assert not snapshot.is_txn_valid(t5)

    def test_read_only_txns_are_left_out_of_snapshots(self, store):
        read_only = store.open_txn(txn_type=TxnType.READ_ONLY)
        writer = store.open_txn()
        assert store.get_valid_txns().to_string() == "2:2:2:"
        assert store.get_txn(read_only).txn_type is TxnType.READ_ONLY
        assert writer == 2

    def test_empty_store_snapshot(self, store, table):
        assert store.get_valid_txns().to_string() == f"0:{LONG_MAX}::"
        assert (
            store.get_valid_write_ids("t", store.get_valid_txns()).to_string() == f"default.t:0:{LONG_MAX}::"
        )

    def test_min_open_txn_id_is_lowest_open_or_next(self, store):
        assert store.min_open_txn_id() == 1
        t1, t2, t3 = (store.open_txn() for _ in range(3))
        store.commit_txn(t1)
        assert store.min_open_txn_id() == t2
        store.abort_txn(t2)
        store.commit_txn(t3)
        assert store.min_open_txn_id() == 4

    def test_commit_and_abort_are_idempotent_but_not_interchangeable(self, store):
        committed, aborted = store.open_txn(), store.open_txn()
        store.commit_txn(committed)
        store.commit_txn(committed)
        store.abort_txn(aborted)
        store.abort_txn(aborted)
        with pytest.raises(TxnNotOpenError, match="Cannot abort transaction 1: it is committed"):
            store.abort_txn(committed)
        with pytest.raises(TxnNotOpenError, match="Cannot commit transaction 2: it is aborted"):
            store.commit_txn(aborted)
        with pytest.raises(NoSuchTxnError):
            store.commit_txn(42)
        with pytest.raises(InvalidMetastoreRequestError, match="Invalid transaction ID 0"):
            store.commit_txn(0)

    def test_show_transactions_lists_open_and_aborted(self, store):
        t1, t2, t3 = (store.open_txn() for _ in range(3))
        store.commit_txn(t1)
        store.abort_txn(t3)
        assert [(t.txn_id, t.state) for t in store.show_transactions()] == [
            (t2, TxnState.OPEN),
            (t3, TxnState.ABORTED),
        ]


class TestWriteIds:
    def test_write_ids_are_per_table_and_stable_within_a_txn(self, store, table):
        store.create_table(_acid("u"))
        t1, t2 = store.open_txn(), store.open_txn()
        assert store.allocate_write_id(t1, "t") == 1
        assert store.allocate_write_id(t2, "t") == 2
        assert store.allocate_write_id(t2, "u") == 1
        assert store.allocate_write_id(t1, "default.t") == 1, "Hive: the same txn gets the same write ID"
        assert store.add_write_component(t1, "t", None, WriteOperation.INSERT) == 1

    def test_allocate_write_id_rejects_closed_and_unknown(self, store, table):
        txn = store.open_txn()
        store.commit_txn(txn)
        with pytest.raises(TxnNotOpenError, match="it is committed"):
            store.allocate_write_id(txn, "t")
        with pytest.raises(NoSuchTxnError):
            store.allocate_write_id(77, "t")
        with pytest.raises(NoSuchTableError):
            store.allocate_write_id(store.open_txn(), "missing")

    def test_reader_snapshot_marks_open_and_aborted_write_ids(self, store, table):
        t1, w1 = _write(store)
        t2, w2 = _write(store)
        _t3, w3 = _write(store)
        t4, w4 = _write(store)
        store.commit_txn(t1)
        store.abort_txn(t2)
        store.commit_txn(t4)
        write_ids = store.get_valid_write_ids("t", store.get_valid_txns())
        # hwm = 4; write ID 2 aborted, 3 open; minOpen = 3.
        assert write_ids.to_string() == "default.t:4:3:3:2"
        assert [write_ids.is_write_id_valid(w) for w in (w1, w2, w3, w4)] == [True, False, False, True]

    def test_current_txn_sees_its_own_write_id(self, store, table):
        t1, _ = _write(store)
        store.commit_txn(t1)
        _write(store)  # txn 2 stays open
        t3, w3 = _write(store)
        write_ids = store.get_valid_write_ids("t", store.get_valid_txns(t3))
        assert write_ids.to_string() == "default.t:3:2:2:"
        assert write_ids.is_write_id_valid(w3)

    def test_write_id_of_txn_above_snapshot_is_invalid(self, store, table):
        reader = store.open_txn()
        t2, w_by_t2 = _write(store)
        store.commit_txn(t2)
        w_by_reader = store.allocate_write_id(reader, "t")
        write_ids = store.get_valid_write_ids("t", store.get_valid_txns(reader))
        # txn hwm 1 -> write hwm = max write ID of txns <= 1 = 2; write ID 1 belongs to txn 2 > hwm.
        assert (w_by_t2, w_by_reader) == (1, 2)
        assert write_ids.to_string() == "default.t:2:1:1:"

    def test_without_any_committed_write_only_the_lowest_invalid_is_reported(self, store, table):
        t1, _ = _write(store)
        _write(store)  # txn 2 open
        store.abort_txn(t1)
        write_ids = store.get_valid_write_ids("t", store.get_valid_txns())
        # Hive collapses to hwm = lowest invalid (1, aborted) and keeps minOpenWriteId = 2.
        assert write_ids.to_string() == "default.t:1:2::1"

    def test_compactor_list_stops_below_the_lowest_open_write_id(self, store, table):
        t1, _ = _write(store)
        t2, _ = _write(store)
        _write(store)  # txn 3 open, write ID 3
        t4, _ = _write(store)
        store.commit_txn(t1)
        store.abort_txn(t2)
        store.commit_txn(t4)
        compactor = store.get_compactor_write_ids("t", store.get_valid_txns())
        assert compactor.high_watermark == 2
        assert compactor.aborted_ids == (2,)
        assert compactor.open_ids == ()

    def test_aborted_write_id_stays_invalid_in_every_later_snapshot(self, store, table):
        doomed, doomed_write_id = _write(store)
        store.abort_txn(doomed)
        for _ in range(5):
            txn, _ = _write(store)
            store.commit_txn(txn)
        write_ids = store.get_valid_write_ids("t", store.get_valid_txns())
        assert write_ids.high_watermark == 6
        assert write_ids.aborted_ids == (doomed_write_id,)
        assert not write_ids.is_write_id_valid(doomed_write_id)

    def test_write_component_on_unpartitioned_table_rejects_partition(self, store, table):
        with pytest.raises(InvalidPartitionError, match="the table is unpartitioned"):
            store.add_write_component(store.open_txn(), "t", "ds=1", WriteOperation.INSERT)


class TestWriteConflicts:
    @pytest.mark.parametrize(
        ("first", "second"),
        [
            (WriteOperation.UPDATE, WriteOperation.UPDATE),
            (WriteOperation.UPDATE, WriteOperation.DELETE),
            (WriteOperation.DELETE, WriteOperation.UPDATE),
            (WriteOperation.DELETE, WriteOperation.DELETE),
        ],
        ids=["u-u", "u-d", "d-u", "d-d"],
    )
    def test_concurrent_update_delete_second_committer_aborts(self, store, table, first, second):
        winner, loser = store.open_txn(), store.open_txn()
        store.add_write_component(winner, "t", None, first)
        loser_write_id = store.add_write_component(loser, "t", None, second)
        store.commit_txn(winner)
        with pytest.raises(
            CommitConflictError, match=r"Transaction 2 .*was aborted: write conflict on 'default\.t'"
        ):
            store.commit_txn(loser)
        assert store.get_txn(loser).state is TxnState.ABORTED
        assert store.get_txn(winner).state is TxnState.COMMITTED
        assert loser_write_id in store.get_valid_write_ids("t", store.get_valid_txns()).aborted_ids

    def test_first_committer_wins_even_if_it_opened_later(self, store, table):
        older, newer = store.open_txn(), store.open_txn()
        store.add_write_component(older, "t", None, WriteOperation.UPDATE)
        store.add_write_component(newer, "t", None, WriteOperation.UPDATE)
        store.commit_txn(newer)
        with pytest.raises(CommitConflictError):
            store.commit_txn(older)

    @pytest.mark.parametrize(
        ("first", "second"),
        [
            (WriteOperation.INSERT, WriteOperation.UPDATE),
            (WriteOperation.UPDATE, WriteOperation.INSERT),
            (WriteOperation.INSERT, WriteOperation.INSERT),
        ],
        ids=["i-u", "u-i", "i-i"],
    )
    def test_inserts_never_conflict(self, store, table, first, second):
        t1, t2 = store.open_txn(), store.open_txn()
        store.add_write_component(t1, "t", None, first)
        store.add_write_component(t2, "t", None, second)
        store.commit_txn(t1)
        store.commit_txn(t2)
        assert store.get_txn(t2).state is TxnState.COMMITTED

    def test_different_partitions_and_tables_do_not_conflict(self, store):
        store.create_table(
            TableDefinition(
                "p",
                (Column("a", "int"),),
                partition_keys=(Column("ds", "string"),),
                properties={"transactional": "true"},
            )
        )
        store.create_table(_acid("other"))
        t1, t2, t3 = (store.open_txn() for _ in range(3))
        store.add_write_component(t1, "p", "ds=1", WriteOperation.UPDATE)
        store.add_write_component(t2, "p", "ds=2", WriteOperation.UPDATE)
        store.add_write_component(t3, "other", None, WriteOperation.UPDATE)
        for txn in (t1, t2, t3):
            store.commit_txn(txn)
        t4, t5 = store.open_txn(), store.open_txn()
        store.add_write_component(t4, "p", "ds=1", WriteOperation.DELETE)
        store.add_write_component(t5, "p", "ds=1", WriteOperation.DELETE)
        store.commit_txn(t4)
        with pytest.raises(CommitConflictError, match=r"'default\.p/ds=1'"):
            store.commit_txn(t5)

    def test_serial_updates_do_not_conflict(self, store, table):
        t1 = store.open_txn()
        store.add_write_component(t1, "t", None, WriteOperation.UPDATE)
        store.commit_txn(t1)
        t2 = store.open_txn()  # starts after t1 committed: [1,1] and [2,2] do not overlap
        store.add_write_component(t2, "t", None, WriteOperation.UPDATE)
        store.commit_txn(t2)
        assert store.get_txn(t2).state is TxnState.COMMITTED


class TestReaper:
    def test_silent_txn_is_aborted_and_its_write_id_stays_invalid(self, store, table, clock):
        start = clock.now
        silent = store.open_txn(now=start)
        silent_write_id = store.allocate_write_id(silent, "t")
        alive = store.open_txn(now=start)
        store.heartbeat(alive, now=start + 200)

        aborted = store.abort_timed_out_txns(300, now=start + 400)

        assert aborted == [silent]
        assert store.get_txn(alive).state is TxnState.OPEN
        assert store.get_txn(alive).last_heartbeat == start + 200
        with pytest.raises(TxnNotOpenError, match=r"it is aborted; .*reaper"):
            store.heartbeat(silent, now=start + 401)
        with pytest.raises(TxnNotOpenError):
            store.commit_txn(silent)
        later, _ = _write(store)
        store.commit_txn(later)
        assert silent_write_id in store.get_valid_write_ids("t", store.get_valid_txns()).aborted_ids

    def test_reaper_uses_the_injected_clock_and_a_strict_cutoff(self, store, clock):
        txn = store.open_txn()
        clock.now += 300
        assert store.abort_timed_out_txns(300) == [], "last heartbeat == cutoff is not timed out"
        clock.now += 0.5
        assert store.abort_timed_out_txns(300) == [txn]
        assert store.abort_timed_out_txns(300) == []


# ----------------------------------------------------------------------------------------------
# Compaction queue
# ----------------------------------------------------------------------------------------------


class TestCompactionQueue:
    def test_happy_path_moves_through_hive_states(self, store, table, clock):
        cq = store.enqueue_compaction(
            "t", None, CompactionType.MAJOR, initiator_id="init-1", properties={"a": "b"}
        )
        assert store.enqueue_compaction("t", None, CompactionType.MAJOR) == cq, "Hive reuses an initiated one"
        assert store.get_compaction(cq).state is CompactionState.INITIATED

        claimed = store.find_next_to_compact("worker-1", now=clock.now + 1)
        assert claimed is not None
        assert (claimed.id, claimed.state, claimed.worker_id) == (cq, CompactionState.WORKING, "worker-1")
        assert claimed.start_time == clock.now + 1
        assert store.find_next_to_compact("worker-2") is None

        store.mark_compacted(cq)
        assert store.get_compaction(cq).state is CompactionState.READY_FOR_CLEANING
        store.mark_cleaned(cq, now=clock.now + 5)
        done = store.get_compaction(cq)
        assert (done.state, done.end_time, done.initiator_id, done.properties) == (
            CompactionState.SUCCEEDED,
            clock.now + 5,
            "init-1",
            {"a": "b"},
        )
        assert [c.id for c in store.show_compactions("t")] == [cq]

    def test_open_compaction_txn_names_the_txn_on_the_working_entry(self, store, table):
        # One metastore transaction: no moment where the COMPACTION txn is open and unnamed.
        cq = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        with pytest.raises(CompactionStateError, match=r"compaction 1 in state 'initiated'"):
            store.open_compaction_txn(cq)
        assert store.show_transactions() == []
        store.find_next_to_compact("w")

        txn = store.open_compaction_txn(cq)

        assert store.get_compaction(cq).txn_id == txn
        info = store.get_txn(txn)
        assert (info.state, info.txn_type) == (TxnState.OPEN, TxnType.COMPACTION)
        store.update_compactor_state(cq, txn, 0)
        assert store.get_compaction(cq).txn_id == txn

    def test_failure_states(self, store, table):
        failed = store.enqueue_compaction("t", None, CompactionType.MINOR)
        store.find_next_to_compact("w")
        store.mark_failed(failed, "boom")
        refused = store.enqueue_compaction("t", None, CompactionType.MINOR)
        store.mark_refused(refused, "too many deltas")
        aborted = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.abort_compaction(aborted)
        skipped = store.record_did_not_initiate("t", None, CompactionType.MAJOR, "no rights")

        states = {c.id: (c.state, c.error_message) for c in store.show_compactions()}
        assert states == {
            failed: (CompactionState.FAILED, "boom"),
            refused: (CompactionState.REFUSED, "too many deltas"),
            aborted: (CompactionState.ABORTED, None),
            skipped: (CompactionState.DID_NOT_INITIATE, "no rights"),
        }
        assert len({failed, refused, aborted, skipped}) == 4

    def test_illegal_transitions_raise(self, store, table):
        cq = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        with pytest.raises(
            CompactionStateError, match=r"Cannot mark cleaned compaction 1 in state 'initiated'"
        ):
            store.mark_cleaned(cq)
        with pytest.raises(CompactionStateError):
            store.mark_compacted(cq)
        store.find_next_to_compact("w")
        with pytest.raises(CompactionStateError, match="expected state initiated"):
            store.abort_compaction(cq)
        store.mark_compacted(cq)
        store.mark_cleaned(cq)
        with pytest.raises(CompactionStateError, match="'succeeded'"):
            store.mark_failed(cq, "late")
        with pytest.raises(NoSuchCompactionError):
            store.get_compaction(999)

    def test_ready_to_clean_waits_for_txns_open_at_compaction_commit(self, store, table, clock):
        reader = store.open_txn()  # txn 1: may still read the deltas being compacted
        cq = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w")
        compactor = store.open_txn(txn_type=TxnType.COMPACTION)  # txn 2
        store.update_compactor_state(cq, compactor, highest_write_id=5)
        store.mark_compacted(cq)
        assert store.find_ready_to_clean(now=clock.now + 10) == [], "not committed: no next_txn_id yet"
        store.commit_txn(compactor)
        info = store.get_compaction(cq)
        # next_txn_id = the next txn ID at the compaction txn's commit: 3.
        assert (info.next_txn_id, info.txn_id, info.highest_write_id) == (3, compactor, 5)

        # min open txn = 1 (the reader) < next_txn_id 3: not yet.
        assert store.find_ready_to_clean(now=clock.now + 10) == []
        store.commit_txn(reader)
        # No txn open: water mark = next txn id 3 >= 3.
        assert [c.id for c in store.find_ready_to_clean(now=clock.now + 10)] == [cq]
        assert [c.id for c in store.find_ready_to_clean(min_open_txn_id=2, now=clock.now + 10)] == []

    def test_ready_to_clean_waits_for_the_newest_txn_open_at_commit(self, store, table, clock):
        cq = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w")
        compactor = store.open_txn(txn_type=TxnType.COMPACTION)  # txn 1
        reader = store.open_txn()  # txn 2: opened before the compaction commits, cannot see its base
        store.update_compactor_state(cq, compactor, highest_write_id=1)
        store.mark_compacted(cq)
        store.commit_txn(compactor)
        assert store.find_ready_to_clean(now=clock.now + 1) == []
        store.abort_txn(reader)
        assert [c.id for c in store.find_ready_to_clean(now=clock.now + 1)] == [cq]

    def test_ready_to_clean_honours_retention_and_lowest_write_id_per_partition(self, store, table, clock):
        first = store.enqueue_compaction("t", None, CompactionType.MINOR)
        store.find_next_to_compact("w")
        txn = store.open_txn(txn_type=TxnType.COMPACTION)
        store.update_compactor_state(first, txn, highest_write_id=8)
        store.mark_compacted(first)
        store.commit_txn(txn, now=clock.now)
        second = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w")
        txn = store.open_txn(txn_type=TxnType.COMPACTION)
        store.update_compactor_state(second, txn, highest_write_id=5)
        store.mark_compacted(second)
        store.commit_txn(txn, now=clock.now)

        assert store.find_ready_to_clean(retention_seconds=60, now=clock.now + 30) == []
        ready = store.find_ready_to_clean(retention_seconds=60, now=clock.now + 61)
        assert [c.id for c in ready] == [second], "only the lowest highest-write-ID per partition"

    def test_ready_to_clean_lowest_write_id_waits_even_when_newer_is_ready(self, store, table, clock):
        """Hive's ReadyToCleanHandler: the lowest CQ_HIGHEST_WRITE_ID is chosen before the water mark.

        An older compaction that still waits for a reader blocks a newer one of the same partition,
        which must not clean the older one's inputs out from under that reader.
        """
        older = store.enqueue_compaction("t", None, CompactionType.MINOR)
        store.find_next_to_compact("w")
        ctxn = store.open_txn(txn_type=TxnType.COMPACTION)
        store.update_compactor_state(older, ctxn, highest_write_id=3)
        store.mark_compacted(older)
        reader = store.open_txn()  # opened before the older compaction commits
        store.commit_txn(ctxn)
        newer = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w")
        store.update_compactor_state(newer, store.open_txn(txn_type=TxnType.COMPACTION), highest_write_id=5)
        store.mark_compacted(newer)
        store.commit_txn(store.get_compaction(newer).txn_id)
        assert store.find_ready_to_clean(min_open_txn_id=store.get_compaction(newer).next_txn_id) == []
        assert store.find_ready_to_clean(now=clock.now + 1) == []
        store.commit_txn(reader)
        assert [c.id for c in store.find_ready_to_clean(now=clock.now + 1)] == [older]

    def test_cleaner_retry_retention_delays_then_is_recorded(self, store, table, clock):
        cq = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w")
        store.mark_compacted(cq)
        assert [c.retry_retention for c in store.find_ready_to_clean(now=clock.now + 1)] == [0.0]
        store.set_cleaner_retry_retention(cq, 300, "Refusing to clean '/x'")
        info = store.get_compaction(cq)
        assert (info.state, info.retry_retention, info.error_message) == (
            CompactionState.READY_FOR_CLEANING,
            300.0,
            "Refusing to clean '/x'",
        )
        assert store.find_ready_to_clean(now=clock.now + 299) == []
        assert [c.id for c in store.find_ready_to_clean(now=clock.now + 301)] == [cq]
        with pytest.raises(InvalidMetastoreRequestError, match="cleaner retry retention -1"):
            store.set_cleaner_retry_retention(cq, -1, "x")
        store.mark_cleaned(cq)
        with pytest.raises(CompactionStateError):
            store.set_cleaner_retry_retention(cq, 600, "late")

    def test_mark_compacted_without_txn_records_the_high_watermark(self, store, table, clock):
        cq = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w")
        store.open_txn()
        store.mark_compacted(cq)
        info = store.get_compaction(cq)
        assert (info.next_txn_id, info.commit_time) == (2, clock.now)


# ----------------------------------------------------------------------------------------------
# Reader leases
# ----------------------------------------------------------------------------------------------


class TestInitiatorMarks:
    """acidflow's initiator marks and Hive's findPotentialCompactions question, for one table."""

    def test_marks_are_kept_per_table_replaced_and_dropped_with_the_table(self, store, table):
        from acid_core.metastore.port import InitiatorMark

        store.create_table(_acid("u"))
        assert store.load_initiator_marks() == {}
        store.commit_initiator_mark(InitiatorMark("default.t", 100.5, "a" * 32))
        store.commit_initiator_mark(InitiatorMark("default.u", 7.0, "b" * 32))
        store.commit_initiator_mark(InitiatorMark("default.t", 200.25, "c" * 32))
        assert store.load_initiator_marks() == {
            "default.t": InitiatorMark("default.t", 200.25, "c" * 32),
            "default.u": InitiatorMark("default.u", 7.0, "b" * 32),
        }
        store.drop_table("default.t")
        assert list(store.load_initiator_marks()) == ["default.u"]

    def test_marks_keep_the_write_id_list_they_were_given(self, store, table):
        from acid_core.metastore.port import InitiatorMark

        write_ids = "default.t:12:9223372036854775807::4,7"
        store.commit_initiator_mark(InitiatorMark("default.t", 1.0, "a" * 32, write_ids))
        assert store.load_initiator_marks()["default.t"].write_ids == write_ids
        store.commit_initiator_mark(InitiatorMark("default.t", 2.0, "a" * 32))
        assert store.load_initiator_marks()["default.t"].write_ids is None

    def test_partition_changes_are_commits_since_and_uncleaned_aborts(self, store, clock):
        store.create_table(_acid("p", partition_keys=(Column("ds", "string"),)))

        def write(partition: str, *, commit: bool = True) -> None:
            txn = store.open_txn()
            store.add_write_component(txn, "p", partition, WriteOperation.INSERT)
            store.commit_txn(txn) if commit else store.abort_txn(txn)

        write("ds=a")
        clock.now += 10
        since = clock.now
        write("ds=b")
        write("ds=c", commit=False)
        open_txn = store.open_txn()
        store.add_write_component(open_txn, "p", "ds=d", WriteOperation.INSERT)  # neither yet
        changes = store.list_partition_changes("default.p", since)
        assert (changes.written, changes.aborted) == (frozenset({"ds=b"}), frozenset({"ds=c"}))
        assert store.list_partition_changes("default.p", since - 10).written == {"ds=a", "ds=b"}
        assert store.list_partition_changes("default.p", clock.now + 1).written == frozenset()


class TestLeases:
    def test_take_lease_protects_the_current_snapshot(self, store, table, clock):
        committed, _ = _write(store)
        store.commit_txn(committed)
        _write(store)  # txn 2 open
        taken = store.take_lease("t", 60, owner="spark-job")
        snapshot = taken.write_ids
        assert snapshot == store.get_valid_write_ids("t", store.get_valid_txns())
        assert snapshot.to_string() == "default.t:2:2:2:"
        # The full snapshot: the ValidTxnList of the same moment (txn 1 committed, txn 2 open).
        assert taken.txns == store.get_valid_txns()
        assert taken.txns is not None
        assert taken.txns.to_string() == "2:2:2:"
        [lease] = store.list_leases("t")
        assert lease == taken
        assert store.get_lease(taken.lease_id) == taken
        assert (lease.lease_id, lease.table, lease.write_ids, lease.owner) == (
            taken.lease_id,
            "default.t",
            snapshot,
            "spark-job",
        )
        assert (lease.created, lease.expires) == (clock.now, clock.now + 60)

    def test_lease_snapshot_does_not_move_with_later_commits(self, store, table):
        writer, _ = _write(store)
        taken = store.take_lease("t", 60)
        store.commit_txn(writer)
        _write(store)
        later = store.get_lease(taken.lease_id)
        assert (later.write_ids, later.txns) == (taken.write_ids, taken.txns)
        assert later.txns is not None
        assert not later.txns.is_txn_valid(writer)
        assert not later.write_ids.is_write_id_valid(1)

    def test_release_and_expire(self, store, table, clock):
        short = store.take_lease("t", 10).lease_id
        long = store.take_lease("t", 100).lease_id
        released = store.take_lease("t", 100).lease_id
        store.release_lease(released)
        with pytest.raises(NoSuchLeaseError, match=f"No such reader lease {released}"):
            store.release_lease(released)
        with pytest.raises(NoSuchLeaseError, match=f"No such reader lease {released}"):
            store.get_lease(released)
        assert store.expire_leases(now=clock.now + 9) == []
        assert store.expire_leases(now=clock.now + 10) == [short]
        assert [lease.lease_id for lease in store.list_leases()] == [long]

    def test_lease_input_errors(self, store, table):
        with pytest.raises(InvalidMetastoreRequestError, match="lease TTL 0"):
            store.take_lease("t", 0)
        with pytest.raises(NoSuchTableError):
            store.take_lease("missing", 10)


# ----------------------------------------------------------------------------------------------
# Housekeeping (Hive's AcidHouseKeeperService)
# ----------------------------------------------------------------------------------------------


def _compact_and_clean(
    store: SqlMetastore, table: str, partition: str | None, **mark_cleaned_kwargs
) -> tuple[int, int]:
    """One compaction of ``table``/``partition`` from queue to cleaned, as worker + cleaner drive it.

    Returns (compaction ID, its compaction txn ID).
    """
    cq = store.enqueue_compaction(table, partition, CompactionType.MAJOR)
    assert store.find_next_to_compact("w") is not None
    ctxn = store.open_txn("compactor", "host", TxnType.COMPACTION)
    highest = store.get_compactor_write_ids(table, store.get_valid_txns(ctxn)).high_watermark
    store.update_compactor_state(cq, ctxn, highest)
    store.commit_txn(ctxn)
    store.mark_compacted(cq)
    # ReadyToCleanHandler wants CQ_COMMIT_TIME strictly before now - retention.
    assert [c.id for c in store.find_ready_to_clean(now=4_000_000_000)] == [cq]
    store.mark_cleaned(cq, **mark_cleaned_kwargs)
    return cq, ctxn


def _aborted_ids(store: SqlMetastore, table: str = "t") -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(aborted txn IDs, aborted write IDs) of a fresh snapshot."""
    txns = store.get_valid_txns()
    return txns.aborted_ids, store.get_valid_write_ids(table, txns).aborted_ids


class TestHousekeeping:
    """Expected values follow Hive's AcidHouseKeeperService methods named in each test.

    Every transaction here starts at ``clock.now``; housekeeping runs 10 s later, so Hive's
    TXN_OPENTXN_TIMEOUT window (1 s) covers none of them unless a test moves the clock.
    """

    def test_empty_aborted_and_committed_txns_are_deleted(self, store, table, clock):
        # CompactionTxnHandler.cleanEmptyAbortedAndCommittedTxns: TXNS rows 'a'/'c' with no
        # TXN_COMPONENTS and TXN_ID < the low boundary (here 3, the newest txn) are deleted.
        abandoned = store.open_txn()  # 1: a streaming batch that never wrote
        store.abort_txn(abandoned)
        done = store.open_txn()  # 2: committed, wrote nothing
        store.commit_txn(done)
        still_open = store.open_txn()  # 3
        assert store.get_valid_txns().aborted_ids == (1,)

        result = store.housekeeping(now=clock.now + 10)

        assert result.deleted_txn_ids == (1, 2)
        assert store.get_valid_txns().aborted_ids == ()
        assert store.get_valid_txns().open_ids == (still_open,)
        # TestTxnHandler: once cleaned, an empty txn is no longer recognized.
        with pytest.raises(NoSuchTxnError):
            store.abort_txn(abandoned)

    def test_the_timeout_window_and_the_newest_txn_before_it_are_spared(self, store, table, clock):
        # getOpenTxnTimeoutLowBoundaryTxnId: boundary = max(TXN_ID) with TXN_STARTED < now - timeout;
        # only TXN_ID < boundary goes, so the boundary txn itself (3) and younger ones (4) stay.
        for _ in range(3):
            store.abort_txn(store.open_txn(now=clock.now))
        store.abort_txn(store.open_txn(now=clock.now + 5))

        result = store.housekeeping(now=clock.now + 5.5, open_txn_timeout_seconds=1)

        assert result.deleted_txn_ids == (1, 2)
        assert store.get_valid_txns().aborted_ids == (3, 4)

    def test_aborted_writes_stay_invalid_until_the_cleaner_removed_them(self, store, table, clock):
        # cleanEmptyAbortedAndCommittedTxns only deletes txns without TXN_COMPONENTS; markCleaned
        # (MarkCleanedFunction.removeTxnComponents) forgets aborted components <= the highest write
        # ID only when the cleaner says no delta still holds aborted writes.
        writer = store.open_txn()  # 1
        store.add_write_component(writer, "t", None, WriteOperation.INSERT)  # write ID 1
        store.abort_txn(writer)
        assert store.housekeeping(now=clock.now + 10).deleted_txn_ids == ()
        assert _aborted_ids(store) == ((1,), (1,))

        _compact_and_clean(store, "t", None)  # the safe default: the cleaner said nothing
        assert store.housekeeping(now=clock.now + 10).deleted_txn_ids == ()
        assert _aborted_ids(store) == ((1,), (1,))

        _compact_and_clean(store, "t", None, has_uncompacted_aborts=False)
        result = store.housekeeping(now=clock.now + 10)

        assert result.deleted_txn_ids[0] == 1
        assert _aborted_ids(store) == ((), ())
        # With its TXNS row gone, write ID 1 reads as committed: no file holds it.
        assert store.get_valid_write_ids("t", store.get_valid_txns()).is_write_id_valid(1)

    def test_forgetting_the_aborted_highest_write_keeps_the_high_watermark(self, store, table, clock):
        # cleanEmptyAbortedAndCommittedTxns deletes from TXNS only; the TXN_TO_WRITE_ID row of the
        # highest write ID stays while an older aborted txn (3) holds the low water mark
        # (cleanTxnToWriteIdTable), so GetValidWriteIdsForTableFunction's hwm stays 4. Deleting
        # that row with its txn dropped the hwm to 3, below a base_4 the compactor had written.
        for _ in range(2):
            txn, _ = _write(store)  # txns 1, 2 -> write IDs 1, 2
            store.commit_txn(txn)
        kept, _ = _write(store)  # txn 3 -> write ID 3: its delta is not cleaned yet
        store.add_write_component(kept, "t", None, WriteOperation.INSERT)
        store.abort_txn(kept)
        highest = store.open_txn()  # txn 4 -> write ID 4
        store.add_write_component(highest, "t", None, WriteOperation.INSERT)
        store.abort_txn(highest)
        _compact_and_clean(store, "t", None, has_uncompacted_aborts=True, aborted_write_ids=[4])

        result = store.housekeeping(now=clock.now + 10)

        assert highest in result.deleted_txn_ids
        assert result.low_water_mark == kept
        after = store.get_valid_write_ids("t", store.get_valid_txns())
        assert (after.high_watermark, after.aborted_ids, after.is_write_id_valid(4)) == (4, (3,), True)
        # Once txn 3 is forgotten too, every row goes and NEXT_WRITE_ID gives the same hwm.
        _compact_and_clean(store, "t", None, has_uncompacted_aborts=False)
        store.housekeeping(now=clock.now + 10)
        final = store.get_valid_write_ids("t", store.get_valid_txns())
        assert (final.high_watermark, final.aborted_ids) == (4, ())

    def test_an_aborted_write_in_an_uncompacted_partition_keeps_its_txn(self, store, clock):
        # MarkCleanedFunction filters TXN_COMPONENTS by table *and* partition.
        store.create_table(_acid("p", partition_keys=(Column("ds", "string"),)))
        writer = store.open_txn()
        store.add_write_component(writer, "p", "ds=1", WriteOperation.INSERT)
        store.add_write_component(writer, "p", "ds=2", WriteOperation.INSERT)
        store.abort_txn(writer)

        _compact_and_clean(store, "p", "ds=1", has_uncompacted_aborts=False)
        assert store.housekeeping(now=clock.now + 10).deleted_txn_ids == ()
        assert _aborted_ids(store, "p") == ((writer,), (1,))

        _compact_and_clean(store, "p", "ds=2", has_uncompacted_aborts=False)
        assert writer in store.housekeeping(now=clock.now + 10).deleted_txn_ids
        assert _aborted_ids(store, "p") == ((), ())

    def test_with_uncompacted_aborts_only_the_removed_write_ids_are_forgotten(self, store, table, clock):
        # MarkCleanedFunction: hasUncompactedAborts -> DELETE ... AND TC_WRITEID IN (:ids).
        first, second = store.open_txn(), store.open_txn()
        assert store.add_write_component(first, "t", None, WriteOperation.INSERT) == 1
        assert store.add_write_component(second, "t", None, WriteOperation.INSERT) == 2
        store.abort_txn(first)
        store.abort_txn(second)

        _compact_and_clean(store, "t", None, has_uncompacted_aborts=True, aborted_write_ids=[1])
        result = store.housekeeping(now=clock.now + 10)

        assert first in result.deleted_txn_ids
        assert second not in result.deleted_txn_ids
        assert _aborted_ids(store) == ((second,), (2,))

    def test_an_aborted_compaction_txn_is_kept_by_its_compactor_footprint(self, store, table, clock):
        # CompactionTxnHandler.updateCompactorState inserts a TXN_COMPONENTS row (operation 'p')
        # for the compaction txn, so an aborted one (its base_N_vT must stay invalid) is not empty.
        writer = store.open_txn()
        store.add_write_component(writer, "t", None, WriteOperation.INSERT)
        store.commit_txn(writer)
        cq = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w")
        ctxn = store.open_txn("compactor", "host", TxnType.COMPACTION)
        store.update_compactor_state(cq, ctxn, 1)
        store.abort_txn(ctxn)
        store.mark_failed(cq, "worker died")
        empty = store.open_txn()
        store.abort_txn(empty)
        store.open_txn()  # the boundary txn

        result = store.housekeeping(now=clock.now + 10)

        assert empty in result.deleted_txn_ids
        assert ctxn not in result.deleted_txn_ids
        assert store.get_valid_txns().aborted_ids == (ctxn,)

    def test_a_compaction_txn_begun_after_the_cleaned_one_committed_is_not_forgotten(
        self, store, table, clock
    ):
        # Beyond Hive: markCleaned forgets only aborted txns below the compaction's CQ_NEXT_TXN_ID.
        # A later compaction txn (same highest write ID) that aborted wrote its base_1_vT after the
        # cleaner's listing, so nothing removed it; its TXNS row must stay aborted.
        writer = store.open_txn()
        store.add_write_component(writer, "t", None, WriteOperation.INSERT)
        store.commit_txn(writer)
        cleaned = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w1")
        first = store.open_txn("compactor", "host", TxnType.COMPACTION)
        store.update_compactor_state(cleaned, first, 1)
        store.commit_txn(first)
        store.mark_compacted(cleaned)
        later = store.enqueue_compaction("t", None, CompactionType.MAJOR)
        store.find_next_to_compact("w2")
        second = store.open_txn("compactor", "host", TxnType.COMPACTION)
        store.update_compactor_state(later, second, 1)
        store.abort_txn(second)
        store.mark_failed(later, "worker died")
        store.open_txn()  # the boundary txn

        store.mark_cleaned(cleaned, has_uncompacted_aborts=False)
        result = store.housekeeping(now=clock.now + 10)

        assert second not in result.deleted_txn_ids
        assert store.get_valid_txns().aborted_ids == (second,)

    def test_a_committed_compaction_txn_footprint_is_not_a_completed_write(self, store, table):
        # TxnHandler.commitTxn copies TXN_COMPONENTS to COMPLETED_TXN_COMPONENTS except COMPACT.
        _, ctxn = _compact_and_clean(store, "t", None)
        with store._engine.connect() as connection:
            copied = connection.execute(
                sa.select(sa.func.count())
                .select_from(CompletedTxnComponent)
                .where(CompletedTxnComponent.txn_id == ctxn)
            ).scalar_one()
        assert copied == 0

    def test_txn_to_write_id_rows_below_the_lowest_uncommitted_txn_go(self, store, table, clock):
        # CleanTxnToWriteIdTableFunction with MinUncommittedTxnIdHandler: rows of txns below
        # min(max(TXN_ID)+1, lowest open or aborted txn) = 3 are deleted.
        for _ in range(2):
            txn, _ = _write(store)  # txns 1, 2 -> write IDs 1, 2
            store.commit_txn(txn)
        open_writer, _ = _write(store)  # txn 3 -> write ID 3
        txn, _ = _write(store)  # txn 4 -> write ID 4
        store.commit_txn(txn)
        before = store.get_valid_write_ids("t", store.get_valid_txns())

        result = store.housekeeping(now=clock.now + 10)

        assert (result.low_water_mark, result.deleted_write_id_rows) == (open_writer, 2)
        # Committed txns 1 and 2 have no write-ID row left: cleanEmptyAbortedAndCommittedTxns.
        assert result.deleted_txn_ids == (1, 2)
        after = store.get_valid_write_ids("t", store.get_valid_txns())
        # GetValidWriteIdsForTableFunction: hwm = max write ID of a txn <= the txn hwm (4);
        # write ID 3 (open txn 3) is the only exception, before and after.
        assert before == after
        assert (after.high_watermark, after.open_ids, after.aborted_ids) == (4, (3,), ())

    def test_a_snapshot_of_an_open_txn_keeps_the_rows_it_sees_as_open(self, store, table, clock):
        # findMinTxnIdSeenOpen (MIN_HISTORY_LEVEL): the reader (txn 2) opened while txn 1 was
        # open, so rows from txn 1 on stay while the reader is open. Without it, txn 1's row would
        # go once it committed and write ID 1 would turn valid in the reader's old snapshot.
        writer, write_id = _write(store)
        reader = store.open_txn()
        snapshot = store.get_valid_txns(reader)
        assert snapshot.open_ids == (writer,)
        store.commit_txn(writer)

        result = store.housekeeping(now=clock.now + 10)

        assert (result.low_water_mark, result.deleted_write_id_rows) == (writer, 0)
        seen = store.get_valid_write_ids("t", snapshot)
        assert not seen.is_write_id_valid(write_id)
        assert seen.open_ids == (write_id,)

        store.commit_txn(reader)
        result = store.housekeeping(now=clock.now + 10)
        assert (result.low_water_mark, result.deleted_write_id_rows) == (3, 1)

    def test_a_row_above_a_kept_row_of_its_table_is_kept(self, store, table, clock):
        # Write IDs are not allocated in txn order: txn 2 got write ID 1, txn 1 write ID 2.
        # Hive's plain "T2W_TXNID < low water mark" would delete (txn 1, write ID 2) while
        # (txn 2, write ID 1) stays aborted, and GetValidWriteIdsForTableFunction would then
        # compute hwm 1 (max write ID of the remaining rows) and hide committed write ID 2.
        first, second = store.open_txn(), store.open_txn()
        assert store.add_write_component(second, "t", None, WriteOperation.INSERT) == 1
        assert store.add_write_component(first, "t", None, WriteOperation.INSERT) == 2
        store.commit_txn(first)
        store.abort_txn(second)
        before = store.get_valid_write_ids("t", store.get_valid_txns())

        result = store.housekeeping(now=clock.now + 10)

        assert (result.low_water_mark, result.deleted_write_id_rows) == (second, 0)
        after = store.get_valid_write_ids("t", store.get_valid_txns())
        assert after == before
        assert (after.high_watermark, after.aborted_ids, after.is_write_id_valid(2)) == (2, (1,), True)

    def test_the_newest_committed_row_stays_when_only_aborted_rows_are_kept(self, store, table, clock):
        # Beyond Hive: with rows 1, 2 (committed) gone and only aborted 3, 4 kept,
        # GetValidWriteIdsForTableFunction finds no committed write and reports the lowest invalid
        # one as the hwm (3) -- below the base_4 a major compaction writes over aborted 3 and 4.
        # The newest committed row (2) is spared so every reader keeps hwm 4.
        for _ in range(2):
            txn, _ = _write(store)
            store.commit_txn(txn)
        for _ in range(2):
            txn = store.open_txn()
            store.add_write_component(txn, "t", None, WriteOperation.INSERT)
            store.abort_txn(txn)
        before = store.get_valid_write_ids("t", store.get_valid_txns())

        result = store.housekeeping(now=clock.now + 10)

        assert (result.low_water_mark, result.deleted_write_id_rows) == (3, 1)
        after = store.get_valid_write_ids("t", store.get_valid_txns())
        assert after == before
        assert (after.high_watermark, after.aborted_ids) == (4, (3, 4))

    def test_housekeeping_is_idempotent(self, store, table, clock):
        writer, _ = _write(store)
        store.commit_txn(writer)
        store.abort_txn(store.open_txn())
        store.open_txn()
        first = store.housekeeping(now=clock.now + 10)
        assert first.deleted_txn_ids == (1, 2)

        again = store.housekeeping(now=clock.now + 10)

        assert again == type(first)((), 0, first.low_water_mark)

    def test_a_negative_timeout_is_refused(self, store):
        with pytest.raises(InvalidMetastoreRequestError, match=r"-1"):
            store.housekeeping(open_txn_timeout_seconds=-1)
