"""Trino 476 and acidflow on one real Hive 3.1.3 Metastore: each reads what the other wrote, compacted.

One Trino node (``trino_server``) has a ``hive`` catalog on a real Hive 3.1.3 Metastore, tables on
the tests' S3 server. Trino writes full-ACID ORC tables itself (``transactional = true``): its
INSERT, UPDATE, DELETE and MERGE open HMS transactions, allocate the table's write IDs and take the
HMS's locks, as against a production Hive 3 metastore. acidflow, in HMS mode (``--metastore
thrift://``), initiates, compacts (minor, then major) and cleans those tables; Trino and ``acidflow
read`` return the same rows before and after each step. An explicit Trino transaction holds its HMS
snapshot for one query only (what Trino 476 does); a query still running holds its HMS transaction
and SHARED_READ lock, and the cleaner waits for it. acidflow's own writes (``acidflow sql`` INSERT)
read back in Trino.

The ``hiveacid`` Spark source in HMS mode (one Spark application for the module, ``spark_worker``:
its own process, hadoop-aws on its class path from the start) reads Trino's tables (the JVM reader
through ``s3a://``, the Python source through pyarrow) as Trino does, before and after acidflow's
compaction; its appends into a Trino table read back in Trino.

What Trino's files look like (acidflow reads, compacts and cleans them unchanged)::

    s3://<bucket>/warehouse/trino_it.db/t/
        delta_0000001_0000001_0000/            INSERT: statement ID 0, no _v suffix
            _orc_acid_version                  one byte, as Hive 3's OrcRecordUpdater writes
            bucket_00000                       ORC ACID events; bucket column = BucketCodec V1
        delete_delta_0000003_0000003_0000/     UPDATE and MERGE: a delete delta and a delta
        delta_0000003_0000003_0000/            of one write ID

The tables set ``acidflow.compactor.hive31-names='false'`` (Trino reads ``_v`` names; on S3 names
without ``_v`` are refused).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acid_core.cli import main as acidflow

pytestmark = [pytest.mark.integration("trino"), pytest.mark.slow, pytest.mark.timeout(900)]

_ROOT = str(Path(__file__).resolve().parents[2])
SCHEMA = "trino_it"
THRESHOLD = "compactorthreshold.hive.compactor.delta.num.threshold"
# Trino reads base_N_vT and delta_a_b_vT: acidflow may name its outputs so on this Hive 3.1 server,
# as it must on S3 (a name without _v is visible the moment it exists; S3 has no atomic rename).
NAMES_V = "extra_properties = MAP(ARRAY['acidflow.compactor.hive31-names'], ARRAY['false'])"


@pytest.fixture(scope="module")
def trino(trino_server):
    """The Trino node, with this module's schema in its S3 bucket."""
    location = f"{trino_server.warehouse}/{SCHEMA}.db"
    trino_server.query(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA} WITH (location = '{location}')")
    return trino_server


@pytest.fixture
def hms_env(trino, monkeypatch, tmp_path):
    """acidflow's HMS-mode arguments, with the AWS variables of the tests' S3 server set.

    The tables' locations come from the HMS (on S3); ``--warehouse`` is a local directory, where
    acidflow keeps its lock database beside a Thrift metastore.
    """
    for key, value in trino.s3.environment().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ACIDFLOW_HMS_DB", trino.metastore.backend_url)
    return ["--metastore", trino.metastore.uri, "--warehouse", str(tmp_path)]


def _trino_rows(trino, table, columns="id, name, salary"):
    return sorted(tuple(row) for row in trino.query(f"SELECT {columns} FROM {SCHEMA}.{table}"))


def _acidflow_rows(capsys, hms_env, table, columns=("id", "name", "salary"), partitions=()):
    """``acidflow read`` of the table by name (each partition's rows, its value appended)."""
    rows = []
    for partition in partitions or [None]:
        capsys.readouterr()
        where = ["--partition", partition] if partition else []
        assert acidflow(["read", f"{SCHEMA}.{table}", *where, *hms_env[:2], "--format", "jsonl"]) == 0
        value = (partition.split("=", 1)[1],) if partition else ()
        lines = capsys.readouterr().out.splitlines()
        rows += [tuple(row[c] for c in columns) + value for row in map(json.loads, lines)]
    return sorted(rows)


