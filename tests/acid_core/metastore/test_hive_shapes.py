"""The Hive Metastore adapter against Hive 3/4 request/response shapes (no Hive 3/4 server runs here).

Hive 3.x and 4.x metastores cannot run on the test machines (their standalone metastore needs a
Hadoop 3.3/Tez stack PySpark does not ship), so their extra calls are covered here: the adapter
runs its real code path over ``RecordedHmsConnection``, which answers each call with a response
built from the generated Hive 4 IDL (``hive_metastore.ttypes``), shaped as Hive's TxnHandler /
CompactionTxnHandler fill them (e.g. ``abortedBits`` is ``java.util.BitSet.toByteArray`` over the
listed IDs), and records every request so its fields can be checked. A server that does not know a
call answers ``UNSUPPORTED``, as ``ThriftHmsConnection.call_optional`` does after Thrift's
UNKNOWN_METHOD. The shapes are built from the IDL and Hive's code, not captured from a live
Hive 3/4 server; the Hive 2.3 paths run against a real server in
``tests/integration/test_hive_metastore.py``.
"""

from __future__ import annotations

import pytest
from hive_metastore import ttypes as T

from acid_core.errors import (
    CommitConflictError,
    HiveMetastoreCapabilityError,
    InvalidMetastoreRequestError,
    NoSuchPartitionError,
    NoSuchTableError,
    TxnNotOpenError,
)
from acid_core.metastore import CompactionState, CompactionType
from acid_core.metastore.hive.metastore import HIVE31_NAMES_PROPERTY, HiveMetastore
from acid_core.metastore.hive.thrift import UNSUPPORTED, HmsEndpoint, is_thrift_url, parse_metastore_uris
from acid_core.writeids import ValidTxnList

HIVE4_ONLY = {"get_open_txns_req", "find_next_compact2", "get_latest_committed_compaction_info"}
HIVE3_AND_LATER = {"get_valid_write_ids", "allocate_table_write_ids"}


class RecordedHmsConnection:
    """Answers calls from ``responses`` (method -> value, exception or callable of the args)."""

    def __init__(self, responses, unknown=()):
        self.responses = dict(responses)
        self.unknown = set(unknown)
        self.calls = []

    @property
    def description(self):
        return "thrift://recorded:9083"

    def call(self, method, *args):
        self.calls.append((method, args))
        if method in self.unknown:
            raise AssertionError(f"{method} called on a server that does not know it")
        answer = self.responses[method]
        if callable(answer) and not isinstance(answer, type):
            answer = answer(*args)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def call_optional(self, method, *args):
        if method in self.unknown:
            self.calls.append((method, args))
            return UNSUPPORTED
        return self.call(method, *args)

    def close(self):
        pass

    def requests(self, method):
        return [args for name, args in self.calls if name == method]


def _hive4(**responses):
    base = {
        "get_valid_write_ids": T.NoSuchObjectException("acidflow_probe.no_such_table"),
        "get_latest_committed_compaction_info": T.GetLatestCommittedCompactionInfoResponse(compactions=[]),
    }
    # A real 4.0.1 server answers get_table with "Invalid method name" (get_table_req only).
    return RecordedHmsConnection({**base, **responses}, unknown={"get_table"})


def _hive3(**responses):
    base = {"get_valid_write_ids": T.NoSuchObjectException("acidflow_probe.no_such_table")}
    return RecordedHmsConnection({**base, **responses}, unknown=HIVE4_ONLY)


