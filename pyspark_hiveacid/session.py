"""Spark sessions that can use ``hiveacid``: the pushdown setting, registration, SQL views.

::

    hiveacid_session(master="local[*]")   SparkSession.builder with FILTER_PUSHDOWN_CONF=true, acidflow's
                                          JVM reader on spark.jars (built once, ``jvm.jar_path``), registered,
                                          the S3A settings of ``s3a_settings()``
    s3a_settings()                        {"spark.hadoop.fs.s3a.endpoint": $AWS_ENDPOINT_URL, ...}: the JVM
                                          reader reaches an S3 table with the AWS variables acidflow reads
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

Tables on S3: the JVM reader opens ``s3a://`` URIs (``planner.jvm_path`` maps a table's ``s3://``
location to them), served by ``hadoop-aws`` (the version of PySpark's Hadoop jars: 3.5.0 for
PySpark 4.2) and its AWS SDK v2 bundle, which go on the JVM's class path as for any Spark
application: ``spark.jars.packages=org.apache.hadoop:hadoop-aws:3.5.0``, ``--jars``, or (local mode,
no copy of the 690 MB bundle) ``--driver-class-path``. ``s3a_settings`` turns the endpoint and
region variables into S3A settings; S3A reads ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``
(``AWS_SESSION_TOKEN``) from the environment itself (its default provider chain), so no secret goes
into the Spark configuration.

Not here: the data source itself (``source``).
Errors: whatever Spark raises.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import SparkSession

__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "configure",
    "create_view",
    "hiveacid_session",
    "jvm_reader_jar",
    "register",
    "s3a_settings",
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


def s3a_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings for Hadoop's S3A filesystem from the AWS variables (empty when none is set).

    ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (a non-AWS store: MinIO, moto, ...) sets the
    endpoint and path-style access (such stores rarely serve ``bucket.host`` names), and plain
    ``http://`` switches TLS off; ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` sets the region.

    >>> s3a_settings({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "us-east-1"})["spark.hadoop.fs.s3a.path.style.access"]
    'true'
    """
    import os

    env = os.environ if environ is None else environ
    settings: dict[str, str] = {}
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip()
    if endpoint:
        settings["spark.hadoop.fs.s3a.endpoint"] = endpoint
        settings["spark.hadoop.fs.s3a.path.style.access"] = "true"
        if endpoint.lower().startswith("http://"):
            settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] = "false"
    region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip()
    if region:
        settings["spark.hadoop.fs.s3a.endpoint.region"] = region
    return settings


def hiveacid_session(master: str | None = None, app_name: str = "acidflow-hiveacid") -> SparkSession:
    """A SparkSession ready for ``format("hiveacid")`` (with ``s3a_settings()`` for tables on S3)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name).config(FILTER_PUSHDOWN_CONF, "true")
    for key, value in s3a_settings().items():
        builder = builder.config(key, value)
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