def _run(capsys, argv):
    capsys.readouterr()
    assert acidflow([*argv, "--json"]) == 0, capsys.readouterr().err
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _directories(trino, table):
    """The directories under the table (relative names), from the S3 server's object keys."""
    import pyarrow.fs as pa_fs

    s3 = pa_fs.S3FileSystem(
        endpoint_override=trino.s3.endpoint, access_key="testing", secret_key="testing", region="us-east-1"
    )
    root = f"{trino.bucket}/warehouse/{SCHEMA}.db/{table}"
    infos = s3.get_file_info(pa_fs.FileSelector(root, recursive=True))
    files = [info.path[len(root) + 1 :] for info in infos if info.type == pa_fs.FileType.File]
    # not acidflow's own bookkeeping (_acidflow_cleaner/ledger), which no reader lists
    return sorted({name.rsplit("/", 1)[0] for name in files if "/" in name and not name.startswith("_")})


def _trino_writes(trino, table, partitioned):
    """Every kind of Trino write, each its own HMS transaction and write ID."""
    dept = ", dept" if partitioned else ""
    with_ = ", partitioned_by = ARRAY['dept']" if partitioned else ""
    trino.query(
        f"CREATE TABLE {SCHEMA}.{table} (id int, name varchar, salary int{', dept varchar' if partitioned else ''}) "
        f"WITH (format = 'ORC', transactional = true{with_}, {NAMES_V})"
    )
    values = ", 'a'" if partitioned else ""
    other = ", 'b'" if partitioned else ""
    trino.query(f"INSERT INTO {SCHEMA}.{table} VALUES (1, 'ann', 10{values}), (2, 'bob', 20{values})")
    trino.query(f"INSERT INTO {SCHEMA}.{table} VALUES (3, 'cid', 30{other}), (4, 'dee', 40{other})")
    trino.query(f"UPDATE {SCHEMA}.{table} SET salary = salary + 1 WHERE id IN (2, 3)")
    trino.query(f"DELETE FROM {SCHEMA}.{table} WHERE id = 1")
    source = f"(VALUES (4, 'dee', 44{other}), (5, 'eve', 50{values})) AS s(id, name, salary{dept})"
    trino.query(
        f"MERGE INTO {SCHEMA}.{table} t USING {source} ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET salary = s.salary "
        f"WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.salary{', s.dept' if partitioned else ''})"
    )
    return [(2, "bob", 21), (3, "cid", 31), (4, "dee", 44), (5, "eve", 50)]


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_trino_table_initiated_compacted_and_cleaned_by_acidflow_reads_the_same_rows(
    trino, hms_env, capsys, partitioned
):
    table = f"writes_{'p' if partitioned else 'u'}"
    expected = _trino_writes(trino, table, partitioned)
    if partitioned:
        depts = {2: "a", 3: "b", 4: "b", 5: "a"}
        expected = [(*row, depts[row[0]]) for row in expected]
    columns = "id, name, salary, dept" if partitioned else "id, name, salary"
    parts = ("dept=a", "dept=b") if partitioned else ()

    def trino_rows():
        return _trino_rows(trino, table, columns)

    def acidflow_rows():
        return _acidflow_rows(capsys, hms_env, table, partitions=parts)

    assert trino_rows() == expected
    assert acidflow_rows() == expected
    before = _directories(trino, table)
    assert any("delete_delta_" in name for name in before), before

    # minor: the deltas (of one partition) become one delta and one delete delta
    partitions = [["--partition", "dept=a"], ["--partition", "dept=b"]] if partitioned else [[]]
    target = ["--table", f"{SCHEMA}.{table}", *partitions[0]]
    minor = _run(capsys, ["compact", *hms_env, *target, "--type", "minor", "--executor", "embedded"])
    assert [o["status"] for o in minor] == ["compacted"], minor
    assert trino_rows() == expected
    assert acidflow_rows() == expected

    # acidflow's initiator queues the rest (threshold lowered by acidflow's own ALTER TABLE)
    capsys.readouterr()
    alter = f"ALTER TABLE {SCHEMA}.{table} SET TBLPROPERTIES ('{THRESHOLD}'='1')"
    assert acidflow(["sql", *hms_env, alter]) == 0, capsys.readouterr().err
    decisions = _run(capsys, ["initiate", *hms_env, "--table", f"{SCHEMA}.{table}"])
    assert len(decisions) == len(partitions), decisions
    assert all(d["compaction_id"] is not None for d in decisions), decisions
    queued = _run(capsys, ["compact", *hms_env, "--executor", "embedded"])
    assert sorted(o["status"] for o in queued) == ["compacted"] * len(partitions), queued
    assert trino_rows() == expected
    assert acidflow_rows() == expected

    # major, wherever the initiator chose minor; then the cleaner
    for partition in partitions:
        target = ["--table", f"{SCHEMA}.{table}", *partition, "--type", "major", "--executor", "embedded"]
        _run(capsys, ["compact", *hms_env, *target])
    assert trino_rows() == expected
    assert acidflow_rows() == expected
    cleaned = _run(capsys, ["clean", *hms_env])
    assert any(c.get("status") == "cleaned" for c in cleaned), cleaned

    after = _directories(trino, table)
    leaves = [name.rsplit("/", 1)[-1] for name in after if not name.endswith(("=a", "=b"))]
    assert leaves, after
    assert all(name.startswith("base_") for name in leaves), after
    assert trino_rows() == expected
    assert acidflow_rows() == expected
    # and Trino keeps writing on top of acidflow's base
    trino.query(f"DELETE FROM {SCHEMA}.{table} WHERE id = 5")
    assert trino_rows() == [r for r in expected if r[0] != 5]
    assert acidflow_rows() == [r for r in expected if r[0] != 5]


