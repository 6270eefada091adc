"""The Thrift connection: failover, timeouts, retries, capabilities, over real sockets.

A small Thrift server in this process (``hive_metastore.ThriftHiveMetastore.Processor`` with a
handler that knows a few calls, on a loopback port) stands in for a metastore where the test needs
an answer; a closed port, a socket that never answers and one that hangs up after reading stand in
for broken ones. The real Hive 2.3 server is exercised in tests/integration/test_hive_metastore.py.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import types

import pytest
from hive_metastore import ThriftHiveMetastore
from hive_metastore import ttypes as T
from thrift.protocol import TBinaryProtocol
from thrift.server import TServer
from thrift.transport import TSocket, TTransport

from acid_core.cli import main as acidflow
from acid_core.errors import (
    CommitStateUnknownError,
    HiveMetastoreUnavailableError,
    InvalidMetastoreRequestError,
    MetastoreError,
    MissingDependencyError,
)
from acid_core.metastore.hive.thrift import (
    UNSUPPORTED,
    HmsEndpoint,
    ThriftHmsConnection,
    parse_metastore_uris,
)


class _Handler:
    def __init__(self):
        self.calls = []

    def get_all_databases(self):
        self.calls.append("get_all_databases")
        return ["default", "sales"]


class _KnowsLittle(ThriftHiveMetastore.Processor):
    """A processor that, like an old server, answers UNKNOWN_METHOD for what it does not know."""

    KNOWN = frozenset({"get_all_databases"})

    def process(self, iprot, oprot):
        name, _kind, seqid = iprot.readMessageBegin()
        if name not in self.KNOWN:
            from thrift.Thrift import TApplicationException, TMessageType, TType

            iprot.skip(TType.STRUCT)
            iprot.readMessageEnd()
            error = TApplicationException(
                TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{name}'"
            )
            oprot.writeMessageBegin(name, TMessageType.EXCEPTION, seqid)
            error.write(oprot)
            oprot.writeMessageEnd()
            oprot.trans.flush()
            return True
        return self._processMap[name](self, seqid, iprot, oprot)


@pytest.fixture
def fake_hms():
    handler = _Handler()
    server_socket = TSocket.TServerSocket(host="127.0.0.1", port=0)
    server = TServer.TThreadedServer(
        _KnowsLittle(handler),
        server_socket,
        TTransport.TBufferedTransportFactory(),
        TBinaryProtocol.TBinaryProtocolFactory(),
        daemon=True,
    )
    server_socket.listen()
    port = server_socket.handle.getsockname()[1]
    server_socket.listen = lambda: None  # already listening
    stopping = threading.Event()

    def serve():
        try:
            server.serve()
        except (AttributeError, OSError):
            if not stopping.is_set():  # accept() on the socket closed at teardown ends the loop
                raise

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, handler
    stopping.set()
    server_socket.close()


def _free_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there any more
    return port


def test_thrift_connection_fails_over_to_the_next_uri(fake_hms):
    port, handler = fake_hms
    dead = _free_port()
    connection = ThriftHmsConnection(
        parse_metastore_uris(f"thrift://127.0.0.1:{dead},thrift://127.0.0.1:{port}"), retry_delay_seconds=0
    )
    try:
        assert connection.call("get_all_databases") == ["default", "sales"]
        assert connection.current_endpoint == HmsEndpoint("127.0.0.1", port)
    finally:
        connection.close()
    assert handler.calls == ["get_all_databases"]


def test_thrift_connection_unknown_method_is_unsupported_and_remembered(fake_hms):
    port, _handler = fake_hms
    connection = ThriftHmsConnection([HmsEndpoint("127.0.0.1", port)])
    request = T.GetOpenTxnsRequest(excludeTxnTypes=[T.TxnType.READ_ONLY])
    try:
        assert connection.call_optional("get_open_txns_req", request) is UNSUPPORTED
        assert connection.call_optional("get_open_txns_req", request) is UNSUPPORTED
        assert connection.call("get_all_databases") == ["default", "sales"]  # the connection still works
    finally:
        connection.close()


def test_thrift_connection_no_uri_answers_raises_unavailable_naming_them():
    dead = _free_port()
    sleeps = []
    connection = ThriftHmsConnection([HmsEndpoint("127.0.0.1", dead)], retries=2, sleep=sleeps.append)
    with pytest.raises(
        HiveMetastoreUnavailableError, match=rf"Cannot reach the Hive Metastore 'thrift://127.0.0.1:{dead}'"
    ):
        connection.call("get_all_databases")
    assert sleeps == [1.0, 1.0]  # three attempts, Hive's connect.retry.delay between them


def test_acidflow_read_unreachable_hms_prints_one_line_and_exits_1(capsys):
    dead = _free_port()
    code = acidflow(["read", "db.t", "--metastore", f"thrift://127.0.0.1:{dead}"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(f"acidflow: error: Cannot reach the Hive Metastore 'thrift://127.0.0.1:{dead}'")


def test_thrift_connection_times_out_on_a_silent_server():
    from acid_core.metastore.hive.thrift import HmsEndpoint, ThriftHmsConnection

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections (the kernel does), never answers
    port = silent.getsockname()[1]
    sleeps = []
    connection = ThriftHmsConnection(
        [HmsEndpoint("127.0.0.1", port)], timeout_seconds=0.5, retries=1, sleep=sleeps.append
    )
    started = time.monotonic()
    try:
        with pytest.raises(HiveMetastoreUnavailableError) as info:
            connection.call("get_all_databases")
    finally:
        connection.close()
        silent.close()
    assert time.monotonic() - started < 5  # two attempts of 0.5 s, not a hang
    assert sleeps == [1.0]  # one retry, after Hive's connect.retry.delay
    assert isinstance(info.value, MetastoreError)
    uri = f"thrift://127.0.0.1:{port}"
    assert str(info.value) == (
        f"Cannot reach the Hive Metastore {uri!r} during 'get_all_databases': the connection to {uri} broke "
        "(TTransportException: read timeout); expected a HiveMetaStore answering on thrift://host:port; "
        "acidflow stops this run and the next run starts from the state the metastore holds; hint: check "
        "that the server runs, ACIDFLOW_METASTORE (hive.metastore.uris) and ACIDFLOW_HMS_TIMEOUT, then rerun"
    )


def test_thrift_connection_does_not_resend_a_commit_after_a_broken_connection():
    from hive_metastore import ttypes

    from acid_core.metastore.hive.thrift import HmsEndpoint, ThriftHmsConnection

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    received = []

    def accept_and_hang_up():
        for _ in range(2):
            try:
                conn, _ = server.accept()
            except OSError:
                return
            received.append(conn.recv(4096))
            conn.close()  # the request arrived; the answer never comes

    thread = threading.Thread(target=accept_and_hang_up, daemon=True)
    thread.start()
    connection = ThriftHmsConnection([HmsEndpoint("127.0.0.1", port)], retries=1, sleep=lambda _s: None)
    try:
        with pytest.raises(CommitStateUnknownError, match=r"may or may not be committed"):
            connection.call("commit_txn", ttypes.CommitTxnRequest(txnid=7))
    finally:
        connection.close()
        server.close()
    assert len(received) == 1  # sent once, never re-sent


# --- SASL/Kerberos: options and their errors (no KDC here: the handshake itself is not tested) --------


def test_thrift_connection_gssapi_without_pure_sasl_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "puresasl", None)  # import fails as if not installed
    with pytest.raises(
        MissingDependencyError,
        match=r"^pure-sasl is required for SASL GSSAPI to the Hive Metastore: pip install 'acidflow\[kerberos\]'$",
    ):
        ThriftHmsConnection([HmsEndpoint("127.0.0.1", 1)], sasl_mechanism="gssapi")


def test_thrift_connection_gssapi_without_kerberos_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "puresasl", types.ModuleType("puresasl"))
    monkeypatch.setitem(sys.modules, "kerberos", None)
    with pytest.raises(MissingDependencyError, match=r"^kerberos is required for SASL GSSAPI"):
        ThriftHmsConnection([HmsEndpoint("127.0.0.1", 1)], sasl_mechanism="GSSAPI")


def test_thrift_connection_unknown_sasl_mechanism_raises_naming_it():
    with pytest.raises(
        InvalidMetastoreRequestError,
        match=r"^Invalid SASL mechanism 'KERBEROS': expected one of GSSAPI, DIGEST-MD5, PLAIN$",
    ):
        ThriftHmsConnection([HmsEndpoint("127.0.0.1", 1)], sasl_mechanism="KERBEROS")


def test_acidflow_with_sasl_and_no_package_prints_one_line_and_exits_1(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "puresasl", None)
    monkeypatch.setenv("ACIDFLOW_HMS_SASL", "GSSAPI")
    assert acidflow(["state", "db.t", "--metastore", "thrift://127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pure-sasl is required for SASL GSSAPI to the Hive Metastore" in err
