"""Read and write Hive full-ACID tables from PySpark: the ``hiveacid`` Python data source.

::

    from pyspark_hiveacid import hiveacid_session
    spark = hiveacid_session()                      # or your own session + register(spark)
    df = spark.read.format("hiveacid").option("warehouse", "/wh").load("db.t")
    df.write.format("hiveacid").option("warehouse", "/wh").mode("append").save("db.t")
    create_view(spark, "t", "db.t", warehouse="/wh"); spark.sql("SELECT * FROM t")

Spark 4 finds ``DefaultSource`` in installed top-level modules named ``pyspark_*`` and registers
it by its name (``pyspark.sql.worker.lookup_data_sources``), so ``format("hiveacid")`` works
without user code once acidflow is installed; ``register(spark)`` does the same explicitly.

With the JVM reader's jar on the session's class path (``jvm.jar_path``; ``hiveacid_session`` puts
it there), ``format("hiveacid")`` is that reader (Java, ``jvm/src``; Spark asks JVM sources first):
it reads in the JVM, planned by ``planner`` (one Python process per driver), and hands writes and
``engine='python'`` reads to the Python source here.

Not here: merge-on-read and event files (``acid_core.orc``); this package only plugs them into
Spark (the JVM reader follows the same rules, tested against it on the same tables). ``acid_core`` never imports this package or pyspark.
Errors: see ``pyspark_hiveacid.source``.
"""

from __future__ import annotations

from pyspark_hiveacid.session import (
    FILTER_PUSHDOWN_CONF,
    configure,
    create_view,
    hiveacid_session,
    register,
)
from pyspark_hiveacid.snapshot import Snapshot, held_snapshot
from pyspark_hiveacid.source import HiveAcidDataSource

DefaultSource = HiveAcidDataSource
"""What Spark's data source lookup registers (under ``HiveAcidDataSource.name()``: ``hiveacid``)."""

__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "DefaultSource",
    "HiveAcidDataSource",
    "Snapshot",
    "configure",
    "create_view",
    "held_snapshot",
    "hiveacid_session",
    "register",
]