_ADDRESS = "ROW(city varchar, zip int)"
_NESTED_TABLE = (
    f"(id int, addr {_ADDRESS}, deep ROW(sub ROW(x int), y int), tags ARRAY({_ADDRESS}), "
    f"props MAP(varchar, {_ADDRESS}))"
)
_NESTED_VALUES = {  # row i's values, with nulls at every level, each with its own period
    "addr": f"IF(i % 3 = 0, NULL, CAST(ROW('c' || CAST(i AS varchar), i) AS {_ADDRESS}))",
    "deep": "IF(i % 5 = 0, NULL, CAST(ROW(IF(i % 2 = 1, NULL, CAST(ROW(i % 7) AS ROW(x int))), i % 11) "
    "AS ROW(sub ROW(x int), y int)))",
    "tags": f"IF(i % 4 = 0, NULL, ARRAY[NULL, CAST(ROW('c' || CAST(i AS varchar), i) AS {_ADDRESS})])",
    "props": "IF(i % 6 = 0, NULL, MAP(ARRAY['k'], "
    f"ARRAY[IF(i % 2 = 1, NULL, CAST(ROW('c' || CAST(i AS varchar), i) AS {_ADDRESS}))]))",
}


def _nested_row(i):
    """Row i of ``_NESTED_VALUES`` as Python values (what a user of acidflow's Python API passes)."""
    address = {"city": f"c{i}", "zip": i}
    return {
        "id": i,
        "addr": None if i % 3 == 0 else address,
        "deep": None if i % 5 == 0 else {"sub": None if i % 2 == 1 else {"x": i % 7}, "y": i % 11},
        "tags": None if i % 4 == 0 else [None, address],
        "props": None if i % 6 == 0 else [("k", None if i % 2 == 1 else address)],
    }


def _nested_json(trino, source):
    """(id, each nested value as Trino renders it in JSON) of ``source``'s rows, sorted."""
    rendered = ", ".join(f"json_format(CAST({column} AS JSON))" for column in _NESTED_VALUES)
    return sorted(tuple(row) for row in trino.query(f"SELECT id, {rendered} FROM {source}"))


def _computed(first, last):
    """The rows ``first``..``last`` of ``_NESTED_VALUES`` as Trino computes them, from no table."""
    values = ", ".join(f"{sql} AS {column}" for column, sql in _NESTED_VALUES.items())
    return f"(SELECT i AS id, {values} FROM UNNEST(sequence({first}, {last})) AS s(i))"


