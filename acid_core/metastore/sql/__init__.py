"""The SQLAlchemy adapter of the metastore port: SQLite (embedded), PostgreSQL, in memory.

::

    metastore   SqlMetastore: the port, assembled from the parts below (Hive's TxnHandler rules)
    base        the engine-bound core every part shares (sessions, errors, the clock)
    catalog     databases, tables, partitions (Hive's ObjectStore)
    txns        transactions, write IDs, locks' transaction side (TxnHandler)
    queue       the compaction queue (CompactionTxnHandler)
    leases      reader leases and the backlog history
    engine      URLs, engines, the schema's migrations (``migrations/``, Alembic)
    models      the tables (SQLAlchemy Core)
    lock_store  the SQL lock manager's and the Hive adapter's side store (locks, leases)

Import ``acid_core.metastore`` (lazy re-exports) or the module you need; this package imports nothing.
"""
