"""acidflow on real Hive 2.3.10, 3.1.3 and 4.0.1 Metastores (Thrift; PostgreSQL, and MariaDB for 3.1.3).

Each test that proves something per version runs once per server (``hive_metastore_servers``, ids
``hive-2.3.10`` / ``hive-3.1.3`` / ``hive-3.1.3-mariadb`` / ``hive-4.0.1``): on 2.3 write IDs are
txn IDs; on 3.1+ every write allocates the table's write ID (``allocate_table_write_ids``) and the
directories are named by it. Each server's files are written and read by the Hive of its own
version (``ServerHive``, one oracle JVM per version for the session): 2.3.10's ``OrcRecordUpdater``
and readers (the ``hive`` oracle) on 2.3, 3.1.3's on the 3.1.3 servers (``hive31``: ROW__ID
buckets encoded by ``BucketCodec.V1``), 4.0.1's on 4.0.1 (``hive4``: it reads the compactor's
``_v<txn>`` names itself). The row-mode reader (``OrcInputFormat.getRecordReader``) and the
vectorized ``VectorizedOrcAcidRowBatchReader`` must agree, ROW__IDs included. Their snapshot is
built as that version's driver builds it, from the server's own answers to a plain Thrift client:
``get_open_txns`` (2.3: ``get_open_txns_info``) and, on 3.1+, ``get_valid_write_ids``
(``_server_snapshot``). Spark's Hive 2.3 client is not asked on Hive 4. On Hive 4 acidflow drives
the queue with Hive 4's own calls (``find_next_compact2``, ``update_compactor_state``,
``mark_compacted``, ``mark_cleaned``, ``mark_failed``); before it, by SQL on the backend database.

The story (one HMS for the module, one table per test where state matters)::

    HMS txns   1..k committed  (each: open_txns, lock(SHARED_READ, isAcid, INSERT), Hive's
                                OrcRecordUpdater writes delta_t_t_0000, commit_txn)
               a  aborted      (its delta stays on disk; TXN_COMPONENTS keeps it until cleaned)
               o  open         (highest; its delta is on disk; nobody may see it yet)

acidflow reads the table by name (``acidflow read acid_it.t --metastore thrift://...``) at the
HMS's snapshot and must see what that version's own readers see; compacts it (major, as a transaction
of the HMS, queued with ``compact2`` and claimed by SQL on COMPACTION_QUEUE as Hive's TxnHandler
does); ``show_compact`` from a plain Thrift client lists it; the cleaner waits while the open
transaction could still read the compacted deltas, then deletes them; Hive's readers read the same
rows after compaction and after cleaning, and so does Spark (``enableHiveSupport`` with
``hive.metastore.uris`` pointing at the same server, ``spark_read_hive_table.py``).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from acid_core.cli import main as acidflow
from acid_core.errors import InvalidTablePropertyError, NoSuchTableError
from acid_core.metastore import Column, TableDefinition, WriteOperation
from acid_core.metastore.factory import open_metastore
from acid_core.metastore.hive.metastore import HiveMetastore
from tests.fixtures.hive import LONG_MAX, Delete, Insert, hive_txn_list
from tests.fixtures.hive_oracles import HIVE_ORACLE_VERSIONS
from tests.fixtures.hms import HIVE_METASTORE_VERSIONS

# The first call of a fresh HMS creates its DataNucleus tables (slow on 2 shared cores).
pytestmark = [pytest.mark.integration("hive"), pytest.mark.slow, pytest.mark.timeout(600)]

DB = "acid_it"
COLUMNS = (Column("id", "int"), Column("name", "string"), Column("salary", "int"))
BUCKET0_V1 = 536870912  # BucketCodec.V1.encode(bucket 0, statement 0): Hive 3+'s ROW__ID.bucketid


@pytest.fixture(scope="module")
def server(hive_metastore_servers):
    """The HMS of this run of the module (one run per Hive version)."""
    return hive_metastore_servers


def _open_store(server, tmp_path_factory):
    store = open_metastore(
        server.uri,
        str(tmp_path_factory.mktemp("acidflow-wh")),
        hms_db=server.backend_url,
    )
    assert isinstance(store, HiveMetastore)
    if DB not in store.list_databases():
        store.create_database(DB)
    return store


def _store_for_module(server, tmp_path_factory):
    store = _open_store(server, tmp_path_factory)
    yield store
    store.close()


@pytest.fixture(scope="module")
def hms(server, tmp_path_factory):
    yield from _store_for_module(server, tmp_path_factory)


@pytest.fixture(scope="module")
def hms23(hive_metastore_server, tmp_path_factory):
    """The Hive 2.3.10 server only (tests that prove nothing version-specific)."""
    yield from _store_for_module(hive_metastore_server, tmp_path_factory)


def _thrift_client(port):
    from hive_metastore import ThriftHiveMetastore
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(30000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport)), transport


def _make_table(hms, name, partition_keys=(), properties=None):
    return hms.create_table(
        TableDefinition(
            f"{DB}.{name}",
            COLUMNS,
            partition_keys=partition_keys,
            bucket_columns=("id",),
            num_buckets=1,
            properties={"transactional": "true", "transactional_properties": "default", **(properties or {})},
        )
    )


class Write(NamedTuple):
    """One write: its HMS txn and the write ID it wrote under (the same number on Hive 2.x)."""

    txn: int
    write_id: int


def _hive_write(hms, hive, table, events_for_write, outcome="commit", partition=None, internal_names=False):
    """One Hive-style write: a txn of the HMS, its write ID and ACID lock (TXN_COMPONENTS), Hive's
    writer (events and delta named by the write ID), then the outcome.

    ``internal_names`` writes the row columns as ``_col0, _col1, ..``, as a Hive 2.x INSERT does.
    """
    txn = hms.open_txn(user="hive", host=socket.gethostname())
    write_id = hms.add_write_component(txn, table.full_name, partition, WriteOperation.INSERT)
    location = table.location.removeprefix("file://")
    if partition is not None:
        location = f"{location}/{partition}"
    hive.write_events(location, events_for_write(write_id), internal_names=internal_names)
    if outcome == "commit":
        hms.commit_txn(txn)
    elif outcome == "abort":
        hms.abort_txn(txn)
    return Write(txn, write_id)


def _story(hms, hive, name, internal_names=False):
    """Three committed inserts, a delete, one aborted and one open write (the highest txn)."""
    table = _make_table(hms, name)

    def write(events_for_write, outcome="commit"):
        return _hive_write(hms, hive, table, events_for_write, outcome, internal_names=internal_names)

    w1 = write(lambda w: [Insert(w, (1, "ann", 10)), Insert(w, (2, "bob", 20))])
    w2 = write(lambda w: [Insert(w, (3, "cid", 30))])
    w3 = write(lambda w: [Delete(w, (w1.write_id, hive.bucket0, 1))])  # bob leaves
    aborted = write(lambda w: [Insert(w, (99, "ghost", 0))], outcome="abort")
    w4 = write(lambda w: [Insert(w, (4, "dee", 40))])
    open_write = write(lambda w: [Insert(w, (5, "eve", 50))], outcome="open")
    return table, {"committed": [w1, w2, w3, w4], "aborted": aborted, "open": open_write}


def _hive_snapshot(hms, table):
    """Hive 2.3's ValidReadTxnList string of the table's current write-ID list (2.3: the txn list)."""
    write_ids = hms.get_valid_write_ids(table.full_name, hms.get_valid_txns())
    return hive_txn_list(write_ids.high_watermark, write_ids.exceptions, write_ids.min_open_id)


def _is_hive4(server):
    """Hive 4 names compactor outputs ``base_N_vT`` / ``delta_a_b_vT`` (visibility txn T)."""
    return server.version.startswith("4.")


def _without_v(name):
    """A directory name without its ``_vT`` suffix (Hive 2.3/3.1 names)."""
    return re.sub(r"_v\d+$", "", name)


def _open_txns_of_server(server):
    """The server's own answer for a reader's ``ValidTxnList``: ``(hwm, min open, open, aborted)``.

    Hive 3+: ``get_open_txns`` (open and aborted txns, ``abortedBits`` a ``java.util.BitSet`` over
    them), as ``TxnCommonUtils.createValidReadTxnList`` reads it. Hive 2.3: ``get_open_txns_info``
    (each txn with its state; 2.3's ``get_open_txns`` answers a ``set<i64>`` that the Hive 3/4 IDL
    of the Python client cannot decode), what 2.3's ``getOpenTxns`` computes from the same rows.
    """
    from hive_metastore import ttypes

    client, transport = _thrift_client(server.port)
    try:
        if server.version.startswith("2."):
            info = client.get_open_txns_info()
            opened = sorted(t.id for t in info.open_txns if t.state == ttypes.TxnState.OPEN)
            aborted = sorted(t.id for t in info.open_txns if t.state == ttypes.TxnState.ABORTED)
            return info.txn_high_water_mark, (opened[0] if opened else None), opened, aborted
        response = client.get_open_txns()
    finally:
        transport.close()
    opened, aborted = _split_by_aborted_bits(response.open_txns, response.abortedBits)
    return response.txn_high_water_mark, response.min_open_txn, opened, aborted


def _split_by_aborted_bits(ids, aborted_bits):
    """Hive's ``(ids, BitSet.toByteArray())`` pair as ``(open, aborted)``: bit i set = ids[i] aborted."""
    bits = aborted_bits or b""
    aborted = [i for n, i in enumerate(ids or []) if n // 8 < len(bits) and bits[n // 8] >> (n % 8) & 1]
    return [i for i in ids or [] if i not in aborted], aborted


def _hive_list(table, high_watermark, min_open, opened, aborted):
    """Hive 3+'s ``writeToString`` of a ``ValidReadTxnList`` (``table`` None) or ``ValidReaderWriteIdList``."""
    fields = [str(high_watermark), str(LONG_MAX if min_open is None else min_open)]
    text = ":".join([*fields, ",".join(map(str, opened)), ",".join(map(str, aborted))])
    return text if table is None else f"{table}:{text}"


def _server_snapshot(server, table_name):
    """What that server's Hive passes its readers, from the server's own answers (a plain Thrift client).

    Returns:
        ``(write_ids, valid_txns)``: Hive 3+'s ``ValidReaderWriteIdList`` of the table
        (``get_valid_write_ids`` given the ``ValidTxnList``, as ``TxnCommonUtils.
        createValidReaderWriteIdList`` reads it) and the ``ValidTxnList``; on 2.3, ``None`` and
        2.3's ``ValidReadTxnList`` (write IDs are txn IDs there).
    """
    from hive_metastore import ttypes

    high_watermark, min_open, opened, aborted = _open_txns_of_server(server)
    if server.version.startswith("2."):
        return None, hive_txn_list(high_watermark, [*opened, *aborted], min_open)
    valid_txns = _hive_list(None, high_watermark, min_open, opened, aborted)
    client, transport = _thrift_client(server.port)
    try:
        request = ttypes.GetValidWriteIdsRequest(fullTableNames=[table_name], validTxnList=valid_txns)
        [ids] = client.get_valid_write_ids(request).tblValidWriteIds
    finally:
        transport.close()
    open_ids, aborted_ids = _split_by_aborted_bits(ids.invalidWriteIds, ids.abortedBits)
    write_ids = _hive_list(
        ids.fullTableName, ids.writeIdHighWaterMark, ids.minOpenWriteId, open_ids, aborted_ids
    )
    return write_ids, valid_txns


def _has_original_files(location):
    return any(p.is_file() and not p.name.startswith(("_", ".")) for p in Path(location).iterdir())


class ServerHive:
    """The Hive of one HMS server's version: its own ``OrcRecordUpdater`` and its own readers.

    2.3.10: the ``hive`` oracle (pyspark's Hive 2.3.10 jars); 3.1.3 and 4.0.1: the ``hive31`` /
    ``hive4`` oracles (hive-exec of that version from Maven Central). One JVM per version for the
    session (the oracle fixtures are session-scoped). Hive 4 reads its compactor's ``_v<txn>`` names
    itself, with the ``ValidTxnList`` of the server: no renamed copy anywhere.
    """

    def __init__(self, server, oracle, hive23):
        self.server, self.oracle, self._hive23 = server, oracle, hive23
        self.is_hive2 = server.version.startswith("2.")
        # ROW__ID.bucketid of bucket 0: Hive 2.x writes the bucket number, Hive 3+ BucketCodec.V1.
        self.bucket0 = 0 if self.is_hive2 else BUCKET0_V1

    def write_events(self, location, events, internal_names=False):
        """One delta (``delta_w_w_0000``, and its ``delete_delta`` on 3+) written by this Hive's writer."""
        if self.is_hive2:
            return self.oracle.write_events(location, events, internal_names=internal_names)
        if internal_names:
            raise ValueError(f"Hive {self.server.version} INSERTs write the real column names, not _col0..")
        return self.oracle.write_events(location, events)

    def write_original_file(self, path, rows):
        """A pre-ACID file (plain ORC, ``000000_0``): no ACID writer involved, 2.3's ORC writer writes it."""
        self._hive23.write_original_file(path, rows)

    def read(self, location, write_ids, valid_txns, vectorized):
        if self.is_hive2:
            return self.oracle.read_rows(str(location), valid_txns, vectorized=vectorized)
        return self.oracle.read_rows(str(location), write_ids, valid_txns, vectorized=vectorized)

    def rows(self, table):
        """The table's rows at the server's current snapshot, by this Hive's row-mode and vectorized
        readers (which must agree, ROW__IDs included), sorted, without ROW__ID."""
        location = Path(table.location.removeprefix("file://"))
        write_ids, valid_txns = _server_snapshot(self.server, table.full_name)
        row_mode = sorted(self.read(location, write_ids, valid_txns, vectorized=False))
        # Hive 2.3's vectorized ACID reader cannot read original files (2.3 falls back to row mode).
        if not (self.is_hive2 and _has_original_files(location)):
            vectorized = sorted(self.read(location, write_ids, valid_txns, vectorized=True))
            assert vectorized == row_mode, f"Hive {self.server.version}: vectorized {vectorized} != row mode"
        return sorted((r[1], r[2], r[3]) for r in row_mode)


def server_hive_for(server, request):
    """The ``ServerHive`` of ``server`` (a module fixture's body; see ``server_hive``)."""
    hive23 = request.getfixturevalue("hive")
    if server.version.startswith("2."):
        return ServerHive(server, hive23, hive23)
    name = HIVE_ORACLE_VERSIONS[server.version]
    return ServerHive(server, request.getfixturevalue(name), hive23)


@pytest.fixture(scope="module")
def server_hive(server, request):
    """The Hive (writer and readers) of this run's server."""
    return server_hive_for(server, request)


@pytest.fixture(scope="module")
def hive23(hive_metastore_server, request):
    """Hive 2.3.10's writer and readers with the 2.3.10 server (the ``hms23`` tests)."""
    return server_hive_for(hive_metastore_server, request)


def _hive_rows(hive, table):
    """That server's Hive's own readers at the server's current snapshot: rows only, sorted."""
    return hive.rows(table)


def _acidflow_rows(capsys, uri, table_name, env_db=None):
    capsys.readouterr()
    assert acidflow(["read", table_name, "--metastore", uri, "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return sorted((r["id"], r["name"], r["salary"]) for r in map(json.loads, lines))


def _spark_rows(hms, server, table_name):
    """Spark (enableHiveSupport, hive.metastore.uris = the same HMS) at the table's snapshot."""
    result = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("spark_read_hive_table.py")),
            server.uri,
            table_name,
            str(server.warehouse),
            _hive_snapshot(hms, hms.get_table(table_name)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("ROWS ")]
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(lines) == 1, result.stdout[-3000:]
    return sorted((r["id"], r["name"], r["salary"]) for r in json.loads(lines[0].removeprefix("ROWS ")))


def test_hive_metastore_catalog_lists_hive_tables_and_partitions(hms):
    table = _make_table(hms, "catalog_t", partition_keys=(Column("ds", "string"),))
    hms.add_partition(table.full_name, {"ds": "2024-01-01"})

    assert DB in hms.list_databases()
    assert "catalog_t" in hms.list_tables(DB)
    loaded = hms.get_table(f"{DB}.catalog_t")
    assert loaded.table_type.value == "acid"
    assert loaded.properties["transactional"] == "true"
    assert loaded.location.startswith("file:///")
    assert loaded.location.endswith("/acid_it.db/catalog_t")
    assert [c.name for c in loaded.columns] == ["id", "name", "salary"]
    assert (loaded.bucket_columns, loaded.num_buckets) == (("id",), 1)
    [partition] = hms.list_partitions(loaded.full_name)
    assert partition.name == "ds=2024-01-01"
    assert partition.location == f"{loaded.location}/ds=2024-01-01"


def test_hive_metastore_unknown_table_raises_no_such_table(hms):
    with pytest.raises(NoSuchTableError, match=r"No such table 'acid_it.nope' in the Hive Metastore"):
        hms.get_table("acid_it.nope")


# version: (is_hive2, has_worker_calls, backend write-ID columns, backend catalog columns, VERSION)
_CAPABILITIES = {
    # no get_valid_write_ids (write IDs are txn IDs), no compactor-worker calls; DataNucleus may or
    # may not have written a VERSION row
    "2.3.10": (True, False, False, False, {None, "2.3.0"}),
    # write IDs, no worker calls, VERSION 3.1.0; no catalog columns in the txn tables (schematool,
    # on PostgreSQL and on MariaDB alike)
    "3.1.3": (False, False, True, False, {"3.1.0"}),
    # write IDs and the worker calls; the SQL queue refuses its schema (only its cleaner columns are read)
    "4.0.1": (False, True, None, None, None),
}


def test_hive_metastore_capabilities_of_each_version_are_detected(hms, server):
    from acid_core.errors import HiveMetastoreCapabilityError
    from acid_core.metastore.hive.queue_sql import HiveQueueSql

    is_hive2, worker_calls, write_ids, catalog, versions = _CAPABILITIES[server.version]
    assert (hms.is_hive2(), hms.has_worker_calls()) == (is_hive2, worker_calls)
    queue = HiveQueueSql(server.backend_url)
    try:
        assert queue.is_hive4 == _is_hive4(server)
        if _is_hive4(server):
            with pytest.raises(
                HiveMetastoreCapabilityError, match=r"schema version '4\.0\.0' is not supported"
            ):
                _ = queue.schema
            assert queue.hive4_ready_for_cleaning() == []
            return
        schema = queue.schema
    finally:
        queue.close()
    assert (schema.write_ids, schema.catalog) == (write_ids, catalog), schema
    assert schema.version in versions, schema


def test_hive_metastore_snapshot_tells_open_from_aborted(hms, server_hive, server):
    table, txns = _story(hms, server_hive, "snap_t")

    snapshot = hms.get_valid_txns()
    assert txns["aborted"].txn in snapshot.aborted_ids
    assert txns["open"].txn in snapshot.open_ids
    assert snapshot.min_open_id == min(snapshot.open_ids)
    assert all(snapshot.is_txn_valid(w.txn) for w in txns["committed"])
    write_ids = hms.get_valid_write_ids(table.full_name, snapshot)
    assert write_ids.high_watermark == txns["open"].write_id
    if server.version.startswith("2."):  # the table's write-ID list is the txn list (all tables')
        assert (write_ids.open_ids, write_ids.aborted_ids) == (snapshot.open_ids, snapshot.aborted_ids)
        assert txns["aborted"].write_id in write_ids.aborted_ids
    else:  # the table's own write IDs: 1..6 for its six writes
        assert [*(w.write_id for w in txns["committed"]), txns["open"].write_id] == [1, 2, 3, 5, 6]
        assert (write_ids.open_ids, write_ids.aborted_ids) == ((6,), (4,))
    hms.abort_txn(txns["open"].txn)


def test_acidflow_read_by_name_sees_what_hive_reads(hms, server_hive, server, capsys):
    table, txns = _story(hms, server_hive, "read_t")

    expected = [(1, "ann", 10), (3, "cid", 30), (4, "dee", 40)]
    assert _hive_rows(server_hive, table) == expected
    assert _acidflow_rows(capsys, server.uri, table.full_name) == expected

    assert acidflow(["state", table.full_name, "--metastore", server.uri, "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    aborted = txns["aborted"].write_id
    assert f"delta_{aborted:07d}_{aborted:07d}_0000" in state["aborted"]
    assert len(state["deltas"]) == 4  # three inserts and the delete delta; not the open txn's
    hms.abort_txn(txns["open"].txn)


def _row_names_in_files(table):
    """The row struct's field names of every insert-delta file of a table (what the ORC files say)."""
    import pyarrow.orc as paorc

    root = Path(table.location.removeprefix("file://"))
    return {
        tuple(paorc.ORCFile(str(f)).schema.field("row").type.names)
        for f in root.glob("delta_*/bucket_*")
        if not f.name.endswith("_flush_length")
    }


def test_acidflow_read_and_select_name_hive2_col_columns_from_the_hms(
    hms23, hive23, hive_metastore_server, capsys, tmp_path
):
    """Hive 2.x INSERTs write the row columns as ``_col0, _col1, ..`` (FileSinkOperator's internal
    names); Hive names them from the metastore's schema, by position. So do ``acidflow read db.t``
    (``--columns`` takes the metastore's names) and ``acidflow sql SELECT``. (Hive 2.3 only: the
    files of Hive 3+ INSERTs carry the real names.)"""
    hms = hms23
    table, txns = _story(hms, hive23, "colnames_t", internal_names=True)
    assert _row_names_in_files(table) == {("_col0", "_col1", "_col2")}
    expected = [(1, "ann", 10), (3, "cid", 30), (4, "dee", 40)]
    assert _hive_rows(hive23, table) == expected
    uri = hive_metastore_server.uri

    assert _acidflow_rows(capsys, uri, table.full_name) == expected
    assert acidflow(["read", table.full_name, "--metastore", uri, "--columns", "salary,name"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(map(json.loads, lines), key=lambda r: r["salary"]) == [
        {"salary": 10, "name": "ann"},
        {"salary": 30, "name": "cid"},
        {"salary": 40, "name": "dee"},
    ]
    select = f"SELECT name, salary FROM {table.full_name} WHERE id > 1"
    argv = ["sql", "--metastore", uri, "--warehouse", str(tmp_path), "--format", "jsonl", select]
    assert acidflow(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(map(json.loads, lines), key=lambda r: r["salary"]) == [
        {"name": "cid", "salary": 30},
        {"name": "dee", "salary": 40},
    ]
    hms.abort_txn(txns["open"].txn)


@pytest.mark.integration("spark")
@pytest.mark.timeout(900)
def test_acidflow_compacts_and_cleans_a_hive_table_through_the_hms(
    hms, server_hive, server, capsys, monkeypatch
):
    table, txns = _story(hms, server_hive, "compact_t")
    uri = server.uri
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)
    expected = [(1, "ann", 10), (3, "cid", 30), (4, "dee", 40)]
    location = table.location.removeprefix("file://")

    warehouse = str(server.warehouse)
    assert acidflow(["compact", "--metastore", uri, "--warehouse", warehouse, "--table", table.full_name,
                     "--type", "major", "--executor", "embedded", "--json"]) == 0  # fmt: skip
    outcome = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert outcome["status"] == "compacted", outcome
    # Hive 2.3/3.1 names: base_<highest write ID> without _v; below the open write. Hive 4: with _v.
    highest = txns["committed"][-1].write_id
    [output] = outcome["outputs"]
    assert _without_v(output) == f"base_{highest:07d}"
    assert (output != f"base_{highest:07d}") == _is_hive4(server), output

    client, transport = _thrift_client(server.port)
    try:
        from hive_metastore import ttypes

        entries = [
            e for e in client.show_compact(ttypes.ShowCompactRequest()).compacts if e.tablename == "compact_t"
        ]
        assert [(e.state, e.type) for e in entries] == [("ready for cleaning", ttypes.CompactionType.MAJOR)]
    finally:
        transport.close()

    # Hive's reader, right after the compaction: same rows, from the base.
    assert _hive_rows(server_hive, table) == expected
    assert _acidflow_rows(capsys, uri, table.full_name) == expected

    # The open txn (started before the compaction committed) could still read the deltas.
    assert acidflow(["clean", "--metastore", uri, "--warehouse", warehouse, "--json"]) == 0
    [waiting] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (waiting["status"], waiting["actions"]) == ("waiting", []), waiting
    assert "is still open and began before the compaction committed" in waiting["message"], waiting
    before = sorted(p.name for p in Path(location).iterdir())
    first = txns["committed"][0].write_id
    assert f"delta_{first:07d}_{first:07d}_0000" in before

    hms.commit_txn(txns["open"].txn)  # the writer finishes: its row is now visible, above the base
    expected_after = [*expected, (5, "eve", 50)]
    assert acidflow(["clean", "--metastore", uri, "--warehouse", warehouse, "--json"]) == 0
    [result] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert result["status"] == "cleaned", result
    after = sorted(p.name for p in Path(location).iterdir() if not p.name.startswith("_"))
    open_delta = f"delta_{txns['open'].write_id:07d}_{txns['open'].write_id:07d}_0000"
    assert after == [output, open_delta]

    assert _hive_rows(server_hive, table) == expected_after
    assert _acidflow_rows(capsys, uri, table.full_name) == expected_after
    # Spark's Hive 2.3.10 client cannot parse Hive 4's base_N_vT; it reads through Thrift, so the
    # backend database changes nothing for it (one run on 3.1.3 is enough: a Spark job costs ~1 min).
    if not _is_hive4(server) and server.backend == "postgres":
        assert _spark_rows(hms, server, table.full_name) == expected_after

    client, transport = _thrift_client(server.port)
    try:
        entries = [
            e for e in client.show_compact(ttypes.ShowCompactRequest()).compacts if e.tablename == "compact_t"
        ]
        assert [e.state for e in entries] == ["succeeded"]
    finally:
        transport.close()


def test_thrift_connection_fails_over_to_the_next_uri(hive_metastore_server):
    from acid_core.metastore.hive.thrift import ThriftHmsConnection, parse_metastore_uris

    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()  # nothing listens there any more
    uris = parse_metastore_uris(f"thrift://127.0.0.1:{dead_port},{hive_metastore_server.uri}")
    connection = ThriftHmsConnection(uris, retry_delay_seconds=0.01)
    try:
        assert "default" in connection.call("get_all_databases")
        assert connection.current_endpoint.port == hive_metastore_server.port
    finally:
        connection.close()


def test_acidflow_initiate_queues_a_hive_table_through_compact2(hms, server_hive, server, capsys):
    table = _make_table(hms, "initiate_t")
    for i in range(11):  # more than hive.compactor.delta.num.threshold (10) deltas, no base
        _hive_write(hms, server_hive, table, lambda t, i=i: [Insert(t, (i, f"n{i}", i))])
    uri = server.uri
    warehouse = str(server.warehouse)

    assert acidflow(["initiate", "--metastore", uri, "--warehouse", warehouse, "--table", table.full_name,
                     "--json"]) == 0  # fmt: skip
    [decision] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert decision["compaction_type"] == "major", decision
    assert decision["compaction_id"] is not None

    client, transport = _thrift_client(server.port)
    try:
        from hive_metastore import ttypes

        [entry] = [
            e
            for e in client.show_compact(ttypes.ShowCompactRequest()).compacts
            if e.tablename == "initiate_t"
        ]
        assert (entry.id, entry.state, entry.type) == (
            decision["compaction_id"],
            "initiated",
            ttypes.CompactionType.MAJOR,
        )
    finally:
        transport.close()


def test_acidflow_cleaner_waits_for_a_hive_read_lock_taken_before_the_compaction(
    hms, server_hive, server, capsys, monkeypatch
):
    """A Hive 2.x query holds a SHARED_READ lock on the table while it reads (DbTxnManager): the
    cleaner must not delete the deltas it may still open, as Hive 2.3's Cleaner waits for locks."""
    from hive_metastore import ttypes

    table = _make_table(hms, "lock_t")
    writes = [
        _hive_write(hms, server_hive, table, lambda t, i=i: [Insert(t, (i, f"n{i}", i))]) for i in range(3)
    ]
    uri, warehouse = server.uri, str(server.warehouse)
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)
    client, transport = _thrift_client(server.port)
    try:
        component = ttypes.LockComponent(
            type=ttypes.LockType.SHARED_READ,
            level=ttypes.LockLevel.TABLE,
            dbname=DB,
            tablename="lock_t",
            operationType=ttypes.DataOperationType.SELECT,
        )
        lock = client.lock(ttypes.LockRequest(component=[component], user="reader", hostname="h"))
        assert lock.state == ttypes.LockState.ACQUIRED
        assert acidflow(["compact", "--metastore", uri, "--warehouse", warehouse, "--table", table.full_name,
                         "--type", "major", "--executor", "embedded"]) == 0  # fmt: skip
        assert acidflow(["clean", "--metastore", uri, "--warehouse", warehouse]) == 0
        output = capsys.readouterr().out
        assert "/lock_t/" not in output  # nothing of this table was cleaned (other tables may be)
        names = sorted(p.name for p in Path(table.location.removeprefix("file://")).iterdir())
        [base] = [name for name in names if name.startswith("base_")]
        # the compactor's high watermark: below its own txn, at or above the last write
        assert int(_without_v(base).removeprefix("base_")) >= writes[-1].write_id
        assert sum(name.startswith("delta_") for name in names) == 3  # nothing deleted under the lock

        client.unlock(ttypes.UnlockRequest(lockid=lock.lockid))
    finally:
        transport.close()
    assert acidflow(["clean", "--metastore", uri, "--warehouse", warehouse]) == 0
    assert "cleaned: deleted 3 path(s)" in capsys.readouterr().out
    names = sorted(p.name for p in Path(table.location.removeprefix("file://")).iterdir() if p.name[0] != "_")
    assert names == [base]


def test_acidflow_minor_compaction_of_a_hive_table_reads_the_same_in_hive(
    hms, server_hive, server, capsys, monkeypatch
):
    table, txns = _story(hms, server_hive, "minor_t")
    uri, warehouse = server.uri, str(server.warehouse)
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)
    expected = [(1, "ann", 10), (3, "cid", 30), (4, "dee", 40)]

    assert acidflow(["compact", "--metastore", uri, "--warehouse", warehouse, "--table", table.full_name,
                     "--type", "minor", "--executor", "embedded", "--json"]) == 0  # fmt: skip
    outcome = json.loads(capsys.readouterr().out.splitlines()[-1])
    first, last = txns["committed"][0].write_id, txns["committed"][-1].write_id
    # Hive 2.3/3.1 names: delta_<min>_<max> and delete_delta_<min>_<max> over write IDs, no _v
    # (Hive 4: with _v<compactor txn>).
    assert all(name != _without_v(name) for name in outcome["outputs"]) == _is_hive4(server)
    assert sorted(map(_without_v, outcome["outputs"])) == [
        f"delete_delta_{first:07d}_{last:07d}",
        f"delta_{first:07d}_{last:07d}",
    ]
    assert _hive_rows(server_hive, table) == expected
    assert _acidflow_rows(capsys, uri, table.full_name) == expected
    hms.abort_txn(txns["open"].txn)


def test_acidflow_adopts_a_converted_hive_table_with_original_files(
    hms, server_hive, server, capsys, monkeypatch
):
    """A table converted to ACID keeps its pre-ACID files (``000000_0``): a major compaction through
    the HMS folds them into the base with the deltas, and Hive reads the same rows before and after."""
    table = _make_table(hms, "original_t")
    location = table.location.removeprefix("file://")
    server_hive.write_original_file(f"{location}/000000_0", [(1, "old", 1), (2, "older", 2)])
    t1 = _hive_write(hms, server_hive, table, lambda t: [Insert(t, (3, "new", 3))])
    second_original = (0, server_hive.bucket0, 1)  # Hive 3+: V1-encoded bucket of the synthetic ROW__ID
    _hive_write(hms, server_hive, table, lambda t: [Delete(t, second_original)])
    uri, warehouse = server.uri, str(server.warehouse)
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)
    expected = [(1, "old", 1), (3, "new", 3)]
    assert _hive_rows(server_hive, table) == expected
    assert _acidflow_rows(capsys, uri, table.full_name) == expected

    assert acidflow(["compact", "--metastore", uri, "--warehouse", warehouse, "--table", table.full_name,
                     "--type", "major", "--executor", "embedded", "--json"]) == 0  # fmt: skip
    outcome = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert outcome["status"] == "compacted", outcome
    assert outcome["outputs"][0].startswith("base_")
    assert t1.write_id < int(_without_v(outcome["outputs"][0]).removeprefix("base_"))
    assert _hive_rows(server_hive, table) == expected
    assert _acidflow_rows(capsys, uri, table.full_name) == expected


def test_acidflow_lease_on_the_hms_survives_a_compaction_and_clean(
    hms, server_hive, server, capsys, monkeypatch, tmp_path
):
    """A lease is an open HMS transaction holding a SHARED_READ lock, its snapshot in the side store:
    the compaction runs, the cleaner (acidflow's, and Hive's by the same rules) keeps what the lease
    reads, ``read --lease`` returns the lease-time rows; after ``lease release`` the clean goes on."""
    from hive_metastore import ttypes

    table = _make_table(hms, "lease_t")
    _hive_write(hms, server_hive, table, lambda t: [Insert(t, (1, "ann", 10)), Insert(t, (2, "bob", 20))])
    _hive_write(hms, server_hive, table, lambda t: [Insert(t, (3, "cid", 30))])
    uri, warehouse = server.uri, str(server.warehouse)
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)
    monkeypatch.setenv("ACIDFLOW_LEASE_STORE", f"sqlite:///{tmp_path / 'side.sqlite'}")
    common = ["--metastore", uri, "--warehouse", warehouse]
    capsys.readouterr()

    assert acidflow(["lease", "take", table.full_name, *common, "--ttl", "600", "--json"]) == 0
    lease = json.loads(capsys.readouterr().out)
    lease_id = lease["lease_id"]
    assert lease["txns"].startswith(f"{lease_id}:")  # the lease txn's own snapshot: nothing above it
    assert lease_id in [t.txn_id for t in hms.show_transactions()]  # SHOW TRANSACTIONS lists it
    client, transport = _thrift_client(server.port)
    try:
        locks = client.show_locks(ttypes.ShowLocksRequest(dbname=DB, tablename="lease_t")).locks
        assert [(lock.txnid, lock.type, lock.state) for lock in locks] == [
            (lease_id, ttypes.LockType.SHARED_READ, ttypes.LockState.ACQUIRED)
        ]
    finally:
        transport.close()

    _hive_write(hms, server_hive, table, lambda t: [Insert(t, (4, "dee", 40))])  # after the lease
    at_lease = [(1, "ann", 10), (2, "bob", 20), (3, "cid", 30)]
    location = Path(table.location.removeprefix("file://"))
    assert acidflow(["compact", *common, "--table", table.full_name, "--type", "major",
                     "--executor", "embedded", "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "compacted"
    deltas_before = sorted(p.name for p in location.iterdir() if p.name.startswith("delta_"))

    assert acidflow(["lease", "renew", str(lease_id), *common, "--ttl", "600"]) == 0
    capsys.readouterr()
    assert acidflow(["clean", *common, "--json"]) == 0
    # the lease txn is older than the compaction's commit: the entry waits for it, nothing deleted
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["status"], r["actions"]) for r in results if "lease_t" in json.dumps(r)] == [("waiting", [])]
    assert sorted(p.name for p in location.iterdir() if p.name.startswith("delta_")) == deltas_before

    capsys.readouterr()
    assert acidflow(["read", table.full_name, *common, "--lease", str(lease_id), "--format", "jsonl"]) == 0
    rows = sorted(
        (r["id"], r["name"], r["salary"]) for r in map(json.loads, capsys.readouterr().out.splitlines())
    )
    assert rows == at_lease

    assert acidflow(["lease", "release", str(lease_id), *common]) == 0
    assert lease_id not in [t.txn_id for t in hms.show_transactions()]
    capsys.readouterr()
    assert acidflow(["clean", *common, "--json"]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["status"] for r in results if "lease_t" in json.dumps(r)] == ["cleaned"]
    assert _acidflow_rows(capsys, uri, table.full_name) == [*at_lease, (4, "dee", 40)]
    assert acidflow(["read", table.full_name, *common, "--lease", str(lease_id)]) == 1
    assert f"No such reader lease {lease_id}" in capsys.readouterr().err


def _txn_components(server, txn_id):
    """How many TXN_COMPONENTS rows the backend database holds for ``txn_id``."""
    import sqlalchemy as sa

    from acid_core.metastore.hive.queue_sql import _with_driver

    engine = sa.create_engine(_with_driver(server.backend_url))  # mysql:// by PyMySQL, as acidflow
    try:
        q = engine.dialect.identifier_preparer.quote_identifier if _is_hive4(server) else str
        with engine.connect() as c:
            statement = f"SELECT count(*) FROM {q('TXN_COMPONENTS')} WHERE {q('TC_TXNID')} = :t"
            return c.execute(sa.text(statement), {"t": txn_id}).scalar_one()
    finally:
        engine.dispose()


def test_streaming_batchs_aborted_write_stays_hidden_after_a_compaction_that_skipped_its_delta(
    hms, server_hive, server, capsys, monkeypatch
):
    """Regression (the HMS fault soak, seed 362461268, on 3.1.3): a streaming batch's ``delta_x_y``
    holds a committed, an aborted and an open write; a major compaction must skip it (not every ID
    resolved) and its clean must not forget the aborted write, whose rows stay in that delta: 2.3's
    and 3.1's ``markCleaned`` forgot every aborted write up to the highest ID, the transaction left
    TXNS, and every reader took its rows for committed (Hive 4's MarkCleanedFunction rule now)."""
    import pyarrow as pa

    from acid_core.writes.streaming import StreamingConnection
    from acid_core.writes.transaction import Warehouse

    def rows(*values):
        return pa.table(
            {
                "id": pa.array([v[0] for v in values], pa.int32()),
                "name": pa.array([v[1] for v in values], pa.string()),
                "salary": pa.array([v[2] for v in values], pa.int32()),
            }
        )

    table = _make_table(hms, "stream_abort_t")
    uri, warehouse = server.uri, str(server.warehouse)
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)
    common = ["--metastore", uri, "--warehouse", warehouse]
    wh = Warehouse(warehouse, hms, heartbeat_seconds=None)
    for row in [(1, "ann", 10), (2, "bob", 20)]:
        with wh.transaction() as txn:
            txn.insert(table.full_name, rows(row))
    with StreamingConnection(wh, table.full_name, txns_per_batch=3) as stream:
        stream.begin_transaction()
        stream.write(rows((3, "cid", 30)))
        stream.commit_transaction()
        aborted_txn = stream.begin_transaction()
        stream.write(rows((4, "aborted", 40)))
        stream.abort_transaction()
        stream.begin_transaction()  # open while the compaction runs: the batch's delta is skipped
        stream.write(rows((5, "eve", 50)))
        capsys.readouterr()
        assert acidflow(["compact", *common, "--table", table.full_name, "--type", "major",
                         "--executor", "embedded", "--json"]) == 0  # fmt: skip
        assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "compacted"
        stream.commit_transaction()
    location = Path(table.location.removeprefix("file://"))
    capsys.readouterr()
    assert acidflow(["clean", *common, "--json"]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["status"] for r in results if "stream_abort_t" in json.dumps(r)] == ["cleaned"]
    # the two inserts are in the base now; the batch's delta_x_y (its three writes, no statement
    # suffix; 2.3 names it by txn IDs) stays, not rewritten
    [batch] = [p.name for p in location.iterdir() if p.name.startswith("delta_")]
    low, high = (int(part) for part in batch.split("_")[1:])
    assert high - low == 2

    assert hms.get_valid_txns().is_txn_aborted(aborted_txn)  # still in TXNS, still aborted
    expected = [(1, "ann", 10), (2, "bob", 20), (3, "cid", 30), (5, "eve", 50)]
    assert _acidflow_rows(capsys, uri, table.full_name) == expected
    assert _hive_rows(server_hive, table) == expected

    # The next compaction rewrites the batch and its clean deletes it; as in Hive 4 the cleaner that
    # deletes a mixed delta still counts it as holding aborts, so the one after forgets the write.
    for row in [(6, "fay", 60), (7, "gus", 70)]:
        with wh.transaction() as txn:
            txn.insert(table.full_name, rows(row))
        assert acidflow(["compact", *common, "--table", table.full_name, "--type", "major",
                         "--executor", "embedded"]) == 0  # fmt: skip
        assert acidflow(["clean", *common]) == 0
        assert not [p.name for p in location.iterdir() if p.name.startswith("delta_")]
    assert _txn_components(server, aborted_txn) == 0  # forgotten (2.3/3.1: and left TXNS at once;
    # Hive 4's own housekeeper deletes the emptied TXNS row on its schedule)
    assert _is_hive4(server) or not hms.get_valid_txns().is_txn_aborted(aborted_txn)
    expected += [(6, "fay", 60), (7, "gus", 70)]
    assert _acidflow_rows(capsys, uri, table.full_name) == expected
    assert _hive_rows(server_hive, table) == expected


def test_acidflow_initiate_honours_hms_tblproperties_and_hms_aborted_txns(hms, server_hive, server, capsys):
    """TBLPROPERTIES set in the HMS steer the initiator as they steer Hive's: NO_AUTO_COMPACTION (any
    case) and ``compactorthreshold.*`` overrides; aborted transactions are the HMS's own."""
    noauto = _make_table(hms, "noauto_t", properties={"NO_AUTO_COMPACTION": "TRUE"})
    override = _make_table(
        hms, "override_t", properties={"compactorthreshold.hive.compactor.delta.num.threshold": "2"}
    )
    plain = _make_table(hms, "plain_t")
    aborts = _make_table(
        hms, "aborts_t", properties={"compactorthreshold.hive.compactor.abortedtxn.threshold": "1"}
    )
    for i in range(11):
        _hive_write(hms, server_hive, noauto, lambda t, i=i: [Insert(t, (i, f"n{i}", i))])
    for table in (override, plain):
        for i in range(3):
            _hive_write(hms, server_hive, table, lambda t, i=i: [Insert(t, (i, f"n{i}", i))])
    _hive_write(hms, server_hive, aborts, lambda t: [Insert(t, (1, "kept", 1))])
    for i in range(2):  # aborted in the HMS: TXNS state 'a', their deltas stay on disk
        _hive_write(
            hms, server_hive, aborts, lambda t, i=i: [Insert(t, (9 + i, "ghost", 0))], outcome="abort"
        )
    uri, warehouse = server.uri, str(server.warehouse)
    tables = [noauto, override, plain, aborts]
    argv = ["initiate", "--metastore", uri, "--warehouse", warehouse, "--json"]
    for table in tables:
        argv += ["--table", table.full_name]
    capsys.readouterr()

    assert acidflow(argv) == 0

    decisions = {d["table"]: d for d in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {name: (d["reason"], d["compaction_id"] is not None) for name, d in decisions.items()} == {
        noauto.full_name: ("no_auto_compaction", False),
        override.full_name: ("no_base_and_delta_num_over_threshold", True),
        plain.full_name: ("below_thresholds", False),
        aborts.full_name: ("too_many_aborts", True),
    }
    queued = {(e.table, e.state.value) for e in hms.show_compactions() if e.table in decisions}
    assert queued == {(override.full_name, "initiated"), (aborts.full_name, "initiated")}


@pytest.mark.integration("spark")
@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["jvm", "python"])
@pytest.mark.parametrize("internal_names", [False, True], ids=["named", "col_names"])
def test_spark_hiveacid_reads_a_hive_table_through_the_hms(
    hms23, hive23, hive_metastore_server, spark, engine, internal_names
):
    """``spark.read.format("hiveacid")`` on a Hive-written table of the real HMS (option
    ``metastore``): the JVM reader's planner and the Python source both plan through the Thrift
    adapter and return what Hive 2.3's own reader returns at the same snapshot, with the
    metastore's column names also when the files name them ``_col0, ..`` (Hive 2.x INSERTs)."""
    name = f"spark_{engine}_{'col' if internal_names else 'named'}_t"
    hms = hms23
    table, txns = _story(hms, hive23, name, internal_names=internal_names)
    if internal_names:
        assert _row_names_in_files(table) == {("_col0", "_col1", "_col2")}
    expected = [(1, "ann", 10), (3, "cid", 30), (4, "dee", 40)]
    assert _hive_rows(hive23, table) == expected
    snapshot = hms.get_valid_write_ids(table.full_name, hms.get_valid_txns())
    df = (
        spark.read.format("hiveacid")
        .option("metastore", hive_metastore_server.uri)
        .option("warehouse", str(hive_metastore_server.warehouse))
        .option("snapshot", snapshot.to_string())
        .option("engine", engine)
        .load(table.full_name)
    )
    assert df.columns == ["id", "name", "salary"]
    assert sorted(tuple(r) for r in df.collect()) == expected
    assert sorted(tuple(r) for r in df.where("salary > 15").select("name", "id").collect()) == [
        ("cid", 3),
        ("dee", 4),
    ]
    hms.abort_txn(txns["open"].txn)


def test_acidflow_sql_alter_table_tblproperties_on_the_hms_steers_the_initiator(
    hms, server_hive, server, capsys, tmp_path, monkeypatch
):
    """Issue 24 on the real HMS: ALTER TABLE SET/UNSET TBLPROPERTIES goes through ``alter_table``
    (a plain Thrift client sees the new parameters), is validated first (a refused value changes
    nothing), the server's own TransactionalValidationListener refuses 'transactional'='false'
    too, and the initiator follows NO_AUTO_COMPACTION set and unset by ALTER."""
    table = _make_table(hms, "alter_props_t")
    for i in range(3):
        _hive_write(hms, server_hive, table, lambda t, i=i: [Insert(t, (i, f"n{i}", i))])
    uri = server.uri
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)

    def sql(statement):
        capsys.readouterr()
        code = acidflow(["sql", "--metastore", uri, "--warehouse", str(tmp_path), statement])
        return code, capsys.readouterr().err.strip()

    def parameters():
        from hive_metastore import ttypes

        client, transport = _thrift_client(server.port)
        try:
            if _is_hive4(server):  # no get_table; an ACID table only for a client with capabilities
                request = ttypes.GetTableRequest(
                    dbName=DB, tblName="alter_props_t", processorCapabilities=["HIVEFULLACIDREAD"]
                )
                return dict(client.get_table_req(request).table.parameters)
            return dict(client.get_table(DB, "alter_props_t").parameters)
        finally:
            transport.close()

    def initiate():
        argv = ["initiate", "--metastore", uri, "--warehouse", str(server.warehouse)]
        capsys.readouterr()
        assert acidflow([*argv, "--json", "--table", table.full_name]) == 0
        [decision] = map(json.loads, capsys.readouterr().out.splitlines())
        return decision["reason"], decision["compaction_id"] is not None

    threshold = "compactorthreshold.hive.compactor.delta.num.threshold"
    assert sql(
        f"ALTER TABLE {table.full_name} SET TBLPROPERTIES ('NO_AUTO_COMPACTION'='true', '{threshold}'='2')"
    ) == (0, f"OK: TBLPROPERTIES of {table.full_name}: set no_auto_compaction='true', {threshold}='2'")
    assert (parameters()["no_auto_compaction"], parameters()[threshold]) == ("true", "2")
    assert initiate() == ("no_auto_compaction", False)

    before = parameters()
    code, message = sql(f"ALTER TABLE {table.full_name} SET TBLPROPERTIES ('transactional'='false')")
    assert code == 1
    assert message.startswith("acidflow sql: error: Invalid table property transactional='false'")
    assert "'transactional'='true' cannot be unset" in message
    code, message = sql(f"ALTER TABLE {table.full_name} SET TBLPROPERTIES ('{threshold}'='many')")
    assert (code, message.splitlines()[0][:42]) == (1, "acidflow sql: error: Invalid compaction se")
    assert parameters() == before
    # Past acidflow's own check, the server refuses it as well (Hive's TransactionalValidationListener).
    with pytest.raises(InvalidTablePropertyError, match=r"'transactional'='true' cannot be unset"):
        hms.alter_table_properties(table.full_name, {"transactional": "false"})
    assert parameters() == before

    assert sql(
        f"ALTER TABLE {table.full_name} UNSET TBLPROPERTIES IF EXISTS ('no_auto_compaction', 'x')"
    ) == (
        0,
        f"OK: TBLPROPERTIES of {table.full_name}: unset no_auto_compaction",
    )
    assert "no_auto_compaction" not in parameters()
    assert initiate() == ("no_base_and_delta_num_over_threshold", True)


