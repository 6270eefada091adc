"""The SQL metastore's database plumbing: engines, the Alembic upgrade, and error translation.

    create_engine_for_url(url)  PostgreSQL at READ COMMITTED; SQLite in WAL with BEGIN IMMEDIATE
    upgrade_schema(engine)      ``alembic upgrade head``, serialized between processes
    translate_db_error(...)     SQLAlchemyError -> MetastoreError / DiskFullError / ReadOnlyStorageError /
                                MetastoreDatabaseUnavailableError (PostgreSQL went away; one line)

Shared by ``SqlMetastore`` and the SQL lock store (``sql.lock_store``).
Not here: the metastore's tables and rules (``sql`` and its parts).
Errors: ``translate_db_error`` builds the ``AcidError``; the others raise SQLAlchemy's or Alembic's.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import importlib.util
import os
import select
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import StaticPool

from acid_core.errors import (
    AcidError,
    DiskFullError,
    MetastoreDatabaseUnavailableError,
    MetastoreError,
    MissingDependencyError,
    ReadOnlyStorageError,
)

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Engine
    from sqlalchemy.exc import SQLAlchemyError


_MIGRATIONS_DIR = Path(__file__).with_name("migrations")

SCHEMA_HEAD = "0012"
"""The newest Alembic revision in ``migrations/versions`` (a test checks it against Alembic's head).

A database already at this revision is opened without importing Alembic (about 0.2 s of every
command's start-up); any other revision goes through ``alembic upgrade head``.
"""


class SchemaRevisionError(Exception):
    """Alembic could not bring the database to head (e.g. a revision this code does not know)."""


# Any constant works; it only has to be the same in every process that migrates one database.
_MIGRATION_LOCK_KEY = 0x41C1DF10


_SQLITE_BUSY_TIMEOUT_MS = 30_000

# A network partition must not hang a call (the kernel's defaults: ~2 min for a SYN, ~15 min for
# unanswered data, 2 h before a keepalive): libpq's connection settings bound both, unless the URL
# sets them. A partitioned session the server still holds (idle in transaction, its row locks
# taken) is ended by the server after ``idle_in_transaction_session_timeout``.
POSTGRES_NETWORK_SETTINGS: dict[str, int] = {
    "connect_timeout": 10,  # seconds per connection attempt
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 3,
    "keepalives_count": 3,
    "tcp_user_timeout": 20_000,  # ms: data unacknowledged this long breaks the connection
}
POSTGRES_IDLE_IN_TRANSACTION_TIMEOUT_MS = 120_000


@functools.cache
def _alembic_config() -> tuple[Config, str | None]:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS_DIR))
    return config, ScriptDirectory.from_config(config).get_current_head()


def _is_sqlite_memory(url: sa.URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


_POSTGRES_DRIVERS = ("psycopg2", "psycopg")  # the installed one wins; psycopg2 is requirements.txt's


def resolve_postgres_driver(url: sa.URL) -> sa.URL:
    """Give a bare ``postgresql://`` URL a driver that is installed; other URLs are returned as is.

    SQLAlchemy 2.1 maps a bare ``postgresql://`` to psycopg (3); users write that form, while the
    pinned driver is psycopg2. A URL that names its driver (``postgresql+psycopg2://``) is kept.

    Args:
        url: a parsed SQLAlchemy URL.

    Returns:
        The URL, with ``+psycopg2`` (or ``+psycopg``) added when it had no driver.

    Raises:
        MissingDependencyError: a bare PostgreSQL URL and neither psycopg2 nor psycopg installed.

    >>> str(resolve_postgres_driver(sa.make_url("sqlite:///m.db")))
    'sqlite:///m.db'
    """
    if url.drivername != "postgresql":
        return url
    for driver in _POSTGRES_DRIVERS:
        if importlib.util.find_spec(driver) is not None:
            return url.set(drivername=f"postgresql+{driver}")
    raise MissingDependencyError("psycopg2-binary (or psycopg)", "a postgresql:// metastore", "postgres")


def create_engine_for_url(url: sa.URL) -> Engine:
    """An engine configured as the metastore uses it; the lock store shares this setup.

    PostgreSQL runs at READ COMMITTED (set on each connection's session, so autocommit statements
    run at it too); a pooled connection the server closed (a restart) is replaced on checkout; libpq's
    connect timeout, keepalives and TCP user timeout (``POSTGRES_NETWORK_SETTINGS``) bound a call on
    a partitioned network, and the server ends a session left idle in a transaction after 120 s. SQLite gets a 30 s busy timeout, foreign keys, WAL (files)
    and ``BEGIN IMMEDIATE`` for every transaction, so each one is serialized against every writer
    (SQLite's ``SELECT ... FOR UPDATE``); an in-memory database is one shared connection.

    Args:
        url: a parsed SQLAlchemy URL.

    Returns:
        The engine; nothing is connected yet.
    """
    if url.get_backend_name() != "sqlite":
        url = resolve_postgres_driver(url)
        postgresql = url.get_backend_name() == "postgresql"
        network = (
            {k: v for k, v in POSTGRES_NETWORK_SETTINGS.items() if k not in url.query}
            if url.drivername in ("postgresql+psycopg2", "postgresql+psycopg")
            else {}
        )
        try:
            server = sa.create_engine(
                url,
                pool_recycle=1800,
                connect_args=network,
                **({} if postgresql else {"isolation_level": "READ COMMITTED"}),
            )
        except ImportError as e:  # a driver named in the URL (postgresql+pg8000://) is not installed
            raise MissingDependencyError(
                f"the database driver {url.drivername!r}",
                f"the metastore URL {url.render_as_string()!r}",
                "postgres",
            ) from e
        if not postgresql:
            return server

        @event.listens_for(server, "checkout")
        def _closed_by_server(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:  # noqa: ANN401 - DBAPI objects are untyped
            # A PostgreSQL that restarted or failed over has closed its end of every pooled
            # connection (the socket reads EOF or a "terminating connection" notice while idle).
            # Checked without a round trip, so the first call after a restart does not fail on a
            # dead connection (a commit sent on one would be checked and aborted); the pool
            # replaces it and every older one. Hive's connection pools validate on checkout too.
            if select.select([dbapi_connection.fileno()], [], [], 0)[0]:
                raise sa.exc.InvalidatePoolError("the server closed this pooled connection")

        @event.listens_for(server, "connect")
        def _read_committed(dbapi_connection: Any, _record: Any) -> None:  # noqa: ANN401 - DBAPI objects are untyped
            # Set on the session, once per connection, rather than through the driver: psycopg2
            # would then send BEGIN ISOLATION LEVEL ... and a SET on every switch to autocommit.
            cursor = dbapi_connection.cursor()
            cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")
            cursor.execute(
                f"SET idle_in_transaction_session_timeout = {POSTGRES_IDLE_IN_TRANSACTION_TIMEOUT_MS}"
            )
            cursor.close()
            dbapi_connection.commit()

        return server
    memory = _is_sqlite_memory(url)
    if memory:
        engine = sa.create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = sa.create_engine(url, connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # noqa: ANN401 - DBAPI objects are untyped
        # SQLAlchemy emits BEGIN itself (below); pysqlite must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if not memory:
            # WAL is a property of the file: the first connection sets it for good. Switching needs
            # an exclusive lock and fails at once (no busy handler) while another process writes,
            # e.g. migrates a brand-new file; that process's connection has already switched it.
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                with contextlib.suppress(sqlite3.OperationalError):
                    cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        # IMMEDIATE takes the write lock up front: two readers that both try to upgrade to writers
        # would otherwise deadlock into SQLITE_BUSY; this is SQLite's SELECT ... FOR UPDATE.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def upgrade_schema(engine: Engine) -> None:
    """Bring the database to the newest Alembic revision (``upgrade head``), idempotently.

    Serialized between processes (an advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite);
    a database already at head costs one query and no Alembic import. The SQL lock store calls
    this too, so the lock tables exist whichever of the two opens a database first.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database failed (callers translate it).
        SchemaRevisionError: the database is at a revision this code does not know.
    """
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # One migrator at a time; the others wait here, then find the schema at head.
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
        if _current_revision(connection) == SCHEMA_HEAD:
            return
        from alembic import command
        from alembic.util import CommandError

        config, _ = _alembic_config()
        config.attributes["connection"] = connection
        try:
            command.upgrade(config, "head")
        except CommandError as e:
            raise SchemaRevisionError(f"{type(e).__name__}: {e}") from e
        finally:
            config.attributes.pop("connection", None)


def _current_revision(connection: sa.Connection) -> str | None:
    """The one revision in ``alembic_version``, or None (no table yet, or not exactly one row)."""
    if not sa.inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
    return str(rows[0]) if len(rows) == 1 else None


_DISK_FULL_PGCODE = "53100"  # PostgreSQL's disk_full SQLSTATE


_DISK_FULL_SQLITE = "database or disk is full"  # SQLITE_FULL
_SQLITE_IOERR = 10  # the primary code of every SQLITE_IOERR_* (the low byte of the extended code)
_NEARLY_FULL_BYTES = 1 << 20


def _is_sqlite_io_error_on_full_disk(url: sa.URL, cause: BaseException) -> bool:
    """Whether a SQLite ``disk I/O error`` happened on a disk with (next to) no free space.

    With WAL, SQLite reports a full disk while it grows its ``-shm``/``-wal`` files as
    ``SQLITE_IOERR_SHMSIZE``/``SQLITE_IOERR_WRITE`` ("disk I/O error"), not ``SQLITE_FULL``; the
    free space of the database file's filesystem tells the two apart.
    """
    code = getattr(cause, "sqlite_errorcode", None)
    if not isinstance(code, int) or code & 0xFF != _SQLITE_IOERR:
        return False
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return False
    try:
        stats = os.statvfs(Path(url.database).resolve().parent)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < _NEARLY_FULL_BYTES


def _is_read_only_file_system(database: str) -> bool:
    """Whether the nearest existing directory of ``database`` lies on a read-only file system."""
    directory = Path(database).parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY) or not os.access(directory, os.W_OK)
    except OSError:
        return False


# SQLSTATEs of a server that is going away or not accepting connections yet: admin_shutdown,
# crash_shutdown, cannot_connect_now (class 57P); class 08 is connection_exception.
_SERVER_GONE_PGCODES = ("57P01", "57P02", "57P03")


def is_connection_lost(url: sa.URL, error: BaseException) -> bool:
    """Whether ``error`` is a PostgreSQL server gone away or refusing connections, not an answer to the SQL.

    True for a connection SQLAlchemy invalidated (a disconnect: the server stopped, restarted or
    failed over mid-call), a connection attempt that failed (psycopg2's ``OperationalError`` without a
    SQLSTATE: refused, timed out), and the server's own shutdown codes. Always False for SQLite, whose
    ``OperationalError`` (locked, full) is an answer.

    >>> is_connection_lost(sa.make_url("sqlite:///m.db"), sa.exc.OperationalError("SELECT 1", {}, OSError()))
    False
    """
    if url.get_backend_name() != "postgresql" or not isinstance(error, sa.exc.DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    code = getattr(error.orig, "pgcode", None)
    if code is None:
        return isinstance(error, sa.exc.OperationalError)
    return str(code).startswith("08") or code in _SERVER_GONE_PGCODES


def translate_db_error(operation: str, url: sa.URL, error: SQLAlchemyError) -> AcidError:
    """The ``AcidError`` for a database failure.

    ``DiskFullError`` when the disk is full, ``ReadOnlyStorageError`` when a SQLite file's file
    system is read-only (both disk problems, not metastore or lock-store ones: the message says so
    and names the database file or the URL; SQLite only says "unable to open database file" then);
    ``MetastoreDatabaseUnavailableError`` when the PostgreSQL server went away or refused the
    connection (``is_connection_lost``); otherwise ``MetastoreError``.
    """
    cause = getattr(error, "orig", None) or error
    full = (
        getattr(cause, "pgcode", None) == _DISK_FULL_PGCODE
        or _DISK_FULL_SQLITE in str(cause)
        or (isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT))
        or _is_sqlite_io_error_on_full_disk(url, cause)
    )
    shown = url.render_as_string(hide_password=True)
    sqlite_file = (
        url.database
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
        else None
    )
    if (
        sqlite_file is not None
        and isinstance(cause, sqlite3.OperationalError)
        and _is_read_only_file_system(sqlite_file)
    ):
        return ReadOnlyStorageError(
            sqlite_file, f"metastore operation {operation!r}", describe_db_error(error)
        )
    if full:
        path = url.database if url.get_backend_name() == "sqlite" and url.database else shown
        return DiskFullError(path, f"metastore operation {operation!r}", describe_db_error(error))
    if is_connection_lost(url, error):
        return MetastoreDatabaseUnavailableError(operation, shown, describe_db_error(error))
    return MetastoreError(operation, shown, describe_db_error(error))


def describe_db_error(error: SQLAlchemyError) -> str:
    r"""A one-line description of a database error for ``MetastoreError``: the driver's class and first line.

    >>> describe_db_error(sa.exc.OperationalError("SELECT 1", {}, ValueError("server closed\nmore")))
    'ValueError: server closed'
    """
    cause = getattr(error, "orig", None) or error
    return f"{type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause).strip() else ''}"