def test_trino_reads_nested_columns_acidflow_wrote_and_compacted(trino, hms_env, capsys):
    """Nested columns (a struct, a struct in a struct, an array and a map of structs, nulls at every
    level), written by Trino and by acidflow's Python API, read the same in Trino before and after
    acidflow's minor and major compactions and clean.

    acidflow's rows are Python values: the case pyarrow's ORC writer shifted before acidflow's
    ``nested_nulls`` workaround (with it switched off, Trino reads other values for them). Trino
    renders acidflow's rows exactly as it renders the same formula computed from no table."""
    import pyarrow as pa

    from acid_core.writes.transaction import Warehouse

    table = "nested_t"
    name = f"{SCHEMA}.{table}"
    trino.query(f"CREATE TABLE {name} {_NESTED_TABLE} WITH (format = 'ORC', transactional = true, {NAMES_V})")
    columns = ", ".join(_NESTED_VALUES)
    for first in (1, 301):
        trino.query(f"INSERT INTO {name} SELECT id, {columns} FROM {_computed(first, first + 299)}")
    trino.query(
        f"UPDATE {name} SET addr = IF(addr IS NULL, CAST(ROW('u', -id) AS {_ADDRESS}), NULL) WHERE id % 10 = 1"
    )
    trino.query(f"DELETE FROM {name} WHERE id % 20 = 7")
    address = pa.struct([("city", pa.string()), ("zip", pa.int32())])
    schema = pa.schema(
        [
            ("id", pa.int32()),
            ("addr", address),
            ("deep", pa.struct([("sub", pa.struct([("x", pa.int32())])), ("y", pa.int32())])),
            ("tags", pa.list_(address)),
            ("props", pa.map_(pa.string(), address)),
        ]
    )
    with (
        Warehouse.open(hms_env[3], trino.metastore.uri, heartbeat_seconds=None) as wh,
        wh.transaction(heartbeat_seconds=None) as txn,
    ):
        txn.insert(name, pa.Table.from_pylist([_nested_row(i) for i in range(601, 661)], schema=schema))
    assert _nested_json(trino, f"{name} WHERE id > 600") == _nested_json(trino, _computed(601, 660))

    expected = _nested_json(trino, name)
    assert len(expected) == 630
    # Trino's 1-600: 200 with i % 3 == 0, the update sets 20 of them and nulls 40 others, 10 null ones
    # are deleted; acidflow's 601-660: 20.
    assert sum(1 for row in expected if row[1] is None) == (200 - 20 + 40 - 10) + 20
    for kind in ("minor", "major"):
        compacted = _run(
            capsys, ["compact", *hms_env, "--table", name, "--type", kind, "--executor", "embedded"]
        )
        assert [o["status"] for o in compacted] == ["compacted"], compacted
        assert _nested_json(trino, name) == expected, f"after the {kind} compaction"
    cleaned = _run(capsys, ["clean", *hms_env])
    assert [c["status"] for c in cleaned if f"/{table}/" in json.dumps(c)] == ["cleaned"] * 2, cleaned
    [left] = _directories(trino, table)
    assert left.startswith("base_"), left
    assert _nested_json(trino, name) == expected


