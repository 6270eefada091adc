"""Read a Hive ACID table with Spark (enableHiveSupport) through a Hive Metastore: a test helper.

    python tests/integration/spark_read_hive_table.py thrift://h:port db.table WAREHOUSE TXN_LIST

Prints one line ``ROWS <json list of row dicts>``. Spark resolves the table in the HMS
(``hive.metastore.uris``) and scans it with the table's own InputFormat, Hive 2.3's
``OrcInputFormat`` (``spark.sql.hive.convertMetastoreOrc=false``), in ACID mode as a Hive session
configures it: ``hive.transactional.table.scan=true``, the snapshot ``hive.txn.valid.txns`` (Hive
2.3's ValidReadTxnList string, taken from the same HMS) and ``schema.evolution.columns[.types]``
from the table's schema in the HMS. Spark's native ORC reader does not understand ACID
directories, so this is the way a Spark job reads a Hive 2.3 ACID table consistently.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    uri, table, warehouse, txns = argv
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("hms-read")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.sql.hive.convertMetastoreOrc", "false")
        .config("spark.hadoop.hive.transactional.table.scan", "true")
        .config("spark.hadoop.hive.txn.valid.txns", txns)
        .enableHiveSupport()
        .getOrCreate()
    )
    try:
        fields = spark.table(table).schema.fields
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        conf.set("schema.evolution.columns", ",".join(f.name for f in fields))
        conf.set("schema.evolution.columns.types", ":".join(f.dataType.simpleString() for f in fields))
        rows = spark.sql(f"SELECT * FROM {table}").collect()
        print("ROWS", json.dumps([row.asDict(recursive=True) for row in rows]), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
