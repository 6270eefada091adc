"""The Hive Metastore adapter of the metastore port, over Thrift (Hive 2.3, 3.1 and 4).

::

    metastore   HiveMetastore: the port over Thrift; capabilities probed per connection
    thrift      the connection (HmsConnection: hosts, SASL, retries, UNSUPPORTED calls)
    values      Thrift structs <-> the port's values (every version's codes and names)
    leases      reader leases: an open HMS transaction + SHARED_READ lock, recorded in the side store
    queue_sql   Hive 2.3's and 3.1's compaction queue by SQL on the backend DB (no worker calls there)
    v4          what Hive 4 does differently: its queue's cleaner columns, its MarkCleanedFunction

Import ``acid_core.metastore`` (lazy re-exports) or the module you need; this package imports nothing.
"""
