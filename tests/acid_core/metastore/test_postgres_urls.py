"""PostgreSQL URLs as users write them: ``postgresql://`` and ``postgresql+psycopg2://`` both open.

SQLAlchemy 2.1 maps a bare ``postgresql://`` to psycopg (3), which is not what requirements.txt
pins; ``resolve_postgres_driver`` gives such a URL the installed driver. Each form is opened for
real (metastore, SQL lock manager and the ``acidflow`` command) against the local PostgreSQL.
"""

from __future__ import annotations

import importlib.util

import pytest
import sqlalchemy as sa

from acid_core.cli import main
from acid_core.errors import MissingDependencyError
from acid_core.locks import LockMode, LockRequest, parse_lock_object
from acid_core.locks.sql import SqlLockManager
from acid_core.metastore import SqlMetastore
from acid_core.metastore.sql.metastore import resolve_postgres_driver

pytestmark = [pytest.mark.integration("postgres"), pytest.mark.backend("postgres")]

FORMS = {"bare": "postgresql://", "psycopg2": "postgresql+psycopg2://"}


def _as_form(url: str, form: str) -> str:
    assert url.startswith("postgresql+psycopg2://")
    return FORMS[form] + url.removeprefix("postgresql+psycopg2://")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u@h/db", "postgresql+psycopg2://u@h/db"),
        ("postgresql+psycopg2://u@h/db", "postgresql+psycopg2://u@h/db"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("sqlite:///m.sqlite", "sqlite:///m.sqlite"),
    ],
    ids=["bare", "psycopg2", "psycopg3-named", "sqlite"],
)
def test_resolve_postgres_driver_bare_url_gets_installed_driver(given, expected):
    assert importlib.util.find_spec("psycopg2") is not None  # the pinned driver
    assert str(resolve_postgres_driver(sa.make_url(given))) == expected


def test_open_metastore_named_driver_missing_raises_missing_dependency(tmp_path):
    with pytest.raises(MissingDependencyError, match=r"the database driver 'postgresql\+pg8000' is required"):
        SqlMetastore("postgresql+pg8000://postgres@127.0.0.1/nothing", warehouse=str(tmp_path))


@pytest.mark.parametrize("form", list(FORMS))
def test_sql_metastore_postgres_url_form_opens_and_commits(postgres_schema_url, tmp_path, form):
    url = _as_form(postgres_schema_url, form)
    with SqlMetastore(url, warehouse=str(tmp_path)) as metastore:
        txn_id = metastore.open_txn()
        metastore.commit_txn(txn_id)
        assert metastore.dialect == "postgresql"
    with SqlMetastore(postgres_schema_url, warehouse=str(tmp_path)) as again:
        assert again.get_txn(txn_id).state.value == "committed"


@pytest.mark.parametrize("form", list(FORMS))
def test_sql_lock_manager_postgres_url_form_grants_and_shows(postgres_schema_url, form):
    manager = SqlLockManager(_as_form(postgres_schema_url, form))
    try:
        handle = manager.acquire(
            [LockRequest(parse_lock_object("db.t"), LockMode.EXCLUSIVE)], holder="me", retries=0
        )
        assert [str(i.object) for i in manager.show()] == ["db.t"]
        manager.release(handle)
    finally:
        manager.close()


@pytest.mark.parametrize("form", list(FORMS))
def test_cli_sql_postgres_url_form_creates_and_reads(postgres_schema_url, tmp_path, capsys, form):
    url = _as_form(postgres_schema_url, form)
    warehouse = str(tmp_path / "wh")
    code = main(
        [
            "sql",
            "--metastore",
            url,
            "--warehouse",
            warehouse,
            "CREATE TABLE t (a INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
            "INSERT INTO t VALUES (7)",
            "SELECT a FROM t",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "OK: 1 row(s) inserted into default.t" in err
    assert out.split() == ["a", "7"]
