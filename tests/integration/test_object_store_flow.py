"""The whole flow on an S3 warehouse (moto's server), on HDFS (a MiniDFSCluster) and on the local disk.

CREATE / INSERT / UPDATE / DELETE / MERGE through ``acidflow sql``, streaming ingest, ``state``,
``initiate``, minor and major compaction, ``clean`` (quarantine, restore, delete), a reader lease
and ``read``: every file the table has lives in the bucket, none on the local disk but the
metastore file (issue 22: an ``s3://`` warehouse used to become a local ``./s3:`` directory).
The store's own listing (the bucket's keys, the NameNode's), not acidflow's, shows the directories.
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from acid_core.cli import main as acidflow
from acid_core.writes import Warehouse
from acid_core.writes.streaming import StreamingConnection
from tests.fixtures.hdfs import HdfsEnv

pytestmark = [pytest.mark.slow]

ROWS_QUERY = "SELECT id, name FROM e ORDER BY id"


@pytest.fixture(
    params=[
        "local",
        pytest.param("s3", marks=pytest.mark.integration("s3")),
        pytest.param("hdfs", marks=pytest.mark.integration("hdfs")),
    ]
)
def warehouse(request, tmp_path, monkeypatch):
    """``(warehouse location, S3Env | HdfsEnv | None)``; the metastore is a SQLite file on the local disk."""
    for name in ("ACIDFLOW_WAREHOUSE", "ACIDFLOW_LOCK_MANAGER", "ACIDFLOW_ZOOKEEPER"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ACIDFLOW_METASTORE", f"sqlite:///{tmp_path / 'metastore.sqlite'}")
    if request.param == "local":
        location = str(tmp_path / "wh")
        monkeypatch.setenv("ACIDFLOW_WAREHOUSE", location)
        yield location, None
    elif request.param == "s3":
        s3 = request.getfixturevalue("s3_env")
        monkeypatch.setenv("ACIDFLOW_WAREHOUSE", s3.warehouse)
        yield s3.warehouse, s3
    else:
        hdfs = request.getfixturevalue("hdfs_env")
        monkeypatch.setenv("ACIDFLOW_WAREHOUSE", hdfs.warehouse)
        yield hdfs.warehouse, hdfs
    assert os.listdir(work) == []  # nothing written to the working directory (no ./s3: directory)


def _sql(capsys, *statements: str) -> list[dict]:
    assert acidflow(["sql", "--format", "jsonl", *statements]) == 0, capsys.readouterr().err
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def _run(capsys, *argv: str) -> list[dict]:
    code = acidflow([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line) for line in captured.out.splitlines() if line.strip()]


def _rows(capsys) -> list[tuple[int, str]]:
    return [(r["id"], r["name"]) for r in _sql(capsys, ROWS_QUERY)]


def _dirs(location: str, store) -> list[str]:
    """The table's ACID directories, from the store itself (not through acidflow)."""
    if store is None:
        return sorted(n for n in os.listdir(os.path.join(location, "e")) if not n.startswith((".", "_")))
    if isinstance(store, HdfsEnv):
        names = {path.split("/")[2] for path in store.paths("warehouse/e") if path.count("/") >= 2}
    else:
        names = {key.split("/")[2] for key in store.object_keys("warehouse/e/")}
    return sorted(n for n in names if not n.startswith((".", "_")))


def test_flow_sql_streaming_compaction_clean_lease_read(warehouse, capsys):
    location, store = warehouse
    _sql(
        capsys,
        "CREATE TABLE e (id int, name string) CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')",
        "INSERT INTO e VALUES (1,'a'),(2,'b')",
        "INSERT INTO e VALUES (3,'c'),(4,'d')",
        "UPDATE e SET name = 'B' WHERE id = 2",
        "DELETE FROM e WHERE id = 1",
        "MERGE INTO e AS t USING (SELECT 3 AS id, 'C' AS name) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name",
    )
    with (
        Warehouse.open(location, os.environ["ACIDFLOW_METASTORE"], heartbeat_seconds=None) as wh,
        StreamingConnection(wh, "default.e", txns_per_batch=2) as stream,
    ):
        for ids in ([5, 6], [7]):
            stream.begin_transaction()
            stream.write(pa.table({"id": pa.array(ids, pa.int32()), "name": [f"s{i}" for i in ids]}))
            stream.commit_transaction()
    expected = [(2, "B"), (3, "C"), (4, "d"), (5, "s5"), (6, "s6"), (7, "s7")]
    assert _rows(capsys) == expected
    if isinstance(store, HdfsEnv):
        assert any(p.startswith("warehouse/e/delta_0000001_0000001_0000/bucket_0000") for p in store.paths())
    elif store is not None:
        assert any(
            key.startswith("warehouse/e/delta_0000001_0000001_0000/bucket_0000")
            for key in store.object_keys()
        )
    table = f"{location}/e"
    before = _dirs(location, store)
    assert "delta_0000006_0000007" in before  # the streaming batch

    state = _run(capsys, "state", table)[0]
    listed = state["deltas"] + state.get("delete_deltas", [])
    assert len(listed) == len([d for d in before if d.startswith(("delta_", "delete_delta_"))]), state

    assert _run(capsys, "initiate", "--dry-run")[0]["table"] == "default.e"
    _sql(capsys, "ALTER TABLE e COMPACT 'minor'")
    assert [o["status"] for o in _run(capsys, "compact", "--executor", "embedded")] == ["compacted"]
    assert _rows(capsys) == expected

    lease = _run(capsys, "lease", "take", "default.e")[0]
    _sql(capsys, "ALTER TABLE e COMPACT 'major'")
    assert [o["status"] for o in _run(capsys, "compact", "--executor", "embedded")] == ["compacted"]
    assert _rows(capsys) == expected
    # The lease's readers still need the minor compaction's output: the cleaner waits for them.
    assert [r["status"] for r in _run(capsys, "clean")] != ["cleaned"] * 2
    leased = _run(capsys, "read", table, "--lease", str(lease["lease_id"]))
    assert sorted((r["id"], r["name"]) for r in leased) == expected
    assert _run(capsys, "lease", "release", str(lease["lease_id"]))

    results = _run(capsys, "clean", "--quarantine")
    assert {r["status"] for r in results} == {"cleaned"}
    compaction_id = next(r["compaction_id"] for r in results if r["actions"])
    after_clean = _dirs(location, store)
    assert [d for d in after_clean if d.startswith("base_")]
    assert not [d for d in after_clean if d.startswith("delta")]
    restored = _run(capsys, "clean", "--restore", "default.e", "--compaction", str(compaction_id))
    assert restored
    assert _dirs(location, store) != after_clean
    assert _rows(capsys) == expected

    read = _run(capsys, "read", table)
    assert sorted((r["id"], r["name"]) for r in read) == expected


