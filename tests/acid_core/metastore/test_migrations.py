"""The Alembic migrations: they build exactly the models' schema, run once, and open idempotently."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from acid_core.errors import MetastoreError
from acid_core.metastore import Column, SqlMetastore, TableDefinition, open_metastore
from acid_core.metastore.sql.engine import _MIGRATIONS_DIR, SCHEMA_HEAD
from acid_core.metastore.sql.lock_store import SqlLockStore
from acid_core.metastore.sql.models import Base

_PARAMS = [
    pytest.param("sqlite", marks=pytest.mark.backend("sqlite")),
    pytest.param("postgres", marks=[pytest.mark.backend("postgres"), pytest.mark.integration("postgres")]),
]


@pytest.fixture(params=_PARAMS)
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/metastore.sqlite"
    return request.getfixturevalue("postgres_schema_url")


def _head() -> str | None:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config).get_current_head()


def test_upgrade_head_matches_the_models(url):
    SqlMetastore(url).close()
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == _head()
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_reopen_is_idempotent_and_keeps_data(url):
    with SqlMetastore(url) as first:
        txn = first.open_txn()
        first.commit_txn(txn)
    with SqlMetastore(url) as second:
        assert second.open_txn() == txn + 1
        assert second.list_databases() == ["default"]


def test_open_metastore_defaults_to_a_hidden_sqlite_file_in_wal_mode(tmp_path):
    warehouse = tmp_path / "wh"
    with open_metastore(None, str(warehouse)) as store:
        assert store.url == f"sqlite:///{warehouse / '.acidflow' / 'metastore.sqlite'}"
        assert store.get_database("default").location == str(warehouse)
        with store._engine.connect() as connection:  # per-connection pragmas
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    raw = sqlite3.connect(warehouse / ".acidflow" / "metastore.sqlite")
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("not a url", r"Metastore operation 'open' failed on 'not a url': not a SQLAlchemy URL"),
        (
            "postgresql+psycopg2://postgres@127.0.0.1:1/x",
            # a server that does not answer is the service failing, not the metastore (issue 24)
            r"PostgreSQL \(the metastore database '.*:1/x'\) could not be reached during 'open': "
            r"OperationalError: .*Connection refused; .*acidflow stops this run",
        ),
    ],
    ids=["garbage", "unreachable"],
)
def test_open_failures_are_metastore_errors(url, match):
    with pytest.raises(MetastoreError, match=match) as info:
        SqlMetastore(url)
    assert info.value.__cause__ is not None


def test_unknown_revision_is_a_metastore_error(tmp_path):
    url = f"sqlite:///{tmp_path}/future.sqlite"
    SqlMetastore(url).close()
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffff'")
    engine.dispose()
    with pytest.raises(MetastoreError, match=r"Metastore operation 'migrate' failed .*ffff"):
        SqlMetastore(url)


# ---------------------------------------------------------------------------------------------
# Revision 0002: the lock tables join the Alembic history; MIN_HISTORY_LEVEL
# ---------------------------------------------------------------------------------------------

_LOCK_TABLES = {"ACIDFLOW_LOCK_SESSIONS", "ACIDFLOW_LOCKS"}


def _upgrade_to(url: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    engine.dispose()


def _legacy_lock_metadata() -> sa.MetaData:
    # The DDL lock_store ran before revision 0002 (LOCK_METADATA.create_all), written out here.
    legacy = sa.MetaData()
    sa.Table(
        "ACIDFLOW_LOCK_SESSIONS",
        legacy,
        sa.Column("LS_SESSION_ID", sa.String(64), primary_key=True),
        sa.Column("LS_HOST", sa.String(255), nullable=False),
        sa.Column("LS_STARTED", sa.BigInteger, nullable=False),
        sa.Column("LS_LAST_HEARTBEAT", sa.BigInteger, nullable=False),
        sa.Column("LS_TIMEOUT_MS", sa.BigInteger, nullable=False),
    )
    sa.Table(
        "ACIDFLOW_LOCKS",
        legacy,
        sa.Column(
            "L_ID", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("L_SESSION_ID", sa.String(64), nullable=False),
        sa.Column("L_TOKEN", sa.String(64), nullable=False),
        sa.Column("L_OBJECT", sa.String(1024), nullable=False),
        sa.Column("L_DB", sa.String(128), nullable=False),
        sa.Column("L_TABLE", sa.String(256), nullable=False),
        sa.Column("L_MODE", sa.String(1), nullable=False),
        sa.Column("L_WAITING", sa.Boolean, nullable=False),
        sa.Column("L_HOLDER", sa.String(256), nullable=False),
        sa.Column("L_HOST", sa.String(255), nullable=False),
        sa.Column("L_TXN_ID", sa.BigInteger, nullable=True),
        sa.Column("L_ACQUIRED_AT", sa.BigInteger, nullable=False),
        sa.Index("IX_ACIDFLOW_LOCKS_OBJECT", "L_OBJECT"),
        sa.Index("IX_ACIDFLOW_LOCKS_TABLE", "L_DB", "L_TABLE"),
        sa.Index("IX_ACIDFLOW_LOCKS_SESSION", "L_SESSION_ID"),
        sa.Index("IX_ACIDFLOW_LOCKS_TOKEN", "L_TOKEN"),
    )
    return legacy


def test_revisions_chain_0001_0002_then_0006():
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    script = ScriptDirectory.from_config(config)
    assert script.get_revision("0002").down_revision == "0001"
    chain = [r.revision for r in script.iterate_revisions(script.get_current_head(), "0002")]
    assert "0006" in chain
    assert "0004" in chain  # the backlog samples (issue 15), chained after 0006 at the merge


def test_the_lock_store_alone_migrates_a_fresh_database_to_head(url):
    store = SqlLockStore(url)
    store.close()
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == _head()
        assert compare_metadata(context, Base.metadata) == []
        names = set(sa.inspect(connection).get_table_names())
    engine.dispose()
    assert {*_LOCK_TABLES, "MIN_HISTORY_LEVEL", "TXNS"} <= names


def test_upgrade_adopts_lock_tables_created_before_0002_and_keeps_their_rows(url):
    _upgrade_to(url, "0001")
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        _legacy_lock_metadata().create_all(connection)
        connection.exec_driver_sql("INSERT INTO \"ACIDFLOW_LOCK_SESSIONS\" VALUES ('s1', 'h', 1, 2, 30000)")
        connection.exec_driver_sql(
            'INSERT INTO "ACIDFLOW_LOCKS" ("L_SESSION_ID", "L_TOKEN", "L_OBJECT", "L_DB", "L_TABLE", '
            '"L_MODE", "L_WAITING", "L_HOLDER", "L_HOST", "L_TXN_ID", "L_ACQUIRED_AT") '
            "VALUES ('s1', 't1', 'db.t', 'db', 't', 'x', false, 'me', 'h', NULL, 3)"
        )
    engine.dispose()
    SqlMetastore(url).close()
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == _head()
        assert compare_metadata(context, Base.metadata) == []
        rows = connection.exec_driver_sql('SELECT "L_OBJECT", "L_MODE" FROM "ACIDFLOW_LOCKS"').all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [("db.t", "x")]


def test_upgrade_gives_txns_open_before_0002_the_lowest_txn_as_their_history_level(url):
    # Nothing was ever deleted before 0002, so the lowest TXNS row protects every write-ID row.
    _upgrade_to(url, "0001")
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO \"TXNS\" VALUES (3, 'c', 0, 0, 'u', 'h', 0), (4, 'o', 0, 0, 'u', 'h', 0), "
            "(5, 'a', 0, 0, 'u', 'h', 0), (6, 'o', 0, 0, 'u', 'h', 0)"
        )
    engine.dispose()
    SqlMetastore(url).close()
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            'SELECT "MHL_TXNID", "MHL_MIN_OPEN_TXNID" FROM "MIN_HISTORY_LEVEL" ORDER BY 1'
        ).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [(4, 3), (6, 3)]


def test_downgrade_to_0001_removes_what_0002_added(url):
    SqlMetastore(url).close()
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0001")
    with engine.connect() as connection:
        names = set(sa.inspect(connection).get_table_names())
        assert MigrationContext.configure(connection).get_current_revision() == "0001"
    engine.dispose()
    assert not names & {*_LOCK_TABLES, "MIN_HISTORY_LEVEL"}
    assert "TXNS" in names


# ---------------------------------------------------------------------------------------------
# Revision 0003: reader leases store their ValidTxnList
# ---------------------------------------------------------------------------------------------


def test_revision_0003_follows_0004():
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(config).get_revision("0003").down_revision == "0004"


def test_upgrade_to_0003_keeps_leases_taken_before_without_a_txn_list(url):
    _upgrade_to(url, "0002")
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            'INSERT INTO "READER_LEASES" ("RL_DATABASE", "RL_TABLE", "RL_WRITE_ID_LIST", "RL_OWNER", '
            "\"RL_CREATED\", \"RL_EXPIRES\") VALUES ('default', 't', 'default.t:3:9223372036854775807::', "
            "'spark', 1000, 4000000000000)"
        )
    engine.dispose()
    with SqlMetastore(url) as store:
        [lease] = store.list_leases()
        assert (lease.write_ids.to_string(), lease.txns) == ("default.t:3:9223372036854775807::", None)
        store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))
        assert store.take_lease("t", 60).txns is not None


def test_downgrade_0003_drops_the_txn_list_and_keeps_the_leases(url):
    with SqlMetastore(url) as store:
        store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))
        store.take_lease("t", 60)
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0004")
    with engine.connect() as connection:
        columns = {c["name"] for c in sa.inspect(connection).get_columns("READER_LEASES")}
        count = connection.exec_driver_sql('SELECT COUNT(*) FROM "READER_LEASES"').scalar()
    engine.dispose()
    assert "RL_TXN_LIST" not in columns
    assert count == 1


def test_schema_head_constant_is_alembics_head():
    """``SCHEMA_HEAD`` lets an up-to-date database open without Alembic: it must name the real head."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    assert ScriptDirectory.from_config(config).get_current_head() == SCHEMA_HEAD


def test_opening_a_database_at_head_does_not_import_alembic(tmp_path):
    """A database already at head is opened with one query: Alembic stays unimported (start-up cost)."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'm.sqlite'}"
    warehouse = str(tmp_path / "wh")
    open_metastore(url, warehouse).close()
    code = (
        "import sys; from acid_core.metastore import open_metastore; "
        f"m = open_metastore({url!r}, {warehouse!r}); m.close(); "
        "print(sorted(n for n in sys.modules if n == 'alembic' or n.startswith('alembic.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
