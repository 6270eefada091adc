"""The warehouse location: one check (``fs.resolve_warehouse``) for every entry point (issues 22, 24)."""

from __future__ import annotations

import os

import pytest

from acid_core.errors import EmbeddedMetastoreLocationError, InvalidWarehouseError
from acid_core.fs import file_io_for, is_local_location, resolve_warehouse
from acid_core.metastore.factory import default_metastore_url, open_metastore

_EXPECTED = (
    "expected a local directory, file:///dir, hdfs://namenode:8020/warehouse or s3://bucket/warehouse "
    "(schemes: abfs, abfss, file, gcs, gs, hdfs, s3, s3a, s3n, viewfs); nothing was created"
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("s3://bucket/warehouse", "s3://bucket/warehouse"),
        ("S3://bucket/wh//x/./y/", "s3://bucket/wh/x/y"),
        ("s3://bucket", "s3://bucket"),
        ("s3://bucket/", "s3://bucket"),
        ("s3a://bucket/wh/", "s3a://bucket/wh"),  # Hadoop's name, kept as written
        ("hdfs://nn:8020/user/hive/warehouse", "hdfs://nn:8020/user/hive/warehouse"),
        ("file:///data/wh/", "/data/wh"),
        ("file://localhost/data/wh", "/data/wh"),
        ("/data/wh", "/data/wh"),
        ("  /data/wh  ", "/data/wh"),
    ],
    ids=[
        "s3",
        "s3-normalised",
        "bucket-root",
        "bucket-root-slash",
        "s3a",
        "hdfs",
        "file",
        "file-localhost",
        "abs",
        "spaces",
    ],
)
def test_resolve_warehouse_valid_normalises(value, expected):
    assert resolve_warehouse(value, source="--warehouse") == expected


def test_resolve_warehouse_relative_is_absolute_from_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_warehouse("./warehouse", source="the default") == str(tmp_path / "warehouse")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "it is empty (an unset variable?); hint: unset it for the default ./warehouse"),
        ("   ", "it is empty (an unset variable?); hint: unset it for the default ./warehouse"),
        ("bogus://x/y", "scheme 'bogus' is not supported"),
        ("wasb://bucket/wh", "scheme 'wasb' is not supported"),
        ("s3:/bucket/wh", "a s3: URI must be s3://<authority>/<path>"),
        ("s3:///wh", "it names no bucket"),
        ("s3a:///wh", "it names no bucket"),
        ("hdfs:///wh", "it names no host"),
        ("s3://bucket/wh/../other", "it has a '..' component"),
        ("file://otherhost/wh", "file: URIs name the local disk, not host 'otherhost'"),
        ("/wh\x00", "it contains a NUL character"),
    ],
    ids=[
        "empty",
        "blank",
        "unknown-scheme",
        "wasb",
        "one-slash",
        "no-bucket",
        "s3a-no-bucket",
        "no-namenode",
        "dotdot",
        "file-host",
        "nul",
    ],
)
def test_resolve_warehouse_invalid_raises_one_line(value, problem):
    with pytest.raises(InvalidWarehouseError) as raised:
        resolve_warehouse(value, source="$ACIDFLOW_WAREHOUSE")
    assert str(raised.value) == f"Invalid warehouse {value!r} ($ACIDFLOW_WAREHOUSE): {problem}; {_EXPECTED}"
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    ("location", "local"),
    [("/wh", True), ("wh", True), ("file:///wh", True), ("s3://b/wh", False), ("hdfs://nn/wh", False)],
)
def test_is_local_location_by_scheme(location, local):
    assert is_local_location(location) is local


def test_file_io_for_s3_path_is_bucket_and_key_without_a_request():
    # pyarrow spells S3 paths "bucket/key"; building the filesystem for an unreachable endpoint
    # must not fail or hang (no request until the first operation).
    environment = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "us-east-1"}
    saved = {k: os.environ.get(k) for k in environment}
    os.environ.update(environment)
    try:
        file_io, path = file_io_for("s3://bucket/wh/db.db/t/p=a%20b")
        again, _ = file_io_for("s3://bucket/wh/other")
        hadoop = {scheme: file_io_for(f"{scheme}://bucket/wh/db.db/t") for scheme in ("s3a", "S3N")}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert path == "bucket/wh/db.db/t/p=a%20b"  # Hive's escaped partition name is the key itself
    assert again is file_io  # one filesystem per bucket and settings
    # Hadoop's S3 schemes (the LOCATIONs Hive, Spark and Trino write) open the same store and keys.
    assert hadoop == {"s3a": (file_io, "bucket/wh/db.db/t"), "S3N": (file_io, "bucket/wh/db.db/t")}