# --- Hive 4.0.1 (hive-standalone-metastore-server): its own compactor calls ----------------------


@pytest.fixture(scope="module")
def hms4(hive_metastore_server_4, tmp_path_factory):
    yield from _store_for_module(hive_metastore_server_4, tmp_path_factory)


@pytest.fixture(scope="module")
def hive4_server_hive(hive_metastore_server_4, request):
    """Hive 4.0.1's writer and readers with the 4.0.1 server."""
    return server_hive_for(hive_metastore_server_4, request)


def test_hive4_metastore_catalog_and_capabilities(hms4):
    """A real 4.0.1 server: write IDs and the compactor-worker calls; ACID tables are created with
    ``create_table_req`` and read with ``get_table_req`` (it refuses an ACID table from a client that
    declares no processor capabilities and no longer knows ``get_table``)."""
    assert (hms4.is_hive2(), hms4.has_worker_calls()) == (False, True)
    table = _make_table(hms4, "catalog4_t", partition_keys=(Column("ds", "string"),))
    hms4.add_partition(table.full_name, {"ds": "2024-01-01"})
    loaded = hms4.get_table(table.full_name)
    assert (loaded.table_type.value, loaded.properties["transactional"]) == ("acid", "true")
    assert [p.name for p in hms4.list_partitions(loaded.full_name)] == ["ds=2024-01-01"]


