"""The Thrift connection to a Hive Metastore: failover across URIs, retries, timeouts, capabilities.

::

    HmsConnection            the small interface the adapter talks to:  call(method, *args)
      ThriftHmsConnection    a socket to thrift://host:port[,thrift://host2:port] (pyiceberg[hive]'s
                             generated Hive 4 bindings, ``hive_metastore.ThriftHiveMetastore``)
      (tests)                a recorded connection replaying Hive 3/4 request/response shapes

What Hive's ``RetryingMetaStoreClient`` does, and what this module does the same way:

- ``hive.metastore.uris`` is a comma-separated list; a broken connection moves to the next URI
  (round robin), after ``retry_delay_seconds`` (``hive.metastore.client.connect.retry.delay``, 1 s);
- ``retries`` (``hive.metastore.failure.retries``, 1) reconnect-and-retry rounds per call, for
  transport failures only: an answer from the server (``MetaException``, ``NoSuchObjectException``)
  is never retried;
- every socket has ``timeout_seconds`` (``hive.metastore.client.socket.timeout``; 600 s in Hive, 60 s
  here) so a stuck server cannot hang a worker.

Unlike Hive, a call that changes state and whose request may have reached the server (``open_txns``,
``commit_txn``, ``lock``, ``compact2`` ...) is not re-sent after a broken connection: re-sending
``commit_txn`` could commit twice or fail on an already committed transaction, so the caller gets
``CommitStateUnknownError`` (for commits; the adapter then reads the transaction back) or
``HiveMetastoreUnavailableError`` and decides.

Capabilities: the bindings speak Hive 4's IDL. An older server answers a call it does not know with
``TApplicationException(UNKNOWN_METHOD)`` and ignores struct fields added later, so
``call_optional`` returns ``UNSUPPORTED`` for an unknown method and remembers it for the
connection; the adapter degrades explicitly (see ``acid_core.metastore.hive.metastore``).

SASL/Kerberos: ``sasl_mechanism="GSSAPI"`` wraps the socket in Thrift's ``TSaslClientTransport``
(needs ``pure-sasl`` and, for GSSAPI, ``kerberos`` -- the ``kerberos`` extra -- and a Kerberos
ticket, ``kinit``), as ``hive.metastore.sasl.enabled=true``; ``sasl_service`` is the first part of
``hive.metastore.kerberos.principal`` (``hive``/_HOST@REALM). The mechanism and the packages are
checked when the connection is built, so a missing package is one clear error before any call;
not exercised by the tests (no KDC on the test machines).

Not here: what the calls mean (the adapter), SQL on the metastore's backend database.
Errors: ``MissingDependencyError`` without ``pyiceberg[hive]``; ``HiveMetastoreUnavailableError``
when no URI answers or a call's connection broke (one line naming the HMS and the call);
``CommitStateUnknownError`` when a commit's outcome is unknown. Thrift exceptions the
server raises (``NoSuchObjectException``, ``TxnAbortedException``, ...) propagate unchanged for the
adapter to translate.
"""

from __future__ import annotations

import importlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias
from urllib.parse import urlsplit

from acid_core.errors import (
    CommitStateUnknownError,
    HiveMetastoreUnavailableError,
    InvalidMetastoreRequestError,
    MissingDependencyError,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "SASL_MECHANISMS",
    "ThriftValue",
    "DEFAULT_RETRIES",
    "DEFAULT_RETRY_DELAY_SECONDS",
    "DEFAULT_TIMEOUT_SECONDS",
    "UNSUPPORTED",
    "HmsConnection",
    "HmsEndpoint",
    "ThriftHmsConnection",
    "is_thrift_url",
    "parse_metastore_uris",
]

_LOG = logging.getLogger(__name__)

ThriftValue: TypeAlias = Any
"""A generated Thrift struct or answer (``hive_metastore.ttypes``; the bindings are untyped)."""

DEFAULT_TIMEOUT_SECONDS: Final = 60.0
DEFAULT_RETRIES: Final = 1
DEFAULT_RETRY_DELAY_SECONDS: Final = 1.0
_UNKNOWN_METHOD: Final = 1  # TApplicationException.UNKNOWN_METHOD


class _Unsupported:
    """The marker ``call_optional`` returns for a method the server does not know."""

    def __repr__(self) -> str:
        return "UNSUPPORTED"


UNSUPPORTED: Final = _Unsupported()

# Calls that only read, or whose repetition is harmless: retried after a broken connection.
_IDEMPOTENT: Final = frozenset(
    {
        "get_all_databases",
        "get_database",
        "get_all_tables",
        "get_table",
        "get_partitions",
        "get_partition_names",
        "get_open_txns",
        "get_open_txns_info",
        "get_open_txns_req",
        "get_valid_write_ids",
        "show_locks",
        "show_compact",
        "heartbeat",
        "heartbeat_txn_range",
        "check_lock",
        "abort_txn",
        "get_latest_committed_compaction_info",
        "getMetaConf",
    }
)


