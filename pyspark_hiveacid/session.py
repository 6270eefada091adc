"""Spark sessions that can use ``hiveacid``: the pushdown setting, registration, SQL views.

::

    hiveacid_session(master="local[*]")   SparkSession.builder with FILTER_PUSHDOWN_CONF=true, acidflow's
                                          JVM reader on spark.jars (built once, ``jvm.jar_path``), registered
    configure(spark)                      an existing session: set FILTER_PUSHDOWN_CONF, register the source
    create_view(spark, "t", "db.t", ...)  CREATE TEMPORARY VIEW t USING hiveacid OPTIONS (table 'db.t', ...)

Spark 4 runs a Python reader's ``pushFilters`` only with ``spark.sql.python.filterPushdown.enabled``
= true and refuses the read otherwise (``DATA_SOURCE_PUSHDOWN_DISABLED``); the source's reader has
``pushFilters`` with option ``pushdown=true`` (partition pruning from WHERE filters), so every
session acidflow builds sets it (here and in ``spark_jobs/compact.py``).

With the JVM reader's jar on the class path (``hiveacid_session`` puts it there; for your own
session: ``spark.jars`` / ``--jars "$(python -m pyspark_hiveacid.jvm)"``, which must be set before
the session starts), ``format("hiveacid")`` reads in the JVM and writes through the Python source;
without a JDK to build the jar, ``hiveacid_session`` logs a warning and the Python source does both.

Not here: the data source itself (``source``).
Errors: whatever Spark raises.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "configure",
    "create_view",
    "hiveacid_session",
    "jvm_reader_jar",
    "register",
]

_LOG = logging.getLogger(__name__)

FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Register ``hiveacid`` on a session (needed only where the automatic lookup cannot see it)."""
    from pyspark_hiveacid.source import HiveAcidDataSource

    spark.dataSource.register(HiveAcidDataSource)


def configure(spark: SparkSession) -> SparkSession:
    """Enable Python filter pushdown and register ``hiveacid``; returns ``spark``."""
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    register(spark)
    return spark


def jvm_reader_jar() -> str | None:
    """The JVM reader's jar (built on first use), or None with a warning when it cannot be built."""
    from acid_core.errors import StorageError
    from pyspark_hiveacid.jvm import jar_path

    try:
        return str(jar_path())
    except StorageError as e:
        _LOG.warning("hiveacid: the Python data source reads (slower): %s", e)
        return None


def hiveacid_session(master: str | None = None, app_name: str = "acidflow-hiveacid") -> SparkSession:
    """A SparkSession ready for ``format("hiveacid")``."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).config(FILTER_PUSHDOWN_CONF, "true")
    jar = jvm_reader_jar()
    if jar is not None:
        builder = builder.config("spark.jars", jar)
    if master is not None:
        builder = builder.master(master)
    return configure(builder.getOrCreate())


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_view(spark: SparkSession, view: str, table: str, **options: str) -> None:
    """``CREATE OR REPLACE TEMPORARY VIEW <view> USING hiveacid OPTIONS (table '<table>', ...)``.

    Every query of the view plans a new read (a new snapshot), like any Spark data source view.
    """
    pairs = {"table": table, **{k: str(v) for k, v in options.items()}}
    rendered = ", ".join(f"{key} {_sql_string(value)}" for key, value in pairs.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{view}` USING hiveacid OPTIONS ({rendered})")