def _bits(*indexes):
    value = 0
    for index in indexes:
        value |= 1 << index
    return value.to_bytes((max(indexes) // 8) + 1, "little") if indexes else b""


def _element(id_, state, table="t"):
    return T.ShowCompactResponseElement(
        dbname="db", tablename=table, partitionname=None, type=T.CompactionType.MAJOR, state=state, id=id_
    )


# --- URIs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("thrift://h:9083", (HmsEndpoint("h", 9083),)),
        ("thrift://a:1,thrift://b", (HmsEndpoint("a", 1), HmsEndpoint("b", 9083))),
        (" thrift://a:1 , thrift://b:2 ", (HmsEndpoint("a", 1), HmsEndpoint("b", 2))),
    ],
    ids=["one", "two-default-port", "spaces"],
)
def test_parse_metastore_uris_valid_lists_parse(text, expected):
    assert parse_metastore_uris(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "thrift://", "http://h:9083", "thrift://h:notaport", "thrift://h:9083/db", "thrift://a,,thrift://b"],
)
def test_parse_metastore_uris_bad_list_raises_naming_the_value(text):
    with pytest.raises(InvalidMetastoreRequestError, match=r"expected thrift://host\[:port\]"):
        parse_metastore_uris(text)


def test_is_thrift_url_tells_hms_from_sql_urls():
    assert is_thrift_url("THRIFT://h:9083")
    assert not is_thrift_url("postgresql://h/db")
    assert not is_thrift_url(None)


# --- capabilities -----------------------------------------------------------------------------------


def test_hive_shapes_hive4_server_has_write_ids_and_worker_calls():
    store = HiveMetastore(_hive4())
    assert not store.is_hive2()
    assert store.has_worker_calls()


def test_hive_shapes_hive3_server_has_write_ids_but_no_worker_calls():
    store = HiveMetastore(_hive3())
    assert not store.is_hive2()
    assert not store.has_worker_calls()


def test_hive_shapes_unknown_method_is_probed_once_per_connection():
    connection = RecordedHmsConnection({}, unknown=HIVE4_ONLY | HIVE3_AND_LATER)
    store = HiveMetastore(connection)
    assert store.is_hive2()
    assert store.is_hive2()
    assert not store.has_worker_calls()
    assert not store.has_worker_calls()
    assert len(connection.requests("get_valid_write_ids")) == 1
    assert len(connection.requests("get_latest_committed_compaction_info")) == 1


# --- snapshots ----------------------------------------------------------------------------------------


def test_hive_shapes_hive4_snapshot_from_get_open_txns_req_aborted_bits():
    # TxnHandler.getOpenTxns: open_txns lists open and aborted txns; abortedBits marks the aborted.
    response = T.GetOpenTxnsResponse(
        txn_high_water_mark=10, open_txns=[3, 5, 7], min_open_txn=5, abortedBits=_bits(0, 2)
    )
    connection = _hive4(get_open_txns_req=response)
    snapshot = HiveMetastore(connection).get_valid_txns()
    assert snapshot == ValidTxnList(10, (5,), (3, 7), 5)
    [(request,)] = connection.requests("get_open_txns_req")
    assert request.excludeTxnTypes == [T.TxnType.READ_ONLY]


def test_hive_shapes_hive4_snapshot_of_a_txn_sees_nothing_above_it():
    response = T.GetOpenTxnsResponse(
        txn_high_water_mark=10, open_txns=[3, 5, 7], min_open_txn=5, abortedBits=_bits(0, 2)
    )
    snapshot = HiveMetastore(_hive4(get_open_txns_req=response)).get_valid_txns(current_txn_id=7)
    assert snapshot == ValidTxnList(7, (5,), (3,), 5)


def test_hive_shapes_hive3_snapshot_falls_back_to_get_open_txns_info():
    info = T.GetOpenTxnsInfoResponse(
        txn_high_water_mark=9,
        open_txns=[T.TxnInfo(id=4, state=T.TxnState.ABORTED), T.TxnInfo(id=8, state=T.TxnState.OPEN)],
    )
    connection = _hive3(get_open_txns_info=info)
    assert HiveMetastore(connection).get_valid_txns() == ValidTxnList(9, (8,), (4,), 8)


