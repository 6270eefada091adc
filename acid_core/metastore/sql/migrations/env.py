"""Alembic environment for the acidflow metastore.

The store runs ``upgrade head`` programmatically on open and hands its own connection in through
``config.attributes["connection"]`` (already inside a transaction that holds the migration lock), so
this file never creates an engine in that path. Offline mode (``--sql``) and the command line
(``alembic -x url=...``) are supported for operators who want to see or apply the DDL by hand.

SQLite cannot ALTER most things; ``render_as_batch`` makes future migrations portable to it.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from acid_core.metastore.sql.models import Base

target_metadata = Base.metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        msg = "no metastore URL: pass -x url=<sqlalchemy url> or set sqlalchemy.url"
        raise SystemExit(msg)
    return url


def run_migrations_offline() -> None:
    """Emit the DDL as SQL text without a database."""
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Apply migrations on the store's connection, or on a fresh engine from the command line."""
    connection = context.config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(_url())
    with engine.connect() as own_connection:
        context.configure(connection=own_connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