@pytest.mark.timeout(900)
def test_hive4_acidflow_compacts_through_hive4_compactor_calls(
    hms4, hive4_server_hive, hive_metastore_server_4, capsys
):
    """compact2 queues, find_next_compact2 claims, update_compactor_state / mark_compacted record
    the run, show_compact from a plain Thrift client lists it; acidflow reads the same rows."""
    server = hive_metastore_server_4
    table, txns = _story(hms4, hive4_server_hive, "compact4_t")
    uri, warehouse = server.uri, str(server.warehouse)
    expected = [(1, "ann", 10), (3, "cid", 30), (4, "dee", 40)]
    assert _acidflow_rows(capsys, uri, table.full_name) == expected

    assert acidflow(["compact", "--metastore", uri, "--warehouse", warehouse, "--table", table.full_name,
                     "--type", "major", "--executor", "embedded", "--json"]) == 0  # fmt: skip
    outcome = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert outcome["status"] == "compacted", outcome
    highest = txns["committed"][-1].write_id
    [output] = outcome["outputs"]
    assert output.startswith(f"base_{highest:07d}_v"), output  # Hive 4 names: base_<write ID>_v<txn>
    assert _acidflow_rows(capsys, uri, table.full_name) == expected

    from hive_metastore import ttypes

    client, transport = _thrift_client(server.port)
    try:
        entries = [
            e
            for e in client.show_compact(ttypes.ShowCompactRequest()).compacts
            if e.tablename == "compact4_t"
        ]
        assert [(e.state, e.type) for e in entries] == [("ready for cleaning", ttypes.CompactionType.MAJOR)]
    finally:
        transport.close()
    # What the server recorded in its own columns (show_compact of pyiceberg's IDL does not carry
    # them; the cleaner reads them from the backend): update_compactor_state named the txn and the
    # highest write ID; commit_txn set CQ_NEXT_TXN_ID to the txn high water mark, then the
    # compaction's own txn (nothing began after it), and CQ_COMMIT_TIME.
    from acid_core.metastore.hive.queue_sql import HiveQueueSql

    queue = HiveQueueSql(server.backend_url)
    try:
        [row] = [r for r in queue.hive4_queued() if r.table == "compact4_t"]
    finally:
        queue.close()
    assert output.endswith(f"_v{row.txn_id:07d}"), (output, row)
    assert (row.state, row.highest_write_id, row.next_txn_id) == ("r", highest, row.txn_id), row
    assert row.commit_time_ms is not None
    hms4.abort_txn(txns["open"].txn)