def test_trino_transaction_holds_its_hms_snapshot_for_one_query_only(trino, hms_env, capsys):
    """What the real Trino 476 does with an explicit transaction over an ACID table, as acidflow
    compacts (major) and cleans it between two statements.

    Trino opens its HMS transaction and shared read lock for one query and ends them with it: the
    cleaner, which waits for open transactions and readers' locks (proven against the real HMS in
    ``test_hive_metastore.py``), has nothing to wait for and deletes the compacted deltas; Trino
    then refuses a second statement of the same transaction ("Tried to access metastore after
    transaction has been committed/aborted"), so no statement ever reads a cleaned snapshot. A new
    transaction reads the same rows from acidflow's base.
    """
    from trino.exceptions import TrinoQueryError
    from trino.transaction import IsolationLevel

    table = "snapshot_t"
    trino.query(
        f"CREATE TABLE {SCHEMA}.{table} (id int, name varchar, salary int) WITH (transactional = true, {NAMES_V})"
    )
    for i in range(3):
        trino.query(f"INSERT INTO {SCHEMA}.{table} VALUES ({i}, 'n{i}', {10 * i})")
    expected = [(i, f"n{i}", 10 * i) for i in range(3)]
    select = f"SELECT id, name, salary FROM {SCHEMA}.{table}"

    # the strongest level Trino's Hive connector accepts
    connection = trino.connect(isolation_level=IsolationLevel.READ_UNCOMMITTED)
    try:
        cursor = connection.cursor()
        cursor.execute(select)
        assert sorted(map(tuple, cursor.fetchall())) == expected

        major = _run(capsys, ["compact", *hms_env, "--table", f"{SCHEMA}.{table}", "--type", "major",
                              "--executor", "embedded"])  # fmt: skip
        assert [o["status"] for o in major] == ["compacted"], major
        [base] = major[0]["outputs"]
        cleaned = _run(capsys, ["clean", *hms_env])
        assert [c["status"] for c in cleaned if f"/{table}/" in json.dumps(c)] == ["cleaned"], cleaned
        assert _directories(trino, table) == [base]

        with pytest.raises(TrinoQueryError, match=r"after transaction has been committed/aborted"):
            cursor.execute(select)
    finally:
        connection.close()
    assert _trino_rows(trino, table) == expected
    assert _acidflow_rows(capsys, hms_env, table) == expected


def test_acidflow_sql_insert_into_a_trino_table_reads_back_in_trino(trino, hms_env, capsys):
    """acidflow's own writes (``acidflow sql`` in HMS mode: the HMS's transaction, write ID and
    lock) into tables Trino made, an existing partition and a new one, read back in Trino, which
    then updates acidflow's rows."""
    table = "acidflow_writes_t"
    trino.query(
        f"CREATE TABLE {SCHEMA}.{table} (id int, name varchar, salary int, dept varchar) "
        f"WITH (transactional = true, partitioned_by = ARRAY['dept'], {NAMES_V})"
    )
    trino.query(f"INSERT INTO {SCHEMA}.{table} VALUES (1, 'ann', 10, 'a')")
    capsys.readouterr()
    insert = f"INSERT INTO {SCHEMA}.{table} VALUES (2, 'bob', 20, 'a'), (3, 'cid', 30, 'b')"
    assert acidflow(["sql", *hms_env, insert]) == 0, capsys.readouterr().err
    expected = [(1, "ann", 10, "a"), (2, "bob", 20, "a"), (3, "cid", 30, "b")]
    assert _trino_rows(trino, table, "id, name, salary, dept") == expected
    assert _acidflow_rows(capsys, hms_env, table, partitions=("dept=a", "dept=b")) == expected

    trino.query(f"UPDATE {SCHEMA}.{table} SET salary = salary * 2 WHERE id IN (2, 3)")
    expected = [(1, "ann", 10, "a"), (2, "bob", 40, "a"), (3, "cid", 60, "b")]
    assert _trino_rows(trino, table, "id, name, salary, dept") == expected
    assert _acidflow_rows(capsys, hms_env, table, partitions=("dept=a", "dept=b")) == expected


def _thrift_client(metastore):
    """A plain Thrift client of the HMS (what any Hive client sees), and its transport to close."""
    from hive_metastore import ThriftHiveMetastore
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    sock = TSocket.TSocket("127.0.0.1", metastore.port)
    sock.setTimeout(60000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport)), transport


def _locks_of(client, query_id):
    """The HMS locks Trino took for one query (Trino puts the query ID in the lock's agent info)."""
    from hive_metastore import ttypes

    return [
        lock
        for lock in client.show_locks(ttypes.ShowLocksRequest()).locks or ()
        if lock.agentInfo == query_id
    ]


def _query_state(trino, query_id):
    [[state]] = trino.query(f"SELECT state FROM system.runtime.queries WHERE query_id = '{query_id}'")
    return state


def _digest(rows):
    """(id, name, sha1 of pad): 1 MB pads compared without keeping two copies of each."""
    import hashlib

    return sorted((row[0], row[1], hashlib.sha1(row[2].encode()).hexdigest()) for row in rows)