@dataclass(frozen=True, slots=True)
class HmsEndpoint:
    """One ``thrift://host:port`` of ``hive.metastore.uris``."""

    host: str
    port: int

    def to_uri(self) -> str:
        """``thrift://host:port``."""
        return f"thrift://{self.host}:{self.port}"


def is_thrift_url(url: str | None) -> bool:
    """Whether a metastore URL names a Hive Metastore (``thrift://...``).

    >>> is_thrift_url("thrift://hms:9083"), is_thrift_url("postgresql://db/x"), is_thrift_url(None)
    (True, False, False)
    """
    return url is not None and url.strip().lower().startswith("thrift://")


def parse_metastore_uris(text: str) -> tuple[HmsEndpoint, ...]:
    """Parse ``thrift://host:9083[,thrift://host2:9083]`` (Hive's ``hive.metastore.uris``).

    The port defaults to 9083, as in Hive.

    Raises:
        InvalidMetastoreRequestError: an empty list, another scheme, no host or a bad port.

    >>> parse_metastore_uris("thrift://a:9083, thrift://b")
    (HmsEndpoint(host='a', port=9083), HmsEndpoint(host='b', port=9083))
    """
    endpoints: list[HmsEndpoint] = []
    for part in (p.strip() for p in text.split(",")):
        expected = "thrift://host[:port][,thrift://host2[:port]]"
        if not part:
            raise InvalidMetastoreRequestError("metastore URI list", text, expected)
        split = urlsplit(part)
        try:
            port = split.port
        except ValueError:
            port = -1
        if (
            split.scheme.lower() != "thrift"
            or not split.hostname
            or port == -1
            or split.path not in ("", "/")
        ):
            raise InvalidMetastoreRequestError("metastore URI", part, expected)
        endpoints.append(HmsEndpoint(split.hostname, 9083 if port is None else port))
    return tuple(endpoints)


class HmsConnection(Protocol):
    """What the Hive Metastore adapter needs from a connection: named calls, and capabilities."""

    @property
    def description(self) -> str:
        """Where the connection goes (for error messages), e.g. ``thrift://h:9083``."""
        ...

    def call(self, method: str, *args: ThriftValue) -> ThriftValue:
        """Call ``ThriftHiveMetastore.<method>(*args)``; Thrift exceptions of the server propagate."""
        ...

    def call_optional(self, method: str, *args: ThriftValue) -> ThriftValue:
        """Like ``call``, but ``UNSUPPORTED`` when the server does not know the method."""
        ...

    def close(self) -> None:
        """Close the socket."""
        ...


def _bindings() -> tuple[Any, Any, Any, Any]:
    try:
        from hive_metastore import ThriftHiveMetastore
        from thrift.protocol import TBinaryProtocol
        from thrift.Thrift import TApplicationException
        from thrift.transport import TSocket, TTransport
    except ImportError as e:
        raise MissingDependencyError(
            "pyiceberg[hive] (hive_metastore, thrift)", "the Hive Metastore adapter", "hive"
        ) from e
    return ThriftHiveMetastore, (TBinaryProtocol, TSocket, TTransport), TApplicationException, None


SASL_MECHANISMS: Final = ("GSSAPI", "DIGEST-MD5", "PLAIN")
"""The SASL mechanisms pure-sasl offers (Hive's metastore speaks GSSAPI; DIGEST-MD5 for tokens)."""


def _check_sasl(mechanism: str) -> str:
    """The upper-cased mechanism, once its packages import (``MissingDependencyError`` otherwise)."""
    name = mechanism.strip().upper()
    if name not in SASL_MECHANISMS:
        raise InvalidMetastoreRequestError(
            "SASL mechanism", mechanism, "one of " + ", ".join(SASL_MECHANISMS)
        )
    needed = ["puresasl", *(["kerberos"] if name == "GSSAPI" else [])]
    for module in needed:
        try:
            importlib.import_module(module)
        except ImportError as e:
            package = "pure-sasl" if module == "puresasl" else module
            raise MissingDependencyError(package, f"SASL {name} to the Hive Metastore", "kerberos") from e
    return name


