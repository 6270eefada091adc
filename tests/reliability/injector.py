"""The soak's fault injector: a thread that breaks a service at random times and heals it (issue 24 part 3).

::

    faults = postgres_faults(cluster, namespace) + [read_only_remount(tmpfs)] + [hms_restart(server)]
    injector = FaultInjector(faults, random.Random(seed), interval=(2.0, 6.0))
    injector.start()            every interval: one fault (each kind in turn of a seeded shuffle,
    ...                         then at random), injected, held for its seeded duration, healed
    injector.stop()             waits for the fault in progress to heal; ``counts`` by kind,
                                ``log`` (second, kind, duration), ``errors`` (a fault that failed)

A ``Fault`` is a real mechanism: ``pg_ctl stop -m immediate`` and start again (restart; an outage
of a few seconds), the veth link of the PostgreSQL's network namespace set down and up
(partition), SIGKILL of the Hive Metastore's JVM and a restart on the same port and database,
``mount -o remount,ro`` of the warehouse's tmpfs and back, ZooKeeper stopped and started, a
ZooKeeper session expired while its writer, paused, holds a write's locks. Each one heals before ``inject``
returns, so once ``stop()`` returned every service is whole again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acid_core.locks.zookeeper import DEFAULT_ROOT

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Iterator, Sequence

    from tests.fixtures.hms import RestartableMetastore
    from tests.fixtures.netns import NetworkNamespace
    from tests.fixtures.postgres import PrivatePostgres
    from tests.fixtures.storage import Tmpfs
    from tests.fixtures.zookeeper import ZooKeeperServer


class WriterGrace:
    """Until when the soak's driver spares the writer its SIGKILLs (thread-safe).

    A fault aimed at the writer (its ZooKeeper session expired while it is paused holding a
    write's locks) shows only at the writer's commit: a SIGKILL before that (the driver kills at
    random every 1-3 s, and once more when the chaos phase ends) would hide it, and a run once
    ended with every aimed expiry hidden so (no line naming ZooKeeper). The driver neither kills the
    writer nor ends the chaos phase while the grace lasts.
    """

    def __init__(self) -> None:
        self._until = 0.0
        self._lock = threading.Lock()

    def extend(self, seconds: float) -> None:
        """Spare the writer for ``seconds`` from now (never shortens a grace already given)."""
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)

    def active(self) -> bool:
        """Whether the writer is spared now."""
        with self._lock:
            return time.monotonic() < self._until


@dataclass(frozen=True, slots=True)
class Fault:
    """One kind of fault: ``inject(seconds)`` breaks the service, holds it that long, heals it.

    ``inject`` returns None, or why there was nothing to break (counted as ``<kind> (missed)``).
    ``writer_grace``: set by a fault aimed at the writer (see ``WriterGrace``).
    """

    kind: str
    service: str
    inject: Callable[[float], str | None]
    seconds: tuple[float, float] = (0.0, 0.0)
    writer_grace: WriterGrace | None = None


def postgres_faults(
    cluster: PrivatePostgres,
    namespace: NetworkNamespace | None = None,
    *,
    partition_seconds: tuple[float, float] = (2.0, 25.0),
) -> list[Fault]:
    """A restart, an outage of a few seconds and (in a namespace) a partition that heals.

    A partition shorter than libpq's ``tcp_user_timeout`` (20 s) is survived by the calls in
    flight (TCP retransmits); a longer one fails them in one line naming PostgreSQL.
    """

    def restart(_seconds: float) -> None:
        cluster.kill()
        cluster.resume()

    def outage(seconds: float) -> None:
        cluster.kill()
        try:
            time.sleep(seconds)
        finally:
            cluster.resume()

    faults = [
        Fault("postgres-restart", "PostgreSQL", restart),
        Fault("postgres-outage", "PostgreSQL", outage, (2.0, 6.0)),
    ]
    if namespace is not None:

        def partition(seconds: float) -> None:
            namespace.partition()
            try:
                time.sleep(seconds)
            finally:
                namespace.heal()

        faults.append(Fault("postgres-partition", "PostgreSQL", partition, partition_seconds))
    return faults


def zookeeper_faults(
    server: ZooKeeperServer, session_file: str, *, root: str = DEFAULT_ROOT, within: float = 10.0
) -> list[Fault]:
    """ZooKeeper stopped and started again; the writer's session (from ``session_file``) expired.

    The expiry is kazoo's harness technique (``ZooKeeperServer.expire_session``: a second client
    joins the session with its ID and password, then closes it, which the server takes as the
    session's end), on the session the writer published before its current step. It lands while the
    writer holds a write's locks: the injector waits (at most ``within`` seconds) until a lock node
    under ``root`` owned by that session carries a transaction, stops the writer (SIGSTOP, a pause
    like a long GC: it cannot commit meanwhile), expires the session and lets it go on (SIGCONT),
    so the writer finds its locks lost at its commit's fence. An expiry between two writes goes
    unnoticed (the next statement gets a new session), and at random times most of them did: a
    60 s run once ended with six expiries and none reaching acidflow. When no write holds a lock
    within ``within`` the session is expired all the same.
    """

    def restart(seconds: float) -> None:
        server.restart(down_seconds=seconds)

    grace = WriterGrace()

    def expire(_seconds: float) -> str | None:
        try:
            with open(session_file, encoding="utf-8") as handle:
                published = json.load(handle)
        except FileNotFoundError:
            return "no session published yet"
        session, pid = int(published["session"]), int(published["pid"])
        paused = _pause_during_write(server, root, session, pid, within, grace)
        try:
            server.expire_session((session, bytes.fromhex(published["password"])))
        except Exception as error:  # the session ended already (its writer was killed or expired)
            return f"the session had ended ({type(error).__name__})"
        finally:
            if paused:
                grace.extend(_FENCE_GRACE_SECONDS)  # until its commit's fence has seen the expiry
                with contextlib.suppress(ProcessLookupError):  # the driver killed it meanwhile
                    os.kill(pid, signal.SIGCONT)
        return None

    return [
        Fault("zookeeper-restart", "ZooKeeper", restart, (0.0, 4.0)),
        Fault("zookeeper-session-expiry", "ZooKeeper", expire, writer_grace=grace),
    ]


# A writer let go after an aimed expiry reaches its commit's fence within a second or two on quiet
# cores; this leaves room for busy ones. Spared meanwhile, it is killed as usual afterwards.
_FENCE_GRACE_SECONDS = 15.0


def _pause_during_write(
    server: ZooKeeperServer, root: str, session: int, pid: int, within: float, grace: WriterGrace
) -> bool:
    """SIGSTOP ``pid`` once its ``session`` holds a write transaction's lock node; whether it did.

    The writer is spared the driver's SIGKILLs (``grace``) from just before it is stopped.
    """
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    def transaction_nodes(path: str) -> Iterator[str]:
        for child in client.get_children(path):
            node = f"{path}/{child}"
            if not child.startswith(("read-", "write-")):
                yield from transaction_nodes(node)
                continue
            data, stat = client.get(node)
            if stat.ephemeralOwner == session and json.loads(data or b"{}").get("txn_id") is not None:
                yield node

    client = KazooClient(hosts=server.hosts, timeout=10)
    try:
        client.start(timeout=10)
    except Exception:  # ZooKeeper is down (a restart in progress): expire what can be expired
        client.close()
        return False
    try:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                held = next(transaction_nodes(root), None)
            except NoNodeError:  # a node went away while it was read: look again
                held = None
            if held is not None:
                grace.extend(_FENCE_GRACE_SECONDS)
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    return False
                try:
                    still_held = client.exists(held) is not None
                except BaseException:
                    os.kill(pid, signal.SIGCONT)  # never leave the writer stopped
                    raise
                if still_held:
                    return True
                os.kill(pid, signal.SIGCONT)  # it released the lock before it stopped: wait again
            time.sleep(0.01)
        return False
    finally:
        client.stop()
        client.close()


def hms_restart(server: RestartableMetastore) -> Fault:
    """SIGKILL of the Hive Metastore's JVM, down a few seconds, restarted on its port and database."""

    def kill_and_restart(seconds: float) -> None:
        server.kill()
        try:
            time.sleep(seconds)
        finally:
            server.restart()

    return Fault("hms-kill9-restart", "Hive Metastore", kill_and_restart, (0.0, 3.0))


def read_only_remount(tmpfs: Tmpfs) -> Fault:
    """The warehouse's file system remounted read-only for a few seconds, then read-write again.

    Not the kernel's own ``errors=remount-ro`` (which needs a failing disk): ``mount -o remount,ro``
    is refused while a file is open for writing, so it is retried every 50 ms until no file is.
    """

    def remount(seconds: float) -> None:
        # The kernel refuses ``remount,ro`` while a file is open for writing ("mount point is
        # busy"): the fault lands at the next moment no file is being written (between two writes).
        for attempt in range(200):
            try:
                tmpfs.read_only()
                break
            except RuntimeError as error:
                if "busy" not in str(error) or attempt == 199:
                    raise
                time.sleep(0.05)
        try:
            time.sleep(seconds)
        finally:
            tmpfs.writable()

    return Fault("storage-read-only", "storage", remount, (1.0, 5.0))


class FaultInjector(threading.Thread):
    """Injects ``faults`` one at a time every ``interval`` seconds (see the module docstring)."""

    def __init__(self, faults: Sequence[Fault], rng: random.Random, interval: tuple[float, float]) -> None:
        super().__init__(daemon=True, name="soak-fault-injector")
        if not faults:
            raise ValueError("a fault injector needs at least one fault")
        self.faults, self.rng, self.interval = list(faults), rng, interval
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[float, str, float]] = []
        self.errors: list[str] = []
        self._round: list[Fault] = []
        self._stopping = threading.Event()
        self._began = time.monotonic()

    def _next(self, injected: int) -> Fault:
        # Every kind once, in a seeded order, before any kind twice: a short run sees them all.
        if injected % len(self.faults) == 0:
            self._round = self.rng.sample(self.faults, len(self.faults))
        return self._round[injected % len(self.faults)]

    def run(self) -> None:
        injected = 0
        while not self._stopping.wait(self.rng.uniform(*self.interval)):
            fault = self._next(injected)
            seconds = round(self.rng.uniform(*fault.seconds), 1)
            at = round(time.monotonic() - self._began, 1)
            try:
                missed = fault.inject(seconds)
            except Exception as error:  # a fault that could not be made (or healed) ends the injection
                self.errors.append(f"{fault.kind} at {at} s: {type(error).__name__}: {error}")
                return
            kind = fault.kind if missed is None else f"{fault.kind} (missed: {missed})"
            self.counts[kind] += 1
            self.log.append((at, kind, seconds))
            injected += 1

    def stop(self, timeout: float = 600.0) -> None:
        """No new fault; wait until the one in progress healed."""
        self._stopping.set()
        self.join(timeout)
        if self.is_alive():
            self.errors.append(f"the fault in progress did not heal within {timeout} s")