def test_trino_query_in_flight_keeps_its_rows_while_acidflow_compacts_and_the_cleaner_waits(
    trino, hms_env, capsys
):
    """A Trino SELECT whose client stops fetching stays RUNNING (its result buffers are full: the
    fixture's 4 MB ``sink``/``exchange`` buffers against ~40 MB of rows), with its HMS transaction
    open and its SHARED_READ lock held (the HMS names the query in the lock's agent info). acidflow
    compacts (major) meanwhile; the cleaner in HMS mode waits (Hive's rule: a compaction is ready
    only once every transaction below its next txn ID has ended and no such lock is held), deletes
    nothing and leaves the entry 'ready for cleaning'. The client then fetches the rest: every row
    is what Trino read before the compaction. Once the query has ended, the next clean deletes
    the obsolete deltas and Trino reads the same rows from acidflow's base."""
    from hive_metastore import ttypes

    table = "inflight_t"
    trino.query(
        f"CREATE TABLE {SCHEMA}.{table} (id int, name varchar, pad varchar) "
        f"WITH (transactional = true, {NAMES_V})"
    )
    for first, last, letter in ((1, 20, "y"), (21, 40, "z")):  # 1 MB of distinct text per row
        trino.query(
            f"INSERT INTO {SCHEMA}.{table} SELECT i, 'n' || CAST(i AS varchar), "
            f"rpad(CAST(i AS varchar), 1000000, '{letter}') FROM UNNEST(sequence({first}, {last})) AS u(i)"
        )
    trino.query(f"DELETE FROM {SCHEMA}.{table} WHERE id = 3")
    select = f"SELECT id, name, pad FROM {SCHEMA}.{table}"
    before = _digest(trino.query(select))
    assert [row[0] for row in before] == sorted(set(range(1, 41)) - {3})
    deltas = _directories(trino, table)
    assert len(deltas) == 3, deltas  # two deltas, one delete delta

    connection = trino.connect()
    client, transport = _thrift_client(trino.metastore)
    try:
        cursor = connection.cursor()
        cursor.execute(select)
        fetched = [cursor.fetchone()]
        query_id = cursor.query_id
        assert _query_state(trino, query_id) == "RUNNING"
        [lock] = _locks_of(client, query_id)
        assert (lock.dbname, lock.tablename, lock.partname) == (SCHEMA, table, None)
        assert (lock.type, lock.state) == (ttypes.LockType.SHARED_READ, ttypes.LockState.ACQUIRED)
        assert lock.txnid in client.get_open_txns().open_txns

        major = _run(capsys, ["compact", *hms_env, "--table", f"{SCHEMA}.{table}", "--type", "major",
                              "--executor", "embedded"])  # fmt: skip
        assert [o["status"] for o in major] == ["compacted"], major
        [base] = major[0]["outputs"]
        cleaned = _run(capsys, ["clean", *hms_env])
        assert not [c for c in cleaned if f"/{table}/" in json.dumps(c)], cleaned
        assert _directories(trino, table) == sorted([*deltas, base])
        compactions = client.show_compact(ttypes.ShowCompactRequest()).compacts
        assert [c.state for c in compactions if c.id == major[0]["compaction_id"]] == ["ready for cleaning"]
        assert _query_state(trino, query_id) == "RUNNING"  # the compaction and the clean overlapped it

        fetched += cursor.fetchall()
        assert _digest(fetched) == before
        deadline = time.monotonic() + 120  # the query ends (commits its transaction) once fetched
        while _locks_of(client, query_id):
            assert time.monotonic() < deadline, f"Trino's lock of {query_id} outlived the query"
            time.sleep(0.2)
        assert lock.txnid not in client.get_open_txns().open_txns
    finally:
        transport.close()
        connection.close()

    cleaned = _run(capsys, ["clean", *hms_env])
    assert [c["status"] for c in cleaned if f"/{table}/" in json.dumps(c)] == ["cleaned"], cleaned
    assert _directories(trino, table) == [base]
    assert _digest(trino.query(select)) == before