class ThriftHmsConnection:
    """A Thrift client of ``ThriftHiveMetastore`` with failover, retries and timeouts (see module doc).

    Args:
        endpoints: the URIs, tried in order, then round robin on failures.
        timeout_seconds: socket timeout of every call.
        retries: reconnect-and-retry rounds for a failed idempotent call (and for connecting).
        retry_delay_seconds: the pause before each retry.
        sasl_mechanism: ``GSSAPI`` for Kerberos (``hive.metastore.sasl.enabled``), else None.
        sasl_service: the server's Kerberos service name (``hive``).
        sleep: the pause function (tests pass a fake clock).
    """

    def __init__(
        self,
        endpoints: Sequence[HmsEndpoint],
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        retries: int = DEFAULT_RETRIES,
        retry_delay_seconds: float = DEFAULT_RETRY_DELAY_SECONDS,
        sasl_mechanism: str | None = None,
        sasl_service: str = "hive",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not endpoints:
            raise InvalidMetastoreRequestError("metastore URI list", "", "at least one thrift://host:port")
        self._module, self._thrift, self._app_error, _ = _bindings()
        self._endpoints = tuple(endpoints)
        self._timeout, self._retries, self._delay = timeout_seconds, retries, retry_delay_seconds
        if sasl_mechanism is not None:
            sasl_mechanism = _check_sasl(sasl_mechanism)
        self._sasl_mechanism, self._sasl_service, self._sleep = sasl_mechanism, sasl_service, sleep
        self._index = 0
        self._client: Any = None
        self._transport: Any = None
        self._unsupported: set[str] = set()

    @property
    def description(self) -> str:
        """The URI list, as given."""
        return ",".join(e.to_uri() for e in self._endpoints)

    @property
    def current_endpoint(self) -> HmsEndpoint:
        """The URI the connection uses (or will try next)."""
        return self._endpoints[self._index]

    def _open(self) -> None:
        binary, socket_module, transport_module = self._thrift
        endpoint = self._endpoints[self._index]
        sock = socket_module.TSocket(endpoint.host, endpoint.port)
        sock.setTimeout(int(self._timeout * 1000))
        if self._sasl_mechanism is not None:
            transport = transport_module.TSaslClientTransport(
                sock, endpoint.host, self._sasl_service, self._sasl_mechanism
            )
        else:
            transport = transport_module.TBufferedTransport(sock)
        transport.open()
        self._transport = transport
        self._client = self._module.Client(binary.TBinaryProtocol(transport))

    def _drop(self) -> None:
        if self._transport is not None:
            try:
                self._transport.close()
            except Exception:  # best-effort close of a broken socket
                _LOG.debug("closing the metastore socket failed", exc_info=True)
        self._transport, self._client = None, None

    def _connect(self, operation: str = "connect") -> None:
        errors: list[str] = []
        for attempt in range(len(self._endpoints) * (self._retries + 1)):
            try:
                self._open()
                return
            except (OSError, self._thrift[2].TTransportException) as e:
                errors.append(f"{self._endpoints[self._index].to_uri()}: {e}")
                self._drop()
                self._index = (self._index + 1) % len(self._endpoints)
                if attempt + 1 < len(self._endpoints) * (self._retries + 1):
                    self._sleep(self._delay)
        raise HiveMetastoreUnavailableError(
            self.description, "no URI answered: " + "; ".join(errors), operation
        )

    def call(self, method: str, *args: ThriftValue) -> ThriftValue:
        """See ``HmsConnection.call``."""
        transport_error = (OSError, self._thrift[2].TTransportException, EOFError)
        for attempt in range(self._retries + 1):
            if self._client is None:
                self._connect(method)
            try:
                return getattr(self._client, method)(*args)
            except transport_error as e:
                where = self._endpoints[self._index].to_uri()
                self._drop()
                self._index = (self._index + 1) % len(self._endpoints)
                if method == "commit_txn":
                    raise CommitStateUnknownError(
                        f"commit_txn{args!r} on {where} lost its connection ({e}); the transaction may or "
                        "may not be committed; expected an answer; hint: check SHOW TRANSACTIONS before "
                        "retrying"
                    ) from e
                if method not in _IDEMPOTENT or attempt == self._retries:
                    raise HiveMetastoreUnavailableError(
                        self.description, f"the connection to {where} broke ({type(e).__name__}: {e})", method
                    ) from e
                _LOG.warning("metastore call %s failed on %s (%s); retrying", method, where, e)
                self._sleep(self._delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def call_optional(self, method: str, *args: ThriftValue) -> ThriftValue:
        """See ``HmsConnection.call_optional``."""
        if method in self._unsupported:
            return UNSUPPORTED
        try:
            return self.call(method, *args)
        except self._app_error as e:
            if getattr(e, "type", None) != _UNKNOWN_METHOD:
                raise
            _LOG.info("metastore %s does not know %s: degrading", self.description, method)
            self._unsupported.add(method)
            return UNSUPPORTED

    def close(self) -> None:
        """See ``HmsConnection.close``."""
        self._drop()