@pytest.mark.parametrize("warehouse", ["s3://bucket/wh", "hdfs://nn:8020/wh"])
def test_default_metastore_url_remote_warehouse_raises(warehouse):
    with pytest.raises(
        EmbeddedMetastoreLocationError, match=r"^No metastore for warehouse '.*': the embedded"
    ):
        default_metastore_url(warehouse)


def test_open_metastore_embedded_on_s3_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(EmbeddedMetastoreLocationError):
        open_metastore(None, "s3://bucket/wh")
    assert os.listdir(tmp_path) == []


def test_open_metastore_explicit_sqlite_keeps_s3_warehouse_uri(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_metastore(f"sqlite:///{tmp_path / 'm.sqlite'}", "s3://bucket/wh/") as store:
        assert store.get_database("default").location == "s3://bucket/wh"
    assert sorted(os.listdir(tmp_path)) == ["m.sqlite"]


_THRIFT = "thrift://127.0.0.1:1"  # never connected: the refusals come before any call


def test_lock_store_thrift_metastore_s3_warehouse_names_lease_store(tmp_path, monkeypatch):
    """With a Hive Metastore, the SQL locks' default file cannot live on S3: the message says where
    they can go (ZooKeeper, ACIDFLOW_LEASE_STORE), not 'set ACIDFLOW_METASTORE' (it is set)."""
    from acid_core.locks import open_lock_manager

    monkeypatch.chdir(tmp_path)
    environ = {"ACIDFLOW_METASTORE": _THRIFT, "ACIDFLOW_WAREHOUSE": "s3://bucket/wh"}
    with pytest.raises(EmbeddedMetastoreLocationError) as raised:
        open_lock_manager(environ)
    assert str(raised.value) == (
        "No lock store for warehouse 's3://bucket/wh' with a Hive Metastore: the SQL lock manager keeps "
        "its locks in acidflow's side store, and the embedded SQLite file "
        "<warehouse>/.acidflow/metastore.sqlite lives only in a local warehouse directory; expected "
        "ACIDFLOW_ZOOKEEPER (ZooKeeper locks, as Hive's) or ACIDFLOW_LEASE_STORE set for a warehouse on "
        "S3 or HDFS; hint: ACIDFLOW_LEASE_STORE=postgresql://host/db shared by every host (locks, leases "
        "and backlog history), sqlite:////local/path/acidflow.sqlite for one machine, or "
        "ACIDFLOW_LOCK_MANAGER=none"
    )
    assert os.listdir(tmp_path) == []


def test_lock_store_thrift_metastore_lease_store_url_holds_the_locks(tmp_path):
    from acid_core.locks import open_lock_manager
    from acid_core.locks.sql import SqlLockManager

    side = tmp_path / "side.sqlite"
    environ = {
        "ACIDFLOW_METASTORE": _THRIFT,
        "ACIDFLOW_WAREHOUSE": "s3://bucket/wh",
        "ACIDFLOW_LEASE_STORE": f"sqlite:///{side}",
    }
    manager = open_lock_manager(environ)
    try:
        assert isinstance(manager, SqlLockManager)
        assert side.is_file()
    finally:
        manager.close()


def test_side_store_thrift_metastore_s3_warehouse_names_lease_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACIDFLOW_LEASE_STORE", raising=False)
    store = open_metastore(_THRIFT, "s3://bucket/wh")
    with pytest.raises(EmbeddedMetastoreLocationError) as raised:
        store.list_backlog_samples(0.0)
    assert str(raised.value) == (
        "No side store for warehouse 's3://bucket/wh' with a Hive Metastore (reader-lease records, backlog "
        "history): the embedded SQLite file <warehouse>/.acidflow/metastore.sqlite lives only in a local "
        "warehouse directory; expected ACIDFLOW_LEASE_STORE set for a warehouse on S3 or HDFS; hint: "
        "ACIDFLOW_LEASE_STORE=postgresql://host/db shared by every host, "
        "sqlite:////local/path/acidflow.sqlite for one machine, or none to go without leases and backlog "
        "history"
    )
    assert os.listdir(tmp_path) == []
