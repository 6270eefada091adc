"""Keep a held reader lease alive: renew it periodically from a background thread.

::

    with LeaseHeartbeat(open_store, lease_id, ttl_seconds=3600, interval_seconds=60):
        ...  # a long read: at once, then every 60 s, the thread calls renew_lease(lease_id, 3600)

On a Hive Metastore a lease is an open HMS transaction that the HMS aborts when it is not
heartbeated within ``hive.txn.timeout`` (300 s by default); ``renew_lease`` heartbeats it and moves
the side-store record's expiry. On the SQL store it only moves the expiry. Hive's own
``DbTxnManager`` heartbeats a query's transaction the same way, from a thread, every half timeout.

Concurrency: the thread opens its OWN store with ``open_store`` (a Thrift client is not
thread-safe) and closes it when it stops. Idempotency: renewing twice is harmless.
Not here: taking or releasing the lease (the caller does both).
Errors: a lost or unknown lease (``LeaseLostError``, ``NoSuchLeaseError``) stops the thread and is
kept in ``error`` (logged); other ``AcidError`` s (a metastore hiccup) are logged and retried at the
next beat. Nothing is raised into the ``with`` block.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from acid_core.errors import AcidError, LeaseLostError, NoSuchLeaseError

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from acid_core.metastore.port import Metastore

__all__ = ["LeaseHeartbeat", "heartbeat_interval"]

_LOG = logging.getLogger(__name__)


def heartbeat_interval(ttl_seconds: float, txn_timeout_seconds: float = 300.0) -> float:
    """How often to renew: half the HMS txn timeout (as Hive's heartbeater), and at least 3 times per TTL.

    >>> heartbeat_interval(3600), heartbeat_interval(60)
    (150.0, 20.0)
    """
    return min(txn_timeout_seconds / 2, ttl_seconds / 3)


class LeaseHeartbeat:
    """A context manager that renews ``lease_id`` at once, then every ``interval_seconds``.

    See the module docstring.

    Args:
        open_store: opens the thread's own metastore (closed when the thread stops).
        lease_id: the lease to keep.
        ttl_seconds: the expiry each renewal sets, from then.
        interval_seconds: the pause between renewals.
        on_renew: called after each successful renewal (tests, progress), with the count so far.
    """

    def __init__(
        self,
        open_store: Callable[[], Metastore],
        lease_id: int,
        ttl_seconds: float,
        interval_seconds: float,
        on_renew: Callable[[int], None] | None = None,
    ) -> None:
        self._open_store, self.lease_id = open_store, lease_id
        self._ttl, self._interval, self._on_renew = ttl_seconds, interval_seconds, on_renew
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-heartbeat-{lease_id}", daemon=True)
        self.renewals = 0
        self.error: AcidError | None = None

    def __enter__(self) -> LeaseHeartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            store = self._open_store()
        except AcidError as e:
            self.error = e
            _LOG.warning("lease %d: cannot open the metastore to heartbeat it: %s", self.lease_id, e)
            return
        try:
            # The first beat at once: the lease may have been taken a while ago (how long is not
            # known here), so its TTL may run out before a first beat one interval from now.
            while self._beat(store) and not self._stop.wait(self._interval):
                pass
        finally:
            store.close()

    def _beat(self, store: Metastore) -> bool:
        """Renew once; False once the lease is gone (then no more beats)."""
        try:
            store.renew_lease(self.lease_id, self._ttl)
        except (LeaseLostError, NoSuchLeaseError) as e:
            self.error = e
            _LOG.warning("lease %d is gone; no more heartbeats: %s", self.lease_id, e)
            return False
        except AcidError as e:  # a hiccup: the next beat tries again, well before the timeout
            _LOG.warning("lease %d: heartbeat failed (retried next beat): %s", self.lease_id, e)
            return True
        self.renewals += 1
        if self._on_renew is not None:
            self._on_renew(self.renewals)
        return True