def test_hive_shapes_hive4_write_ids_from_get_valid_write_ids():
    valid = T.TableValidWriteIds(
        fullTableName="db.t",
        writeIdHighWaterMark=8,
        invalidWriteIds=[2, 4, 6],
        minOpenWriteId=4,
        abortedBits=_bits(0, 2),
    )

    def answer(request):
        if request.fullTableNames == ["acidflow_probe.no_such_table"]:
            raise T.NoSuchObjectException("no such table")
        return T.GetValidWriteIdsResponse(tblValidWriteIds=[valid])

    connection = _hive4(get_valid_write_ids=answer)
    txns = ValidTxnList(20, (15,), (12,), 15)
    write_ids = HiveMetastore(connection).get_valid_write_ids("DB.T", txns)
    assert (write_ids.high_watermark, write_ids.open_ids, write_ids.aborted_ids) == (8, (4,), (2, 6))
    assert (write_ids.min_open_id, write_ids.table_name) == (4, "db.t")
    request = connection.requests("get_valid_write_ids")[-1][0]
    assert (request.fullTableNames, request.validTxnList) == (["db.t"], "20:15:15:12")


def test_hive_shapes_hive2_write_ids_are_the_txn_list():
    connection = RecordedHmsConnection({}, unknown=HIVE4_ONLY | HIVE3_AND_LATER)
    txns = ValidTxnList(20, (15,), (12,), 15)
    write_ids = HiveMetastore(connection).get_valid_write_ids("db.t", txns)
    assert write_ids.to_string() == "db.t:20:15:15:12"


def test_hive_shapes_hive4_allocate_write_id_sends_db_table_and_txn():
    response = T.AllocateTableWriteIdsResponse(txnToWriteIds=[T.TxnToWriteId(txnId=7, writeId=3)])
    connection = _hive4(allocate_table_write_ids=response)
    assert HiveMetastore(connection).allocate_write_id(7, "Db.T") == 3
    [(request,)] = connection.requests("allocate_table_write_ids")
    assert (request.dbName, request.tableName, request.txnIds) == ("db", "t", [7])


def test_hive_shapes_write_conflict_on_commit_raises_commit_conflict():
    aborted = T.TxnAbortedException("Aborting [txnid:7,7] due to a write conflict on db/t committed by ...")
    store = HiveMetastore(_hive4(commit_txn=aborted))
    with pytest.raises(CommitConflictError, match=r"Transaction 7 lost a write conflict"):
        store.commit_txn(7)


def test_hive_shapes_commit_of_a_reaped_txn_raises_not_open():
    store = HiveMetastore(_hive4(commit_txn=T.TxnAbortedException("Transaction txnid:7 already aborted")))
    with pytest.raises(TxnNotOpenError, match=r"Cannot commit transaction 7: it is aborted"):
        store.commit_txn(7)


def test_hive_shapes_unknown_table_raises_no_such_table():
    store = HiveMetastore(_hive4(get_table_req=T.NoSuchObjectException("db.nope table not found")))
    with pytest.raises(NoSuchTableError, match=r"No such table 'db.nope' in the Hive Metastore"):
        store.get_table("db.nope")


# --- the compaction queue ---------------------------------------------------------------------------


def test_hive_shapes_hive4_worker_claims_with_find_next_compact2_and_keeps_v_names():
    ci = T.CompactionInfoStruct(
        id=11,
        dbname="db",
        tablename="t",
        partitionname="ds=1",
        type=T.CompactionType.MINOR,
        runas="hive",
        properties='{"compactor.x": "1"}',
        workerId="w-1",
        start=1_700_000_000_000,
    )
    connection = _hive4(find_next_compact2=T.OptionalCompactionInfoStruct(ci=ci))
    claimed = HiveMetastore(connection).find_next_to_compact("w-1", "0.1")
    assert (claimed.id, claimed.table, claimed.partition) == (11, "db.t", "ds=1")
    assert (claimed.state, claimed.compaction_type) == (CompactionState.WORKING, CompactionType.MINOR)
    assert claimed.properties == {"compactor.x": "1"}  # Hive 4 readers understand _v names
    [(request,)] = connection.requests("find_next_compact2")
    assert (request.workerId, request.workerVersion) == ("w-1", "0.1")


def test_hive_shapes_hive4_empty_queue_claims_nothing():
    connection = _hive4(find_next_compact2=T.OptionalCompactionInfoStruct(ci=None))
    assert HiveMetastore(connection).find_next_to_compact("w-1") is None