@pytest.mark.integration("s3")
def test_flow_on_a_table_located_at_an_s3a_uri(s3_env, tmp_path, monkeypatch, capsys):
    """A table whose LOCATION is ``s3a://`` (as Hive, Spark and Trino write it) in an ``s3://`` warehouse.

    The writes, ``state``, a major compaction, the cleaner and ``read`` reach the same bucket through
    pyarrow's S3 client; the LOCATION keeps its ``s3a://`` (the JVM reader's scheme); the location rules
    take ``s3://b/warehouse/e`` for the same table and refuse it, and the cleaner of ``e`` leaves the
    table ``e2`` (whose prefix starts like ``e``'s) untouched.
    """
    for name in ("ACIDFLOW_LOCK_MANAGER", "ACIDFLOW_ZOOKEEPER"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    monkeypatch.setenv("ACIDFLOW_METASTORE", metastore)
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", s3_env.warehouse)
    table = f"s3a://{s3_env.bucket}/warehouse/e"
    acid = "STORED AS ORC TBLPROPERTIES ('transactional'='true')"
    _sql(
        capsys,
        f"CREATE TABLE e (id int, name string) {acid} LOCATION '{table}'",
        "INSERT INTO e VALUES (1,'a'),(2,'b')",
        "INSERT INTO e VALUES (3,'c')",
        "DELETE FROM e WHERE id = 1",
        f"CREATE TABLE e2 (id int) {acid}",
        "INSERT INTO e2 VALUES (9)",
    )
    with Warehouse.open(s3_env.warehouse, metastore, heartbeat_seconds=None) as wh:
        assert wh.metastore.get_table("default.e").location == table
        assert wh.metastore.get_table("default.e2").location == f"{s3_env.warehouse}/e2"
    e2_keys = s3_env.object_keys("warehouse/e2/")
    assert e2_keys
    assert _dirs(s3_env.warehouse, s3_env) == [
        "delete_delta_0000003_0000003_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]

    # s3://<bucket>/warehouse/e is the same directory as the s3a:// LOCATION: refused, nothing created.
    for statement in (
        f"CREATE TABLE x (id int) {acid} LOCATION 's3://{s3_env.bucket}/warehouse/e'",
        f"CREATE TABLE x (id int) {acid} LOCATION 's3n://{s3_env.bucket}/warehouse/e/sub'",
    ):
        assert acidflow(["sql", statement]) != 0
        err = capsys.readouterr().err
        assert "default.e" in err, err
        assert len(err.strip().splitlines()) == 1, err

    state = _run(capsys, "state", table)[0]
    assert state["deltas"] == [
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delete_delta_0000003_0000003_0000",
    ], state
    _sql(capsys, "ALTER TABLE e COMPACT 'major'")
    assert [o["status"] for o in _run(capsys, "compact", "--executor", "embedded")] == ["compacted"]
    assert [r["status"] for r in _run(capsys, "clean")] == ["cleaned"]
    visible = _dirs(s3_env.warehouse, s3_env)
    assert len(visible) == 1, visible
    assert visible[0].startswith("base_0000003_v"), visible
    assert s3_env.object_keys("warehouse/e2/") == e2_keys
    assert sorted((r["id"], r["name"]) for r in _run(capsys, "read", table)) == [(2, "b"), (3, "c")]
    assert _sql(capsys, "SELECT id FROM e2") == [{"id": 9}]
    assert os.listdir(work) == []
