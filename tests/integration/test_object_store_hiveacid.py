"""The ``hiveacid`` Spark source writing and reading a table on S3 (moto's server), through the JVM reader.

The table is made and written by ``acidflow sql`` (an INSERT, an UPDATE: a delete delta too); a Spark
application (its own process: the JVM needs hadoop-aws on ``spark.jars`` from the start) built by
``hiveacid_session()`` with hadoop-aws and its AWS SDK bundle on the class path appends rows through the Python
source and reads the table back with ``engine='jvm'``: the JVM opens ``s3a://`` URIs
(``planner.jvm_path``) with ``s3a_settings()`` from the same ``AWS_*`` variables and nothing else.
Then, in the same application, an overwrite (a ``base_w``), another append, a major compaction and
the cleaner (``acidflow`` in the driver), each read back by the JVM reader; ``acidflow read`` after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acid_core.cli import main as acidflow

pytestmark = [
    pytest.mark.integration("spark"),
    pytest.mark.integration("s3"),
    pytest.mark.slow,
    pytest.mark.timeout(600),
]

_ROOT = str(Path(__file__).resolve().parents[2])

_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    from pyspark_hiveacid.session import hiveacid_session

    started = time.monotonic()

    warehouse, metastore, class_path = sys.argv[1], sys.argv[2], sys.argv[3]
    # hadoop-aws on the driver's class path: local mode runs the tasks there (no copy of the bundle)
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-class-path {class_path} pyspark-shell"
    spark = hiveacid_session("local[1]")
    spark.sparkContext.setLogLevel("ERROR")
    conf = spark.sparkContext.getConf()
    print("S3A", json.dumps({k: v for k, v in conf.getAll() if k.startswith("spark.hadoop.fs.s3a.")}))
    new = spark.createDataFrame([(5, "e"), (6, "f")], "id int, name string")
    writer = new.write.format("hiveacid").option("warehouse", warehouse).option("metastore", metastore)
    writer.mode("append").save("default.e")
    read = spark.read.format("hiveacid").option("warehouse", warehouse).option("metastore", metastore)

    def jvm_rows():
        rows = read.option("engine", "jvm").load("default.e").collect()
        return sorted([r["id"], r["name"]] for r in rows)

    print("ROWS", json.dumps(jvm_rows()))
    overwrite = spark.createDataFrame([(7, "g"), (8, "h")], "id int, name string").coalesce(1)
    overwrite.write.format("hiveacid").option("warehouse", warehouse).option("metastore", metastore).mode(
        "overwrite"
    ).save("default.e")
    print("OVERWRITTEN", json.dumps(jvm_rows()))
    spark.createDataFrame([(9, "i")], "id int, name string").write.format("hiveacid").option(
        "warehouse", warehouse
    ).option("metastore", metastore).mode("append").save("default.e")
    import contextlib
    from acid_core.cli import main as acidflow

    os.environ["ACIDFLOW_METASTORE"] = metastore
    os.environ["ACIDFLOW_WAREHOUSE"] = warehouse
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries this script's lines only
        codes = [
            acidflow(["sql", "ALTER TABLE e COMPACT 'major'"]),
            acidflow(["compact", "--executor", "embedded"]),
            acidflow(["clean"]),
        ]
    print("COMPACTED", json.dumps([codes, jvm_rows()]))
    print("SECONDS", json.dumps(round(time.monotonic() - started, 1)))
    spark.stop()
    """
)


def test_hiveacid_writes_and_jvm_reads_an_s3_table(s3_env, s3a_jars, tmp_path, monkeypatch, capsys):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    monkeypatch.setenv("ACIDFLOW_METASTORE", metastore)
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", s3_env.warehouse)
    statements = [
        "CREATE TABLE e (id int, name string) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
        "INSERT INTO e VALUES (1,'a'),(2,'b'),(3,'c')",
        "UPDATE e SET name = 'B' WHERE id = 2",
    ]
    assert acidflow(["sql", *statements]) == 0, capsys.readouterr().err
    script = tmp_path / "hiveacid_s3.py"
    script.write_text(_SCRIPT)
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p),
    }
    mark = s3_env.server.mark()
    job = subprocess.run(
        [sys.executable, str(script), s3_env.warehouse, metastore, os.pathsep.join(s3a_jars)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=540,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-4000:]
    lines = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in job.stdout.splitlines()}
    assert {
        "spark.hadoop.fs.s3a.endpoint": s3_env.server.endpoint,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
    }.items() <= lines["S3A"].items()
    assert lines["ROWS"] == [[1, "a"], [2, "B"], [3, "c"], [5, "e"], [6, "f"]]
    assert lines["OVERWRITTEN"] == [[7, "g"], [8, "h"]]
    assert lines["COMPACTED"] == [[0, 0, 0], [[7, "g"], [8, "h"], [9, "i"]]]
    # One base in the bucket after the major compaction and the cleaner; acidflow reads what the JVM read.
    names = {k.split("/")[2] for k in s3_env.object_keys("warehouse/e/")}
    assert [n[:15] for n in sorted(n for n in names if not n.startswith(("_", ".")))] == ["base_0000005_v0"]
    capsys.readouterr()
    assert acidflow(["read", f"{s3_env.warehouse}/e", "--format", "jsonl"]) == 0
    read_back = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert sorted((r["id"], r["name"]) for r in read_back) == [(7, "g"), (8, "h"), (9, "i")]
    requests = s3_env.server.requests(since=mark)
    # The append's files went to the bucket; the JVM's S3A client read the event files (ranged GETs).
    assert any(m == "PUT" and "/warehouse/e/delta_" in p and "/bucket_" in p for m, p, _ in requests)
    gets = [p for m, p, _ in requests if m == "GET"]
    assert any("/warehouse/e/delete_delta_" in p for p in gets), (lines["SECONDS"], gets)
    assert os.listdir(work) == []  # no ./s3: directory