@pytest.mark.parametrize(
    ("call", "method", "fields"),
    [
        (lambda s: s.update_compactor_state(11, 40, 8), "update_compactor_state", {"highestWriteId": 8}),
        (lambda s: s.mark_compacted(11), "mark_compacted", {}),
        (lambda s: s.mark_cleaned(11, has_uncompacted_aborts=False), "mark_cleaned", {}),
        (lambda s: s.mark_failed(11, "boom"), "mark_failed", {"errorMessage": "boom"}),
        (lambda s: s.mark_refused(11, "no"), "mark_refused", {"errorMessage": "no"}),
    ],
    ids=["update_compactor_state", "mark_compacted", "mark_cleaned", "mark_failed", "mark_refused"],
)
def test_hive_shapes_hive4_queue_transitions_send_the_compaction_struct(call, method, fields):
    show = T.ShowCompactResponse(compacts=[_element(11, "working")])
    connection = _hive4(show_compact=show, **{method: None})
    call(HiveMetastore(connection))
    [args] = connection.requests(method)
    struct = args[0]
    assert (struct.id, struct.dbname, struct.tablename, struct.type) == (
        11,
        "db",
        "t",
        T.CompactionType.MAJOR,
    )
    for name, value in fields.items():
        assert getattr(struct, name) == value
    if method == "update_compactor_state":
        assert args[1] == 40


@pytest.mark.parametrize("has_uncompacted_aborts", [True, None], ids=["uncompacted-aborts", "unknown"])
def test_hive_shapes_hive4_mark_cleaned_with_aborts_left_needs_the_backend_and_sends_nothing(
    has_uncompacted_aborts,
):
    # The struct cannot say that a delta that stays holds aborted writes: the server would forget
    # every aborted write up to the highest write ID. Without the backend database: refuse.
    connection = _hive4(mark_cleaned=None)
    with pytest.raises(HiveMetastoreCapabilityError, match="set ACIDFLOW_HMS_DB") as raised:
        HiveMetastore(connection).mark_cleaned(11, has_uncompacted_aborts=has_uncompacted_aborts)
    assert "mark compaction 11 cleaned" in str(raised.value)
    assert connection.requests("mark_cleaned") == []


def test_hive_shapes_enqueue_sends_compact2_and_reuses_the_queued_id():
    connection = _hive4(compact2=T.CompactionResponse(id=5, state="initiated", accepted=False))
    store = HiveMetastore(connection)
    assert store.enqueue_compaction("db.t", "ds=1", CompactionType.MAJOR, initiator_id="acidflow") == 5
    [(request,)] = connection.requests("compact2")
    assert (request.dbname, request.tablename, request.partitionname) == ("db", "t", "ds=1")
    assert (request.type, request.initiatorId) == (T.CompactionType.MAJOR, "acidflow")


def test_hive_shapes_show_compactions_maps_hive_state_names():
    states = [
        "initiated",
        "working",
        "ready for cleaning",
        "succeeded",
        "failed",
        "did not initiate",
        "refused",
    ]
    show = T.ShowCompactResponse(compacts=[_element(i + 1, s) for i, s in enumerate(states)])
    infos = HiveMetastore(_hive4(show_compact=show)).show_compactions("db.t")
    assert [i.state for i in infos] == [
        CompactionState.INITIATED,
        CompactionState.WORKING,
        CompactionState.READY_FOR_CLEANING,
        CompactionState.SUCCEEDED,
        CompactionState.FAILED,
        CompactionState.DID_NOT_INITIATE,
        CompactionState.REFUSED,
    ]


def test_hive_shapes_hive3_worker_without_backend_db_names_the_setting():
    store = HiveMetastore(_hive3())
    with pytest.raises(
        HiveMetastoreCapabilityError, match=r"set ACIDFLOW_HMS_DB to the HMS backend database"
    ):
        store.find_next_to_compact("w-1")