_SPARK_WORKER = textwrap.dedent(
    """
    import json, os, sys, time

    metastore, warehouse, class_path, local_dir = sys.argv[1:5]
    # hadoop-aws on the driver's class path: local mode runs the tasks there (no copy of the bundle)
    os.environ["PYSPARK_SUBMIT_ARGS"] = (
        f"--driver-class-path {class_path} --driver-memory 1g --conf spark.ui.enabled=false "
        f"--conf spark.sql.shuffle.partitions=1 --conf spark.local.dir={local_dir} pyspark-shell"
    )
    from pyspark_hiveacid.session import hiveacid_session

    spark = hiveacid_session("local[1]")
    spark.sparkContext.setLogLevel("ERROR")


    def reply(value):
        print("REPLY", json.dumps(value), flush=True)


    reply({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        started = time.monotonic()
        try:
            if request["op"] == "read":
                reader = spark.read.format("hiveacid").option("metastore", metastore)
                reader = reader.option("warehouse", warehouse).option("engine", request["engine"])
                rows = reader.load(request["table"]).select(*request["columns"]).collect()
                reply({"rows": [list(row) for row in rows], "seconds": round(time.monotonic() - started, 1)})
            else:
                frame = spark.createDataFrame([tuple(row) for row in request["rows"]], request["schema"])
                writer = frame.write.format("hiveacid").option("metastore", metastore)
                writer.option("warehouse", warehouse).mode("append").save(request["table"])
                reply({"appended": len(request["rows"]), "seconds": round(time.monotonic() - started, 1)})
        except Exception as error:  # back to the test, which fails with it
            reply({"error": f"{type(error).__name__}: {error}"[-4000:]})
    spark.stop()
    """
)


class _SparkWorker:
    """One Spark application (its own process: hadoop-aws must be on the JVM's class path from its
    start) that serves this module's ``hiveacid`` reads and appends, one JSON line each way."""

    def __init__(self, process, log, metastore, warehouse):
        self.process, self.log = process, log
        self.store = ["--metastore", metastore, "--warehouse", warehouse]

    def request(self, **request):
        if request:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith("REPLY "):
                answer = json.loads(line.removeprefix("REPLY "))
                assert "error" not in answer, answer["error"]
                return answer
        raise AssertionError(f"the Spark worker ended: {self.log.read_text(errors='replace')[-3000:]}")

    def read(self, table, engine, columns):
        rows = self.request(op="read", table=table, engine=engine, columns=columns)["rows"]
        return sorted(map(tuple, rows))

    def append(self, table, rows, schema):
        return self.request(op="append", table=table, rows=rows, schema=schema)

    def release_leases(self, capsys, table=None):
        """Release the reader leases the reads took (what their TTL does after ``lease_ttl``)."""
        leases = _run(capsys, ["lease", "list", *([table] if table else []), *self.store])
        for lease in leases:
            capsys.readouterr()
            if acidflow(["lease", "release", str(lease["lease_id"]), *self.store]) != 0:
                # listed, then gone: its TTL ran out in between (what release would have done)
                assert "No such reader lease" in capsys.readouterr().err
        return leases


@pytest.fixture(scope="module")
def spark_worker(trino, s3a_jars, tmp_path_factory):
    """The module's one Spark session, ``format("hiveacid")`` in HMS mode (``metastore`` =
    the Trino HMS's ``thrift://``; ``warehouse`` a local directory: acidflow's lock store for the
    appends' locks) on the tests' S3 server: the JVM reader through S3A, the Python source through
    pyarrow, both from the AWS variables."""
    directory = tmp_path_factory.mktemp("trino-spark")
    (directory / "warehouse").mkdir()
    (directory / "local").mkdir()
    script = directory / "worker.py"
    script.write_text(_SPARK_WORKER)
    log = directory / "spark.log"
    env = {
        **os.environ,
        **trino.s3.environment(),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p),
    }
    arguments = [trino.metastore.uri, str(directory / "warehouse"), os.pathsep.join(s3a_jars)]
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(script), *arguments, str(directory / "local")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=env,
            cwd=directory,
        )
    worker = _SparkWorker(process, log, trino.metastore.uri, str(directory / "warehouse"))
    try:
        worker.request()  # ready
        yield worker
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


