"""A full disk under the metastore is a disk error (``DiskFullError``), not a metastore or lock-store one."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError

from acid_core.errors import DiskFullError, MetastoreError, StorageError
from acid_core.metastore.sql.metastore import translate_db_error


def _full_sqlite_error(tmp_path) -> tuple[sa.URL, OperationalError]:
    # SQLite's page limit raises the very error a full disk does: SQLITE_FULL, "database or disk is full".
    url = sa.make_url(f"sqlite:///{tmp_path}/metastore.sqlite")
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text("CREATE TABLE filler (payload BLOB)"))
        with engine.begin() as connection:
            connection.exec_driver_sql("PRAGMA max_page_count = 3")
            with pytest.raises(OperationalError) as info:
                connection.execute(sa.text("INSERT INTO filler SELECT randomblob(65536)"))
    finally:
        engine.dispose()
    return url, info.value


def test_translate_db_error_sqlite_full_is_disk_full_naming_the_file(tmp_path):
    url, error = _full_sqlite_error(tmp_path)
    translated = translate_db_error("open lock store", url, error)
    assert isinstance(translated, DiskFullError)
    assert isinstance(translated, StorageError)
    assert str(translated) == (
        f"Disk full: metastore operation 'open lock store' could not write '{tmp_path}/metastore.sqlite' "
        "(OperationalError: database or disk is full); expected free space on that disk; hint: free space "
        "(or raise the quota) and rerun; nothing was committed"
    )


def test_translate_db_error_other_failures_stay_metastore_errors(tmp_path):
    url = sa.make_url(f"sqlite:///{tmp_path}/metastore.sqlite")
    engine = sa.create_engine(url)
    try:
        with pytest.raises(OperationalError) as info, engine.connect() as connection:
            connection.execute(sa.text("SELECT * FROM no_such_table"))
    finally:
        engine.dispose()
    translated = translate_db_error("list", url, info.value)
    assert type(translated) is MetastoreError
    assert "no such table: no_such_table" in str(translated)
