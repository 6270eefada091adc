"""The Alembic migrations: they build exactly the models' schema, run once, and open idempotently."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from acid_core.errors import MetastoreError
from acid_core.metastore import SqlMetastore, open_metastore
from acid_core.metastore.models import Base
from acid_core.metastore.store import _MIGRATIONS_DIR

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
            r"Metastore operation 'open' failed .*OperationalError",
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