@pytest.fixture
def spark(spark_worker, capsys):
    """The module's Spark worker; the leases of a test's reads are released after it, so that no
    reader of one test holds back the cleaner of another."""
    yield spark_worker
    spark_worker.release_leases(capsys)


@pytest.mark.integration("spark")
@pytest.mark.integration("s3")
def test_hiveacid_spark_source_reads_a_trino_table_like_trino_before_and_after_acidflow_compaction(
    trino, hms_env, capsys, spark
):
    """Trino's INSERT, UPDATE, DELETE and MERGE (a partitioned table on S3) read through
    ``format("hiveacid")`` with the table's metastore the HMS: the JVM reader (``s3a://``) and the
    Python source return Trino's rows, and again after acidflow's major compaction and clean.
    Each Spark read's snapshot is a reader lease (an HMS transaction with a SHARED_READ lock, until
    its ``lease_ttl``): the cleaner waits for them, and cleans once they are released."""
    table = "spark_reads_p"
    expected = _trino_writes(trino, table, partitioned=True)
    depts = {2: "a", 3: "b", 4: "b", 5: "a"}
    expected = [(*row, depts[row[0]]) for row in expected]
    columns = ["id", "name", "salary", "dept"]
    name = f"{SCHEMA}.{table}"
    assert _trino_rows(trino, table, "id, name, salary, dept") == expected
    assert spark.read(name, "jvm", columns) == expected
    assert spark.read(name, "python", columns) == expected

    for partition in ("dept=a", "dept=b"):
        target = ["--table", name, "--partition", partition, "--type", "major", "--executor", "embedded"]
        assert [o["status"] for o in _run(capsys, ["compact", *hms_env, *target])] == ["compacted"]
    cleaned = _run(capsys, ["clean", *hms_env])
    assert not [c for c in cleaned if f"/{table}/" in json.dumps(c)], cleaned  # the reads' leases
    assert len(_directories(trino, table)) > 2
    assert spark.release_leases(capsys, name)
    cleaned = _run(capsys, ["clean", *hms_env])
    assert [c["status"] for c in cleaned if f"/{table}/" in json.dumps(c)] == ["cleaned"] * 2, cleaned
    leaves = [directory.rsplit("/", 1)[-1] for directory in _directories(trino, table)]
    assert len(leaves) == 2, leaves
    assert all(leaf.startswith("base_") for leaf in leaves), leaves
    assert _trino_rows(trino, table, "id, name, salary, dept") == expected
    assert spark.read(name, "jvm", columns) == expected
    assert spark.read(name, "python", columns) == expected


@pytest.mark.integration("spark")
@pytest.mark.integration("s3")
def test_hiveacid_spark_append_into_a_trino_table_reads_back_in_trino(trino, hms_env, capsys, spark):
    """A ``format("hiveacid")`` append in HMS mode (the HMS's transaction and write ID) into a
    Trino table, one existing partition and a new one: Trino's SELECT returns the rows, and
    Trino's DELETE of a Spark row reads back in Spark."""
    table = "spark_appends_p"
    trino.query(
        f"CREATE TABLE {SCHEMA}.{table} (id int, name varchar, salary int, dept varchar) "
        f"WITH (transactional = true, partitioned_by = ARRAY['dept'], {NAMES_V})"
    )
    trino.query(f"INSERT INTO {SCHEMA}.{table} VALUES (1, 'ann', 10, 'a')")
    rows = [[2, "bob", 20, "a"], [3, "cid", 30, "c"]]
    schema = "id int, name string, salary int, dept string"
    assert spark.append(f"{SCHEMA}.{table}", rows, schema)["appended"] == 2
    expected = [(1, "ann", 10, "a"), (2, "bob", 20, "a"), (3, "cid", 30, "c")]
    assert _trino_rows(trino, table, "id, name, salary, dept") == expected
    assert _acidflow_rows(capsys, hms_env, table, partitions=("dept=a", "dept=c")) == expected

    trino.query(f"DELETE FROM {SCHEMA}.{table} WHERE id = 3")
    columns = ["id", "name", "salary", "dept"]
    assert spark.read(f"{SCHEMA}.{table}", "jvm", columns) == expected[:2]
