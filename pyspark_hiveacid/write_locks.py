"""The locks of a Spark write, held for its transaction by a small process of their own.

Hive's writers lock before they write and hold the locks until the transaction ends
(``DbTxnManager``; ``acid_core.locks.planner``)::

    append     INSERT into an ACID table       SHARED on the table (MVCC isolates writers; the
                                               shared lock keeps DROP and INSERT OVERWRITE out)
    overwrite  INSERT OVERWRITE                EXCLUSIVE on the table

A Spark job has no process that lives from ``writer()`` to ``commit()``: Spark runs them in
different Python workers and pickles the writer in between, and acidflow's lock sessions
(ZooKeeper, SQL) belong to a process. So ``writer()`` starts ``python -m
pyspark_hiveacid.write_locks``, which acquires the locks with the write's transaction ID, says
``granted`` (or why not) on its first output line, and releases them as soon as the transaction is
no longer open (committed, or aborted by ``abort()`` or the reaper) or has not heartbeaten for the
reaper's timeout (a killed job: Hive's ``timeOutLocks`` frees such locks too). ``commit()``/``abort()`` then wait until the locks are gone, so a
``save()`` that returned holds nothing. If the holder itself dies, its lock session expires
(SQL: at once for a dead local process; ZooKeeper: the session timeout).

Invariants: the locks exist before any task writes; no lock of the transaction outlives it by more
than one poll (``POLL_SECONDS``) of the holder.
Not here: the transaction (``source.HiveAcidWriter``).
Errors: ``WriteLockError`` (the locks were refused, or the holder could not start), one line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from acid_core.errors import AcidError, WriteLockError

if TYPE_CHECKING:
    from acid_core.locks import LockRequest
    from pyspark_hiveacid.options import SourceOptions

__all__ = ["POLL_SECONDS", "TXN_TIMEOUT_SECONDS", "hold_write_locks", "plan_write_locks", "wait_for_release"]

POLL_SECONDS = 0.2
TXN_TIMEOUT_SECONDS = 300.0
"""Hive's ``hive.txn.timeout``, the cleaner's reaper default (not imported: the holder starts lean)."""
_GRANTED = "granted"


def plan_write_locks(table: str, overwrite: bool) -> list[LockRequest]:
    """The locks Hive's writer takes: SHARED on the table to append, EXCLUSIVE to overwrite."""
    from acid_core.locks import LockObject
    from acid_core.locks.planner import StatementKind, StatementLocks, plan_statement_locks
    from acid_core.metastore.port import split_table_name

    database, name = split_table_name(table)
    kind = StatementKind.INSERT_OVERWRITE if overwrite else StatementKind.INSERT
    return plan_statement_locks(StatementLocks(kind, target=LockObject(database, name), is_acid=True))


def _arguments(options: SourceOptions, table: str, overwrite: bool, txn_id: int) -> list[str]:
    command = [sys.executable, "-m", "pyspark_hiveacid.write_locks", "--table", table, "--txn", str(txn_id)]
    command += ["--warehouse", options.warehouse]
    if options.metastore is not None:
        command += ["--metastore", options.metastore]
    return [*command, "--overwrite"] if overwrite else command


def hold_write_locks(options: SourceOptions, table: str, overwrite: bool, txn_id: int) -> None:
    """Start the holder and return once it holds the locks.

    Raises:
        WriteLockError: the locks were refused (the message names the holders), or the holder failed.
    """
    # The holder forks and its parent exits at once (reaped here), so the holder never becomes a
    # zombie child of a long-lived Spark worker; its first line comes through the inherited pipe.
    process = subprocess.Popen(  # our own module; arguments from validated options
        _arguments(options, table, overwrite, txn_id),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    with process:
        assert process.stdout is not None  # noqa: S101 - stdout=PIPE
        first = process.stdout.readline().strip()
    if first != _GRANTED:
        raise WriteLockError(table, txn_id, first or "the lock holder exited without an answer")


def wait_for_release(options: SourceOptions, table: str, txn_id: int, timeout: float = 30.0) -> bool:
    """Wait until no lock of ``txn_id`` is left on ``table``; False after ``timeout`` seconds."""
    from acid_core.locks import LockObject, open_lock_manager
    from acid_core.metastore.port import split_table_name

    database, name = split_table_name(table)
    manager = open_lock_manager(metastore_url=options.metastore, warehouse=options.warehouse)
    try:
        deadline = time.monotonic() + timeout
        while True:
            held = manager.show(LockObject(database, name), extended=True)
            if not any(info.txn_id == txn_id for info in held):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_SECONDS / 2)
    finally:
        manager.close()


def main(argv: list[str] | None = None) -> int:
    """The holder: acquire, say so, wait for the transaction to end, release."""
    from acid_core.locks import open_lock_manager
    from acid_core.metastore.factory import open_metastore
    from acid_core.metastore.port import TxnState

    parser = argparse.ArgumentParser(prog="pyspark_hiveacid.write_locks")
    parser.add_argument("--table", required=True)
    parser.add_argument("--txn", type=int, required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--metastore", default=None)
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--txn-timeout", type=float, default=TXN_TIMEOUT_SECONDS)
    args = parser.parse_args(argv)
    if os.fork() > 0:
        os._exit(0)  # the starter reaps this parent; the holder below lives on in its own session
    os.setsid()
    try:
        manager = open_lock_manager(metastore_url=args.metastore, warehouse=args.warehouse)
        store = open_metastore(args.metastore, args.warehouse)
    except AcidError as e:
        print(" ".join(str(e).split()), flush=True)
        return 1
    try:
        try:
            handle = manager.acquire(
                plan_write_locks(args.table, args.overwrite),
                holder=f"spark write of {args.table} (txn {args.txn})",
                txn_id=args.txn,
            )
        except AcidError as e:
            print(" ".join(str(e).split()), flush=True)
            return 1
        print(_GRANTED, flush=True)
        try:
            while True:
                try:
                    txn = store.get_txn(args.txn)
                except AcidError:
                    break  # the transaction is gone (housekeeping): nothing left to protect
                if txn.state is not TxnState.OPEN:
                    break
                if time.time() - txn.last_heartbeat > args.txn_timeout:
                    break  # a dead job's transaction: the reaper aborts it; its locks go now
                time.sleep(POLL_SECONDS)
        finally:
            with contextlib.suppress(AcidError):  # a lost session has released them already
                manager.release(handle)
        return 0
    finally:
        store.close()
        manager.close()


if __name__ == "__main__":
    sys.exit(main())
