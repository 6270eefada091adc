"""Hive 2.3's and 3.1's compaction queue by SQL (``HiveQueueSql``) on a real PostgreSQL with their tables.

Each test gets a fresh schema holding the ACID tables of ``tests/fixtures/hms23`` (TXNS,
TXN_COMPONENTS, COMPLETED_TXN_COMPONENTS, COMPACTION_QUEUE, COMPLETED_COMPACTIONS, ...) or of
Hive 3.1.0's (write IDs, a VERSION row: the statements for those tables of Hive's own
``hive-schema-3.1.0.postgres.sql``, what ``schematool -initSchema`` runs, read from the
hive-standalone-metastore 3.1.3 distribution in Maven's local repository), filled as
Hive's TxnHandler fills them (``compact2`` inserts an 'i' row with an ID from
NEXT_COMPACTION_QUEUE_ID). The cleaner's readiness rule (``HiveMetastore.find_ready_to_clean``) runs
over this queue with the HMS's answers (open transactions, locks) given as Thrift structs.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hive_metastore import ttypes as T
from sqlalchemy import create_engine, text

from acid_core.errors import CompactionStateError, HiveMetastoreCapabilityError, NoSuchCompactionError
from acid_core.metastore import CompactionState
from acid_core.metastore.hive.metastore import HIVE31_NAMES_PROPERTY, HiveMetastore
from acid_core.metastore.hive.queue_sql import HiveQueueSchema, HiveQueueSql, queue_schema_for
from acid_core.writeids import NewlyValidWriteIds
from tests.acid_core.metastore.test_hive_shapes import HIVE3_AND_LATER, HIVE4_ONLY, RecordedHmsConnection

pytestmark = [pytest.mark.integration("postgres"), pytest.mark.backend("postgres")]

_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# The tables of the queue path, from Hive 3.1.0's schematool script (its other ~70 tables are
# the catalog's, which this path never reads).
_HIVE31_TABLES = {
    "VERSION", "TXNS", "TXN_COMPONENTS", "COMPLETED_TXN_COMPONENTS", "NEXT_TXN_ID", "HIVE_LOCKS",
    "NEXT_LOCK_ID", "COMPACTION_QUEUE", "NEXT_COMPACTION_QUEUE_ID", "COMPLETED_COMPACTIONS",
    "TXN_TO_WRITE_ID", "NEXT_WRITE_ID", "MIN_HISTORY_LEVEL", "WRITE_SET", "AUX_TABLE",
}  # fmt: skip


def _statement_table(statement):
    """The table of a ``CREATE TABLE [IF NOT EXISTS]`` / ``INSERT INTO`` / ``CREATE [UNIQUE] INDEX .. ON``
    statement, without its quotes (PostgreSQL's ``"VERSION"``, MySQL's `` `VERSION` ``)."""
    words = " ".join(line for line in statement.splitlines() if not line.strip().startswith("--")).split()
    if words[2:5] == ["IF", "NOT", "EXISTS"]:
        words = words[:2] + words[5:]
    name = None
    if words[:2] in (["CREATE", "TABLE"], ["INSERT", "INTO"]):
        name = words[2]
    elif "INDEX" in words[:3] and "ON" in words:
        name = words[words.index("ON") + 1]
    return None if name is None else name.split("(")[0].strip('"`')


# What Hive 4's MarkCleanedFunction touches, from Hive 4.0.1's schematool script (4.0.0 schema).
_HIVE4_TABLES = {
    "VERSION", "TXNS", "TXN_COMPONENTS", "COMPLETED_TXN_COMPONENTS", "COMPACTION_QUEUE", "COMPLETED_COMPACTIONS",
}  # fmt: skip


def _ddl(version, db_type="postgres"):
    if version == "2.3":
        return (_FIXTURES / "hms23" / "hive-txn-schema-2.3.0.postgres.sql").read_text()
    from tests.fixtures.hms import HIVE_4, HIVE_31, hive_schema_script

    if version == "4":
        statements = hive_schema_script(HIVE_4, "4.0.0", db_type).split(";")
        return ";".join(s for s in statements if _statement_table(s) in _HIVE4_TABLES)

    statements = hive_schema_script(HIVE_31, "3.1.0", db_type).split(";")
    return ";".join(s for s in statements if _statement_table(s) in _HIVE31_TABLES)


def _load(url, version, db_type="postgres"):
    engine = create_engine(url)
    with engine.begin() as c:
        for statement in _ddl(version, db_type).split(";"):
            lines = [line for line in statement.splitlines() if not line.strip().startswith("--")]
            if "".join(lines).strip():
                c.execute(text("\n".join(lines)))
    return engine


@pytest.fixture(scope="session")
def _mariadb_hive31_database(mariadb_server):
    """One database of the tests' MariaDB with Hive 3.1's queue tables (Hive's own MySQL DDL), for the
    session: creating InnoDB tables costs seconds each time, emptying them does not."""
    import uuid

    from sqlalchemy import make_url

    from tests.fixtures.mariadb import execute_mariadb_admin

    name = f"queue_{uuid.uuid4().hex[:12]}"
    execute_mariadb_admin(mariadb_server, f"CREATE DATABASE `{name}`")
    url = make_url(mariadb_server).set(database=name).render_as_string(hide_password=False)
    _load(url, "3.1", "mysql").dispose()
    yield url
    execute_mariadb_admin(mariadb_server, f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture
def mariadb_database_url(_mariadb_hive31_database):
    """The session's MariaDB queue database, emptied and seeded as schematool leaves it."""
    url = _mariadb_hive31_database
    statements = [
        "\n".join(line for line in s.splitlines() if not line.strip().startswith("--")).strip()
        for s in _ddl("3.1", "mysql").split(";")
    ]
    seeds = [s for s in statements if s.upper().startswith("INSERT INTO")]
    assert len(seeds) == 4, seeds  # NEXT_TXN_ID, NEXT_LOCK_ID, NEXT_COMPACTION_QUEUE_ID, VERSION
    engine = create_engine(url)
    with engine.begin() as c:
        c.execute(text("SET FOREIGN_KEY_CHECKS = 0"))  # TXN_COMPONENTS references TXNS (Hive's DDL)
        for table in sorted(_HIVE31_TABLES):
            c.execute(text(f"DELETE FROM `{table}`"))
        c.execute(text("SET FOREIGN_KEY_CHECKS = 1"))
        for seed in seeds:
            c.execute(text(seed))
    engine.dispose()
    return url


def _backend(request, version):
    """(url, engine) of Hive's queue tables: PostgreSQL, or MariaDB with Hive's own MySQL DDL."""
    if request.param.endswith("mariadb"):
        url = request.getfixturevalue("mariadb_database_url")
        return url, create_engine(url)
    url = request.getfixturevalue("postgres_schema_url")
    return url, _load(url, version)


# MySQL/MariaDB: Hive 3.1's schematool script for mysql (upper-case, case-sensitive table names,
# `FOR UPDATE` under InnoDB's locking): the same statements must hold there.
@pytest.fixture(params=["2.3", "3.1", "3.1-mariadb"], ids=["hive-2.3", "hive-3.1", "hive-3.1-mariadb"])
def backend(request):
    url, engine = _backend(request, request.param.split("-")[0])
    yield url, engine
    engine.dispose()


@pytest.fixture
def backend23(postgres_schema_url):
    engine = _load(postgres_schema_url, "2.3")
    yield postgres_schema_url, engine
    engine.dispose()


@pytest.fixture(params=["postgres", "mariadb"], ids=["postgres", "mariadb"])
def backend31(request):
    url, engine = _backend(request, "3.1")
    yield url, engine
    engine.dispose()


def _is_hive3(engine):
    from sqlalchemy import inspect

    [queue] = [n for n in inspect(engine).get_table_names() if n.lower() == "compaction_queue"]
    return any(c["name"].lower() == "cq_catalog" for c in inspect(engine).get_columns(queue))


def _sql(engine, statement, **params):
    with engine.begin() as c:
        result = c.execute(text(statement), params)
        return result.all() if result.returns_rows else None


def _compact2(engine, table="t", partition=None, kind="a"):
    """What Hive's TxnHandler.compact does: an 'i' row with the next queue ID (3.1: and its catalog)."""
    hive3 = _is_hive3(engine)
    with engine.begin() as c:
        next_id = c.execute(text("SELECT ncq_next FROM NEXT_COMPACTION_QUEUE_ID FOR UPDATE")).scalar_one()
        c.execute(text("UPDATE NEXT_COMPACTION_QUEUE_ID SET ncq_next = :n"), {"n": next_id + 1})
        c.execute(
            text(
                "INSERT INTO COMPACTION_QUEUE (cq_id, cq_database, cq_table, cq_partition, cq_state, cq_type"
                + (
                    ", cq_catalog) VALUES (:id, 'db', :t, :p, 'i', :k, 'hive')"
                    if hive3
                    else ") VALUES (:id, 'db', :t, :p, 'i', :k)"
                )
            ),
            {"id": next_id, "t": table, "p": partition, "k": kind},
        )
    return next_id


def _txn(engine, txn_id, state):
    _sql(
        engine,
        "INSERT INTO TXNS (txn_id, txn_state, txn_started, txn_last_heartbeat, txn_user, txn_host) "
        "VALUES (:id, :s, 0, 0, 'hive', 'h')",
        id=txn_id,
        s=state,
    )


def test_hive_queue_sql_claim_race_has_exactly_one_winner(backend):
    """Eight workers claim one initiated entry at once: one wins, seven get nothing."""
    url, engine = backend
    compaction_id = _compact2(engine)
    queues = [HiveQueueSql(url) for _ in range(8)]
    barrier = threading.Barrier(8)
    results = [None] * 8

    def claim(i):
        barrier.wait()
        results[i] = queues[i].claim(f"worker-{i}")

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for queue in queues:
        queue.close()
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert (winners[0].id, winners[0].state) == (compaction_id, "w")
    [(state, worker)] = _sql(engine, "SELECT cq_state, cq_worker_id FROM COMPACTION_QUEUE")
    assert (state, worker) == ("w", winners[0].worker_id)


def test_hive_queue_sql_compacted_entry_records_txn_and_next_txn(backend):
    url, engine = backend
    compaction_id = _compact2(engine)
    queue = HiveQueueSql(url, clock=lambda: 1000.0)
    queue.claim("w-1")
    queue.set_compactor_state(compaction_id, txn_id=12, highest_txn_id=9)
    queue.mark_compacted(compaction_id, next_txn_id=13)

    row = queue.get(compaction_id)
    assert (row.state, row.worker_id, row.highest_txn_id) == ("r", None, 9)
    assert row.meta == {"txn_id": 12, "next_txn_id": 13, "commit_time_ms": 1_000_000}
    queue.close()


def test_hive_queue_sql_mark_compacted_of_an_initiated_entry_raises_and_changes_nothing(backend):
    url, engine = backend
    compaction_id = _compact2(engine)
    queue = HiveQueueSql(url)
    with pytest.raises(CompactionStateError, match=r"Cannot mark compacted compaction 1 in state 'i'"):
        queue.mark_compacted(compaction_id, next_txn_id=5)
    assert _sql(engine, "SELECT cq_state, cq_meta_info FROM COMPACTION_QUEUE") == [("i", None)]
    queue.close()


# What the cleaner saw -> the aborted TXN_COMPONENTS left (Hive 4's MarkCleanedFunction rule, on
# every version). Aborted writes 3 and 5 of p=1 (<= the compaction's 10), 4 of p=2, 11 of p=1 (above).
_ABORTS_FORGOTTEN = pytest.mark.parametrize(
    ("has_uncompacted_aborts", "removed", "aborted_left"),
    [
        # no delta that stays holds aborted writes: every aborted write of p=1 up to 10 forgotten
        (False, (), [(4, "p=2"), (11, "p=1")]),
        # one does (a streaming delta_x_y mixing write 5 with valid ones): only the removed write 3
        (True, (3,), [(4, "p=2"), (5, "p=1"), (11, "p=1")]),
        # one does and the cleaner removed none, or it did not say: nothing forgotten
        (True, (), [(3, "p=1"), (4, "p=2"), (5, "p=1"), (11, "p=1")]),
        (None, (), [(3, "p=1"), (4, "p=2"), (5, "p=1"), (11, "p=1")]),
    ],
    ids=["all-compacted", "some-removed", "none-removed", "not-told"],
)


@_ABORTS_FORGOTTEN
def test_hive_queue_sql_mark_cleaned_forgets_only_what_the_compaction_covered(
    backend23, has_uncompacted_aborts, removed, aborted_left
):
    """markCleaned on 2.3 (txn IDs): history 's'; COMPLETED_TXN_COMPONENTS <= highest of that
    partition; aborted TXN_COMPONENTS of that partition as the cleaner saw them (Hive 4's rule, not
    2.3's "all up to highest"); aborted txns left without components."""
    url, engine = backend23
    for txn_id, state in [(3, "a"), (4, "a"), (5, "a"), (11, "a")]:
        _txn(engine, txn_id, state)
    for txn, part in [(3, "p=1"), (4, "p=2"), (5, "p=1"), (11, "p=1")]:
        _sql(engine, "INSERT INTO TXN_COMPONENTS VALUES (:t, 'db', 't', :p, 'i')", t=txn, p=part)
    for txn, part in [(1, "p=1"), (2, "p=1"), (2, "p=2"), (12, "p=1")]:
        _sql(engine, "INSERT INTO COMPLETED_TXN_COMPONENTS VALUES (:t, 'db', 't', :p)", t=txn, p=part)
    compaction_id = _compact2(engine, partition="p=1")
    queue = HiveQueueSql(url)
    queue.claim("w-1")
    queue.set_compactor_state(compaction_id, txn_id=13, highest_txn_id=10)
    queue.mark_compacted(compaction_id, next_txn_id=14)
    queue.mark_cleaned(
        compaction_id, has_uncompacted_aborts=has_uncompacted_aborts, aborted_write_ids=removed
    )

    assert _sql(engine, "SELECT cc_id, cc_state, cc_highest_txn_id FROM COMPLETED_COMPACTIONS") == [
        (compaction_id, "s", 10)
    ]
    assert _sql(engine, "SELECT count(*) FROM COMPACTION_QUEUE") == [(0,)]
    assert sorted(_sql(engine, "SELECT ctc_txnid, ctc_partition FROM COMPLETED_TXN_COMPONENTS")) == [
        (2, "p=2"),
        (12, "p=1"),
    ]
    assert sorted(_sql(engine, "SELECT tc_txnid, tc_partition FROM TXN_COMPONENTS")) == aborted_left
    assert sorted(_sql(engine, "SELECT txn_id FROM TXNS")) == sorted({(t,) for t, _ in aborted_left})
    assert queue.get(compaction_id).state == "s"
    queue.close()


def test_hive_queue_sql_failed_entry_keeps_its_message(backend):
    url, engine = backend
    compaction_id = _compact2(engine)
    queue = HiveQueueSql(url)
    queue.claim("w-1")
    queue.mark_failed(compaction_id, "disk full")
    row = queue.get(compaction_id)
    assert (row.state, row.meta["error_message"]) == ("f", "disk full")
    with pytest.raises(NoSuchCompactionError):
        queue.mark_failed(compaction_id, "again")
    queue.close()


def test_hive_queue_sql_attempted_takes_the_next_queue_id(backend):
    url, engine = backend
    first = _compact2(engine)
    queue = HiveQueueSql(url)
    attempted = queue.record_attempted("db", "t", None, "a")
    assert attempted == first + 1
    assert queue.get(attempted).state == "a"
    assert _compact2(engine) == attempted + 1
    queue.close()


# --- the cleaner's readiness rule over the SQL queue ----------------------------------------------


def _hive2(open_txns, high_watermark, locks=()):
    info = T.GetOpenTxnsInfoResponse(
        txn_high_water_mark=high_watermark,
        open_txns=[T.TxnInfo(id=txn, state=T.TxnState.OPEN) for txn in open_txns],
    )
    return RecordedHmsConnection(
        {
            "get_open_txns_info": info,
            "show_locks": T.ShowLocksResponse(locks=list(locks)),
            # a claim looks up the table's own acidflow.compactor.hive31-names (none set here)
            "get_table": T.Table(
                dbName="db", tableName="t", parameters={}, partitionKeys=[], sd=T.StorageDescriptor()
            ),
        },
        unknown=HIVE4_ONLY | HIVE3_AND_LATER,
    )


def _ready_entry(url, engine, next_txn_id=14, commit_s=1000.0):
    compaction_id = _compact2(engine)
    queue = HiveQueueSql(url, clock=lambda: commit_s)
    queue.claim("w-1")
    queue.set_compactor_state(compaction_id, txn_id=next_txn_id - 1, highest_txn_id=10)
    queue.mark_compacted(compaction_id, next_txn_id=next_txn_id)
    queue.close()
    return compaction_id


def _lock(lock_id, txn_id, acquired_ms, partition=None):
    return T.ShowLocksResponseElement(
        lockid=lock_id,
        dbname="db",
        tablename="t",
        partname=partition,
        state=T.LockState.ACQUIRED,
        type=T.LockType.SHARED_READ,
        txnid=txn_id,
        lastheartbeat=acquired_ms,
        acquiredat=acquired_ms,
        user="hive",
        hostname="h",
    )


@pytest.mark.parametrize(
    ("open_txns", "locks", "ready"),
    [
        ((), (), True),
        ((20,), (), True),
        ((12,), (), False),
        ((), (_lock(1, 12, 999_000),), False),
        ((), (_lock(1, 15, 1_001_000),), True),
        ((), (_lock(1, 0, 999_000),), False),
        ((), (_lock(1, 0, 1_001_000),), True),
    ],
    ids=[
        "nothing-open",
        "only-a-later-txn-open",
        "an-older-txn-open",
        "lock-of-an-older-txn",
        "lock-of-a-later-txn",
        "txnless-lock-before-commit",
        "txnless-lock-after-commit",
    ],
)
def test_hive_ready_to_clean_waits_for_older_txns_and_locks(backend, open_txns, locks, ready):
    url, engine = backend
    compaction_id = _ready_entry(url, engine, next_txn_id=14, commit_s=1000.0)
    store = HiveMetastore(_hive2(open_txns, 20, locks), queue_sql=HiveQueueSql(url), clock=lambda: 2000.0)
    found = [c.id for c in store.find_ready_to_clean()]
    assert found == ([compaction_id] if ready else [])
    store.close()


def test_hive_ready_to_clean_honours_retention(backend):
    url, engine = backend
    _ready_entry(url, engine, commit_s=1000.0)
    store = HiveMetastore(_hive2((), 20), queue_sql=HiveQueueSql(url), clock=lambda: 1100.0)
    assert store.find_ready_to_clean(retention_seconds=200) == []
    assert len(store.find_ready_to_clean(retention_seconds=50)) == 1
    store.close()


def test_hive_claimed_compaction_on_hive2_carries_hive31_names(backend):
    url, engine = backend
    compaction_id = _compact2(engine, kind="i")
    store = HiveMetastore(_hive2((), 5), queue_sql=HiveQueueSql(url))
    claimed = store.find_next_to_compact("w-1")
    assert (claimed.id, claimed.state, claimed.compaction_type.value) == (
        compaction_id,
        CompactionState.WORKING,
        "minor",
    )
    assert claimed.properties == {HIVE31_NAMES_PROPERTY: "true"}
    assert store.find_next_to_compact("w-2") is None
    store.close()


def test_hive_ready_to_clean_backs_off_after_a_failed_cleaning(backend):
    """Hive 2.3 has no CQ_RETRY_RETENTION: the back-off is kept in CQ_META_INFO and honoured."""
    url, engine = backend
    compaction_id = _ready_entry(url, engine, commit_s=1000.0)
    store = HiveMetastore(_hive2((), 20), queue_sql=HiveQueueSql(url), clock=lambda: 1400.0)
    assert [c.id for c in store.find_ready_to_clean()] == [compaction_id]

    store.set_cleaner_retry_retention(compaction_id, 500, "disk full")

    info = store.get_compaction(compaction_id)
    assert (info.state, info.retry_retention, info.error_message) == (
        CompactionState.READY_FOR_CLEANING,
        500.0,
        "disk full",
    )
    assert store.find_ready_to_clean() == []  # 1400 < 1000 + 500
    assert [c.id for c in store.find_ready_to_clean(now=1501.0)] == [compaction_id]
    store.close()


def test_hive_retry_retention_of_an_entry_not_ready_for_cleaning_raises_and_changes_nothing(backend):
    url, engine = backend
    compaction_id = _compact2(engine)
    store = HiveMetastore(_hive2((), 20), queue_sql=HiveQueueSql(url))
    with pytest.raises(CompactionStateError, match=r"Cannot retry cleaning compaction 1 in state 'i'"):
        store.set_cleaner_retry_retention(compaction_id, 300, "boom")
    assert _sql(engine, "SELECT cq_state, cq_meta_info FROM COMPACTION_QUEUE") == [("i", None)]
    store.close()


# --- Hive 3.1: write IDs, catalogs, the VERSION row -------------------------------------------------


def test_hive_queue_sql_detects_the_schema_from_the_version_row(backend31):
    # schematool's 3.1.0 tables have no catalog columns (CQ_CATALOG ... came with Hive 4's schema)
    assert HiveQueueSql(backend31[0]).schema == HiveQueueSchema("3.1.0", write_ids=True, catalog=False)


def test_hive_queue_sql_without_a_version_row_is_told_by_its_columns(backend23):
    # The 2.3 fixture has no VERSION table (a 2.3 HMS with autoCreateAll may never record one).
    assert HiveQueueSql(backend23[0]).schema == HiveQueueSchema(None, write_ids=False, catalog=False)


@pytest.mark.parametrize(
    ("version", "columns", "problem"),
    [
        ("4.0.0", ["cq_highest_write_id"], r"schema version '4.0.0' is not supported by the SQL queue"),
        ("1.2.1", ["cq_highest_txn_id"], r"schema version '1.2.1' is not supported"),
        (
            "3.1.0",
            ["cq_highest_txn_id"],
            r"VERSION says '3.1.0' but COMPACTION_QUEUE has no cq_highest_write_id",
        ),
        (None, ["cq_id"], r"no VERSION row and COMPACTION_QUEUE is not Hive 2.3's or 3.1's"),
    ],
    ids=["hive-4", "hive-1", "version-and-columns-disagree", "neither"],
)
def test_queue_schema_for_unsupported_layouts_raises_naming_the_version(version, columns, problem):
    with pytest.raises(HiveMetastoreCapabilityError, match=problem):
        queue_schema_for(version, columns, "postgresql://h/metastore")


@_ABORTS_FORGOTTEN
def test_hive31_queue_sql_mark_cleaned_forgets_by_write_id(
    backend31, has_uncompacted_aborts, removed, aborted_left
):
    """Hive 3.1 compares write IDs: CTC_WRITEID <= highest; aborted TC_WRITEID as the cleaner saw
    them (Hive 4's rule: 3.1's "every aborted write up to highest" let a streaming batch's aborted
    rows turn visible, found by the HMS fault soak)."""
    url, engine = backend31
    for txn_id, state in [(30, "a"), (31, "a"), (32, "a"), (40, "a")]:
        _txn(engine, txn_id, state)
    # txn -> write ID of db.t: 30 -> 3, 31 -> 4 (other partition), 32 -> 5, 40 -> 11 (above)
    for txn, part, write_id in [(30, "p=1", 3), (31, "p=2", 4), (32, "p=1", 5), (40, "p=1", 11)]:
        _sql(
            engine,
            "INSERT INTO TXN_COMPONENTS (tc_txnid, tc_database, tc_table, tc_partition, "
            "tc_operation_type, tc_writeid) VALUES (:t, 'db', 't', :p, 'i', :w)",
            t=txn,
            p=part,
            w=write_id,
        )
    for txn, part, write_id in [(20, "p=1", 1), (21, "p=1", 2), (21, "p=2", 2), (50, "p=1", 12)]:
        _sql(
            engine,
            "INSERT INTO COMPLETED_TXN_COMPONENTS (ctc_txnid, ctc_database, ctc_table, "
            "ctc_partition, ctc_writeid, ctc_update_delete) VALUES (:t, 'db', 't', :p, :w, 'N')",
            t=txn,
            p=part,
            w=write_id,
        )
    compaction_id = _compact2(engine, partition="p=1")
    queue = HiveQueueSql(url)
    queue.claim("w-1")
    queue.set_compactor_state(compaction_id, txn_id=60, highest_txn_id=10)  # write ID 10 of db.t
    queue.mark_compacted(compaction_id, next_txn_id=61)
    queue.mark_cleaned(
        compaction_id, has_uncompacted_aborts=has_uncompacted_aborts, aborted_write_ids=removed
    )

    assert _sql(engine, "SELECT cc_id, cc_state, cc_highest_write_id FROM COMPLETED_COMPACTIONS") == [
        (compaction_id, "s", 10)
    ]
    assert sorted(_sql(engine, "SELECT ctc_txnid, ctc_partition FROM COMPLETED_TXN_COMPONENTS")) == [
        (21, "p=2"),
        (50, "p=1"),
    ]
    by_write_id = {3: 30, 4: 31, 5: 32, 11: 40}
    left = sorted((by_write_id[w], p) for w, p in aborted_left)
    assert sorted(_sql(engine, "SELECT tc_txnid, tc_partition FROM TXN_COMPONENTS")) == left
    assert sorted(_sql(engine, "SELECT txn_id FROM TXNS")) == sorted({(t,) for t, _ in left})
    queue.close()


def test_hive31_partition_changes_are_writes_under_newly_valid_ids_and_aborted_components(backend31):
    """The initiator's skip: committed writes under write IDs in (5, 8] or 2 (open at the last
    cycle), and the partitions of aborted transactions' components (not of open ones)."""
    url, engine = backend31
    for txn_id, state in [(40, "a"), (41, "o")]:
        _txn(engine, txn_id, state)
    for txn, part, write_id in [(40, "p=5", 10), (41, "p=6", 11)]:
        _sql(
            engine,
            "INSERT INTO TXN_COMPONENTS (tc_txnid, tc_database, tc_table, tc_partition, "
            "tc_operation_type, tc_writeid) VALUES (:t, 'db', 't', :p, 'i', :w)",
            t=txn,
            p=part,
            w=write_id,
        )
    rows = [(20, "p=1", 2), (21, "p=2", 5), (22, "p=3", 7), (23, "p=4", 9), (24, "p=0", 7), (25, "p=7", None)]
    for txn, part, write_id in rows:
        _sql(
            engine,
            "INSERT INTO COMPLETED_TXN_COMPONENTS (ctc_txnid, ctc_database, ctc_table, "
            "ctc_partition, ctc_writeid, ctc_update_delete) VALUES (:t, 'db', :tbl, :p, :w, 'N')",
            t=txn,
            tbl="other" if part == "p=0" else "t",
            p=part,
            w=write_id,
        )
    queue = HiveQueueSql(url)
    try:
        # p=7's row has no write ID (a 2.x-era row): it cannot be placed in time, so it is listed
        assert queue.partition_changes("db", "t", NewlyValidWriteIds(5, 8, (2,))) == (
            frozenset({"p=1", "p=3", "p=7"}),
            frozenset({"p=5"}),
        )
        assert queue.partition_changes("db", "t", NewlyValidWriteIds(9, 9)) == (
            frozenset({"p=7"}),
            frozenset({"p=5"}),
        )
    finally:
        queue.close()


def test_hive23_partition_changes_are_by_txn_id(backend23):
    """Hive 2.3 has no write IDs: COMPLETED_TXN_COMPONENTS by CTC_TXNID (its write IDs are txn IDs)."""
    url, engine = backend23
    for txn, part in [(3, "p=1"), (8, "p=2"), (8, None)]:
        _sql(engine, "INSERT INTO COMPLETED_TXN_COMPONENTS VALUES (:t, 'db', 't', :p)", t=txn, p=part)
    queue = HiveQueueSql(url)
    try:
        assert queue.partition_changes("db", "t", NewlyValidWriteIds(4, 9)) == (
            frozenset({"p=2", None}),
            frozenset(),
        )
    finally:
        queue.close()


def test_hive31_attempted_history_row_is_written_without_a_catalog(backend31):
    url, engine = backend31
    queue = HiveQueueSql(url)
    attempted = queue.record_attempted("db", "t", None, "a")
    assert _sql(engine, "SELECT cc_id, cc_database, cc_table, cc_state FROM COMPLETED_COMPACTIONS") == [
        (attempted, "db", "t", "a")
    ]
    queue.close()


def test_hive31_compaction_round_trip_through_the_adapter(backend31):
    """The adapter on a Hive 3 server (write IDs, no worker calls) drives the 3.1 queue by SQL."""
    url, engine = backend31
    compaction_id = _compact2(engine)
    info = T.GetOpenTxnsInfoResponse(txn_high_water_mark=60, open_txns=[])
    connection = RecordedHmsConnection(
        {
            "get_valid_write_ids": T.NoSuchObjectException("acidflow_probe.no_such_table"),
            "get_open_txns_info": info,
            "show_locks": T.ShowLocksResponse(locks=[]),
            "get_table": T.Table(
                dbName="db", tableName="t", parameters={}, partitionKeys=[], sd=T.StorageDescriptor()
            ),
        },
        unknown=HIVE4_ONLY,
    )
    store = HiveMetastore(connection, queue_sql=HiveQueueSql(url, clock=lambda: 2000.0), clock=lambda: 2000.0)
    claimed = store.find_next_to_compact("w-1")
    assert (claimed.id, claimed.properties) == (compaction_id, {HIVE31_NAMES_PROPERTY: "true"})
    store.update_compactor_state(compaction_id, txn_id=60, highest_write_id=9)
    store.mark_compacted(compaction_id)
    assert _sql(engine, "SELECT cq_state, cq_highest_write_id FROM COMPACTION_QUEUE") == [("r", 9)]
    [ready] = store.find_ready_to_clean(now=2000.0)
    assert (ready.id, ready.highest_write_id, ready.next_txn_id) == (compaction_id, 9, 61)
    store.mark_cleaned(compaction_id)
    assert store.get_compaction(compaction_id).state is CompactionState.SUCCEEDED
    store.close()


@pytest.fixture
def backend4(postgres_schema_url):
    engine = _load(postgres_schema_url, "4")
    yield postgres_schema_url, engine
    engine.dispose()


@pytest.mark.parametrize(
    ("has_uncompacted_aborts", "removed", "aborted_left"),
    [
        # no delta that stays holds aborted writes: every aborted write of p=1 up to 10 forgotten
        (False, (), [(31, "p=2"), (40, "p=1")]),
        # one does: only the aborted writes the cleaner removed (write 3), not write 5
        (True, (3,), [(31, "p=2"), (32, "p=1"), (40, "p=1")]),
        # one does and the cleaner removed none: nothing forgotten
        (True, (), [(30, "p=1"), (31, "p=2"), (32, "p=1"), (40, "p=1")]),
    ],
    ids=["all-compacted", "some-removed", "none-removed"],
)
def test_hive4_mark_cleaned_by_sql_forgets_what_markcleanedfunction_forgets(
    backend4, has_uncompacted_aborts, removed, aborted_left
):
    """Hive 4.0.1's MarkCleanedFunction: history 's', the entry and the partition's abort-cleanup
    entries ('c') deleted, COMPLETED_TXN_COMPONENTS up to the highest write ID, aborted
    TXN_COMPONENTS up to it or only the removed write IDs (hasUncompactedAborts / writeIds)."""
    url, engine = backend4
    for txn_id in (30, 31, 32, 40):
        _sql(
            engine,
            'INSERT INTO "TXNS" ("TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER", '
            "\"TXN_HOST\") VALUES (:t, 'a', 0, 0, 'u', 'h')",
            t=txn_id,
        )
    for txn, part, write_id in [(30, "p=1", 3), (31, "p=2", 4), (32, "p=1", 5), (40, "p=1", 11)]:
        _sql(
            engine,
            'INSERT INTO "TXN_COMPONENTS" ("TC_TXNID", "TC_DATABASE", "TC_TABLE", "TC_PARTITION", '
            "\"TC_OPERATION_TYPE\", \"TC_WRITEID\") VALUES (:t, 'db', 't', :p, 'i', :w)",
            t=txn,
            p=part,
            w=write_id,
        )
    for txn, part, write_id in [(20, "p=1", 1), (21, "p=2", 2), (50, "p=1", 12)]:
        _sql(
            engine,
            'INSERT INTO "COMPLETED_TXN_COMPONENTS" ("CTC_TXNID", "CTC_DATABASE", "CTC_TABLE", '
            "\"CTC_PARTITION\", \"CTC_WRITEID\", \"CTC_UPDATE_DELETE\") VALUES (:t, 'db', 't', :p, :w, 'N')",
            t=txn,
            p=part,
            w=write_id,
        )
    # 7: the compaction, ready for cleaning; 8 and 9: Hive 4's abort-cleanup entries of p=1 and p=2
    for cq_id, part, state, kind, highest in [
        (7, "p=1", "r", "a", 10),
        (8, "p=1", "i", "c", None),
        (9, "p=2", "i", "c", None),
    ]:
        _sql(
            engine,
            'INSERT INTO "COMPACTION_QUEUE" ("CQ_ID", "CQ_DATABASE", "CQ_TABLE", "CQ_PARTITION", "CQ_STATE", '
            '"CQ_TYPE", "CQ_HIGHEST_WRITE_ID", "CQ_NEXT_TXN_ID") VALUES (:i, \'db\', \'t\', :p, :s, :k, :h, 45)',
            i=cq_id,
            p=part,
            s=state,
            k=kind,
            h=highest,
        )
    queue = HiveQueueSql(url)
    assert queue.is_hive4
    queue.hive4_mark_cleaned(7, has_uncompacted_aborts=has_uncompacted_aborts, aborted_write_ids=removed)

    assert _sql(engine, 'SELECT "CC_ID", "CC_STATE", "CC_HIGHEST_WRITE_ID" FROM "COMPLETED_COMPACTIONS"') == [
        (7, "s", 10)
    ]
    assert _sql(engine, 'SELECT "CQ_ID" FROM "COMPACTION_QUEUE"') == [(9,)]
    assert sorted(_sql(engine, 'SELECT "CTC_TXNID", "CTC_PARTITION" FROM "COMPLETED_TXN_COMPONENTS"')) == [
        (21, "p=2"),
        (50, "p=1"),
    ]
    assert sorted(_sql(engine, 'SELECT "TC_TXNID", "TC_PARTITION" FROM "TXN_COMPONENTS"')) == aborted_left
    with pytest.raises(NoSuchCompactionError):
        queue.hive4_mark_cleaned(7, has_uncompacted_aborts=False)  # once
    queue.close()