def test_hive_shapes_hive4_without_backend_db_leaves_cleaning_to_hive():
    assert HiveMetastore(_hive4()).find_ready_to_clean() == []


def test_hive_shapes_leases_without_a_side_store_are_refused_with_a_hint():
    with pytest.raises(HiveMetastoreCapabilityError, match=r"side store and it is switched off"):
        HiveMetastore(_hive4()).take_lease("db.t", 60)


def _claimed(properties=None):
    from acid_core.metastore.port import CompactionInfo

    return CompactionInfo(
        1, "db.t", None, CompactionState.WORKING, CompactionType.MAJOR, properties or {}, enqueue_time=0.0
    )


def _table_with(parameters):
    return T.Table(
        dbName="db", tableName="t", parameters=parameters, partitionKeys=[], sd=T.StorageDescriptor()
    )


@pytest.mark.parametrize(
    ("table_parameters", "compaction_properties", "expected"),
    [
        ({}, {}, "true"),
        ({HIVE31_NAMES_PROPERTY: "false"}, {}, "false"),
        ({"ACIDFLOW.compactor.HIVE31-names": "false"}, {}, "false"),
        ({HIVE31_NAMES_PROPERTY: "false"}, {HIVE31_NAMES_PROPERTY: "true"}, "true"),
        ({}, {HIVE31_NAMES_PROPERTY: "false"}, "false"),
        (None, {}, "true"),
    ],
    ids=[
        "server-default",
        "table-false",
        "table-key-any-case",
        "compaction-wins",
        "compaction-false",
        "no-table",
    ],
)
def test_hive_shapes_pre_hive4_claims_carry_hive31_names_unless_set(
    table_parameters, compaction_properties, expected
):
    """Before Hive 4 a claim names outputs without _v, unless the compaction or the table (e.g. a
    table only Trino reads, on S3) sets acidflow.compactor.hive31-names itself."""
    table = T.NoSuchObjectException("db.t") if table_parameters is None else _table_with(table_parameters)
    store = HiveMetastore(_hive3(get_table=table))
    claimed = store._hive31_names(_claimed(compaction_properties))
    values = [v for k, v in claimed.properties.items() if k.lower() == HIVE31_NAMES_PROPERTY]
    assert values == [expected]


def test_hive_shapes_hive4_claims_keep_their_properties():
    assert HiveMetastore(_hive4())._hive31_names(_claimed()).properties == {}


def test_hive_shapes_set_location_alters_the_table_or_partition_sd():
    # Hive's ALTER TABLE [PARTITION] SET LOCATION: alter_table / alter_partition with a new sd.location.
    table = T.Table(dbName="db", tableName="t", sd=T.StorageDescriptor(location="/wh/db.db/t"))
    partition = T.Partition(values=["1"], sd=T.StorageDescriptor(location="/wh/db.db/t/ds=1"))
    connection = _hive4(
        get_table_req=T.GetTableResult(table=table),
        alter_table=None,
        get_partition_by_name=lambda db, t, name: (
            partition if name == "ds=1" else T.NoSuchObjectException(name)
        ),
        alter_partition=None,
    )
    store = HiveMetastore(connection)
    store.set_location("db.t", None, "/new/t")
    store.set_location("db.t", "ds=1", "/new/ds1")
    [(db, name, altered)] = connection.requests("alter_table")
    assert (db, name, altered.sd.location) == ("db", "t", "/new/t")
    [(db, name, altered_partition)] = connection.requests("alter_partition")
    assert (db, name, altered_partition.sd.location) == ("db", "t", "/new/ds1")
    with pytest.raises(NoSuchPartitionError, match=r"ds=2"):
        store.set_location("db.t", "ds=2", "/x")


def test_hive_shapes_open_compaction_txn_opens_a_compaction_txn():
    connection = _hive4(open_txns=T.OpenTxnsResponse(txn_ids=[42]))
    assert HiveMetastore(connection).open_compaction_txn(7) == 42
    [(request,)] = connection.requests("open_txns")
    assert request.txn_type == T.TxnType.COMPACTION
