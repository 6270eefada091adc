"""Fault injection for the service-fault tests: a point in a metastore call, and a link that loses answers.

::

    at_statement(engine, "acidflow_commit_txn", action)   action(conn) once, just before that SQL is sent
    at_commit(engine, action, skip=0)                     action(conn) once, just before a COMMIT is sent
    at_thrift_call(connection, "commit_txn", action)      action() once, just before that Thrift call is sent
    CuttingProxy(server_port)                             127.0.0.1:<port> forwarding to PostgreSQL or an HMS;
        cut_after_next_request(client_port)               the next request goes through, its answer is
                                                          dropped and the connection closed (answer lost)
    slow_store("/wh/db/t", delay_seconds=0.2)             every FileIO call on a path below it waits first
                                                          (``acid_core.fs.set_file_io_hook``)
    sql_warehouse(tmp_path, url)                          a Warehouse on that PostgreSQL (no heartbeat thread)
    commit_statements(engine)                             every ``acidflow_commit_txn`` sent from now on

The actions are real faults: ``PrivatePostgres.kill`` (``pg_ctl stop -m immediate``) and its
``resume`` from a timer, ``RestartableMetastore.kill`` (SIGKILL of the HMS JVM) and its ``restart``,
or the proxy dropping the server's reply to a COMMIT / ``commit_txn`` the server carried out, or a
store that answers late (the real local disk behind a ``DelayingFileIO``: an object store or an
HDFS under load). Nothing in acidflow is mocked.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import TYPE_CHECKING

from sqlalchemy import event

from acid_core.fs import set_file_io_hook

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from sqlalchemy.engine import Engine

    from acid_core.fs import FileIO
    from acid_core.writes import Warehouse


def at_statement(engine: Engine, fragment: str, action: Callable[[object], None]) -> None:
    """Run ``action(connection)`` once, just before the first statement containing ``fragment`` is sent."""
    fired = threading.Event()

    def before(conn, cursor, statement, parameters, context, executemany):
        if fragment in statement and not fired.is_set():
            fired.set()
            action(conn)

    event.listen(engine, "before_cursor_execute", before)


def at_commit(engine: Engine, action: Callable[[object], None], *, skip: int = 0) -> None:
    """Run ``action(connection)`` once, just before the ``skip``-th (from 0) COMMIT is sent."""
    seen = [0]

    def before(conn):
        seen[0] += 1
        if seen[0] == skip + 1:
            action(conn)

    event.listen(engine, "commit", before)


def at_thrift_call(connection, method: str, action: Callable[[], None]) -> None:
    """Run ``action()`` once, just before the first ``method`` call of a ``ThriftHmsConnection`` is sent.

    The real call follows (on whatever the action left: a killed server, an armed proxy).
    """
    fired = threading.Event()
    call = connection.call

    def call_with_fault(name, *args):
        if name == method and not fired.is_set():
            fired.set()
            action()
        return call(name, *args)

    connection.call = call_with_fault


def thrift_client_port(connection) -> int:
    """The local port of a ``ThriftHmsConnection``'s socket (connected first if it is not)."""
    if connection._client is None:
        connection.call("get_all_databases")
    return int(connection._transport._TBufferedTransport__trans.handle.getsockname()[1])


def client_port(conn) -> int:
    """The local port of a SQLAlchemy connection's psycopg2 socket (how the proxy knows it)."""
    fd = os.dup(conn.connection.dbapi_connection.fileno())
    with socket.socket(fileno=fd) as sock:
        return int(sock.getsockname()[1])


class CuttingProxy:
    """A TCP proxy to a local server that can lose the answer to one request of one connection."""

    def __init__(self, server_port: int, on_cut: Callable[[], None] | None = None) -> None:
        self.server_port = server_port
        self.on_cut = on_cut
        self.cuts = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._armed: set[int] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="cutting-proxy").start()

    def cut_after_next_request(self, port: int) -> None:
        """The next bytes the client on ``port`` sends reach the server; the reply is dropped, the link cut."""
        with self._lock:
            self._armed.add(port)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, (_, port) = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.server_port))
            except OSError:
                client.close()  # the server is down: the client sees a refused/closed connection
                continue
            sent = threading.Event()
            threading.Thread(target=self._up, args=(client, server, port, sent), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, sent), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, port: int, sent: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                with self._lock:
                    if port in self._armed:
                        self._armed.discard(port)
                        sent.set()  # before forwarding: the reply cannot overtake the flag
                server.sendall(data)
        _close(client, server)

    def _down(self, server: socket.socket, client: socket.socket, sent: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := server.recv(65536):
                if sent.is_set():
                    # The server carried the request out; its answer never reaches the client. The
                    # fault (a restart) comes first, so the client's check finds the server gone.
                    self.cuts += 1
                    if self.on_cut is not None:
                        self.on_cut()
                    _close(client, server)
                    return
                client.sendall(data)
        _close(client, server)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()


_DELAYED = (
    "list_dir",
    "list_entries",
    "list_tree",
    "info",
    "read_bytes",
    "write_bytes_atomic",
    "open_input",
    "open_output",
    "mkdirs",
    "rename",
    "delete_file",
    "delete_dir",
)


class DelayingFileIO:
    """A FileIO that waits ``delay_seconds`` before each call of the one it wraps (a slow store).

    ``calls`` counts the delayed calls (a test checks the store was slow where it says it was).
    """

    def __init__(self, file_io: FileIO, delay_seconds: float, calls: list[str]) -> None:
        self._io, self._delay, self.calls = file_io, delay_seconds, calls

    def __getattr__(self, name: str):
        target = getattr(self._io, name)
        if name not in _DELAYED:
            return target

        def delayed(*args, **kwargs):
            self.calls.append(name)
            time.sleep(self._delay)
            return target(*args, **kwargs)

        return delayed


@contextlib.contextmanager
def slow_store(prefix: str, delay_seconds: float) -> Iterator[list[str]]:
    """Every FileIO that ``file_io_for`` hands out for a path at or below ``prefix`` is slow.

    Yields the list of delayed calls (shared by all the wrappers).
    """
    calls: list[str] = []
    prefix = prefix.rstrip("/")

    def hook(file_io, path):
        if path == prefix or path.startswith(prefix + "/"):
            return DelayingFileIO(file_io, delay_seconds, calls)
        return file_io

    previous = set_file_io_hook(hook)
    try:
        yield calls
    finally:
        set_file_io_hook(previous)


def sql_warehouse(tmp_path: Path, url: str, commit_check_seconds: float = 30.0) -> Warehouse:
    """A ``Warehouse`` under ``tmp_path/wh`` on the PostgreSQL at ``url``, with no heartbeat thread.

    ``commit_check_seconds``: how long a commit whose answer was lost is read back for.
    """
    from acid_core.metastore import SqlMetastore
    from acid_core.writes import Warehouse

    root = str(tmp_path / "wh")
    metastore = SqlMetastore(url, warehouse=root, commit_check_seconds=commit_check_seconds)
    return Warehouse(root, metastore, heartbeat_seconds=None)


def commit_statements(engine: Engine) -> list[str]:
    """Every ``acidflow_commit_txn`` statement sent from now on (appended as it is sent).

    The first statement of each ``commit_txn``, a write's or a compaction's: a re-sent commit counts
    twice, while the read-back after a lost answer never sends it.
    """
    sent: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):
        if "acidflow_commit_txn" in statement:
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    return sent