def test_hive4_rebalance_through_compact2_and_find_next_compact2(
    hms4, hive4_server_hive, hive_metastore_server_4, capsys
):
    """A rebalance goes to Hive 4 as its own REBALANCE type with numberOfBuckets and orderByClause;
    find_next_compact2 hands them back to acidflow's worker, which refuses an explicitly bucketed
    table with Hive's message and rebalances an unbucketed one into 2 bucket files with the rows of
    before; show_compact from a plain Thrift client lists the type as Hive's 3 (REBALANCE)."""
    from acid_core.compaction.worker import run_worker
    from acid_core.metastore import CompactionState, CompactionType

    server = hive_metastore_server_4
    bucketed = _make_table(hms4, "rebalance4_bucketed")  # CLUSTERED BY (id) INTO 1 BUCKETS
    refused_id = hms4.enqueue_compaction(bucketed.full_name, None, CompactionType.REBALANCE)
    [refused] = run_worker(hms4, max_compactions=1)
    assert (refused.status, refused.message) == (
        "refused",
        "Cannot execute rebalancing compaction on bucketed tables.",
    )
    assert hms4.get_compaction(refused_id).state is CompactionState.REFUSED

    table = hms4.create_table(
        TableDefinition(
            f"{DB}.rebalance4_t",
            COLUMNS,
            properties={"transactional": "true", "transactional_properties": "default"},
        )
    )
    _hive_write(
        hms4, hive4_server_hive, table, lambda w: [Insert(w, (1, "ann", 10)), Insert(w, (2, "bob", 20))]
    )
    _hive_write(hms4, hive4_server_hive, table, lambda w: [Insert(w, (3, "cid", 30))])
    expected = [(1, "ann", 10), (2, "bob", 20), (3, "cid", 30)]
    compaction_id = hms4.enqueue_compaction(
        table.full_name, None, CompactionType.REBALANCE, number_of_buckets=2, order_by="ORDER BY id DESC"
    )
    [outcome] = run_worker(hms4, max_compactions=1)
    assert outcome.status == "compacted", outcome.message
    [output] = outcome.outputs
    location = Path(hms4.get_table(table.full_name).location.removeprefix("file://"))
    assert sorted(p.name for p in (location / output).glob("bucket_*")) == ["bucket_00000", "bucket_00001"]
    assert _acidflow_rows(capsys, server.uri, table.full_name) == expected
    # Hive 4's own readers (row mode and vectorized) on the rebalanced base_N_vT
    assert _hive_rows(hive4_server_hive, table) == expected

    client, transport = _thrift_client(server.port)
    try:
        [entry] = [e for e in client.show_compact(_show_request()).compacts if e.id == compaction_id]
        assert (entry.state, entry.type) == ("ready for cleaning", 3)
    finally:
        transport.close()


def _show_request():
    from hive_metastore import ttypes

    return ttypes.ShowCompactRequest()


# Hive 4 rebalances (test_hive4_rebalance_through_compact2_and_find_next_compact2): only the servers
# before it have a refusal to prove.
@pytest.mark.parametrize(
    "hive_metastore_servers",
    [v for v in HIVE_METASTORE_VERSIONS if not v.startswith("4.")],
    indirect=True,
    ids=lambda v: f"hive-{v}",
)
def test_rebalance_before_hive4_refused_in_one_line_nothing_queued(hms):
    from acid_core.errors import UnsupportedCompactionError
    from acid_core.metastore import CompactionType

    assert not hms.has_worker_calls()
    table = _make_table(hms, "rebalance23_t")
    before = hms.show_compactions(table.full_name)
    with pytest.raises(UnsupportedCompactionError) as raised:
        hms.enqueue_compaction(table.full_name, None, CompactionType.REBALANCE, number_of_buckets=2)
    assert str(raised.value) == (
        f"Cannot queue a 'rebalance' compaction of {table.full_name}; expected 'minor' or 'major' on this "
        "Hive Metastore (rebalance compaction exists from Hive 4 on)"
    )
    assert hms.show_compactions(table.full_name) == before
