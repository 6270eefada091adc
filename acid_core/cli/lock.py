"""``acidflow lock``: take, hold and list locks by hand (operators debugging contention).

::

    acidflow lock acquire OBJECT [OBJECT...] --mode S|X [--hold SECONDS] [--retries N] [--wait SECONDS]
                          [--holder NAME] [--txn-id N] [--fair] [--format text|jsonl]
    acidflow lock show [OBJECT] [--extended] [--format text|jsonl]

The manager comes from ``ACIDFLOW_LOCK_MANAGER=zookeeper|sql|none`` and
``ACIDFLOW_ZOOKEEPER=host:port[,host:port...][/chroot]`` (see ``open_lock_manager``).
``acquire`` completes the request with the hierarchy (S on every parent), prints the granted locks,
holds them ``--hold`` seconds (checking the session every 0.1 s) and releases them.

``--metastore``/``--warehouse`` name the metastore of the ``sql`` manager (they win over the
environment); the ``zookeeper`` manager ignores them. With ``--txn-id`` they also name the metastore
that must hold that transaction, open (Hive's ``lock()``: ``TxnHandler.ensureValidTxn``), whichever
manager holds the locks.
Not here: the lock rules (``acid_core.locks``).
Errors: an ``AcidError`` propagates to ``acid_core.cli.app.main`` (one line on stderr, exit 1):
``LockRefusedError`` naming the holders, ``LockLostError`` if the session is lost while holding,
``NoSuchTxnError``/``TxnNotOpenError`` for a ``--txn-id`` that is unknown or not open (nothing is
locked then).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import time
from typing import TYPE_CHECKING

from acid_core.cli.argtypes import non_negative_number, positive_long
from acid_core.cli.options import (
    METASTORE_ENV,
    WAREHOUSE_ENV,
    add_common_options,
    open_existing_metastore,
    warehouse_dir,
)
from acid_core.cli.registry import add_command_parser
from acid_core.errors import TxnNotOpenError
from acid_core.locks import (
    DEFAULT_RETRIES,
    DEFAULT_WAIT_SECONDS,
    LOCK_MANAGER_ENV,
    LockInfo,
    LockRequest,
    default_host,
    open_lock_manager,
    parse_lock_mode,
    parse_lock_object,
    plan_lock_set,
)
from acid_core.types import TxnId

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["add_parser", "run_lock"]

_CHECK_INTERVAL = 0.1


_seconds = non_negative_number("seconds")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``lock acquire`` and ``lock show`` (handler ``run_lock``; ``--json`` is ``--format jsonl``)."""
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(
        common,
        json_help=None,
        metastore_help=f"with {LOCK_MANAGER_ENV}=sql (the default): the metastore holding the locks "
        f"(default: ${METASTORE_ENV}, else <warehouse>/.acidflow/metastore.sqlite); with --txn-id: the "
        "metastore holding that transaction (also with zookeeper)",
        warehouse_help=f"with {LOCK_MANAGER_ENV}=sql or --txn-id: the warehouse of the embedded metastore "
        f"(default: ${WAREHOUSE_ENV}, else ./warehouse)",
    )
    parser = add_command_parser(
        subparsers,
        "lock",
        description="Take shared/exclusive locks by hand, or list who holds which lock.",
    )
    commands = parser.add_subparsers(dest="lock_command", required=True, metavar="ACTION")
    acquire = commands.add_parser("acquire", parents=[common], help="acquire locks, hold them, release them")
    acquire.add_argument("objects", metavar="OBJECT", nargs="+", help="db.table or db.table/k=v[/k2=v2]")
    acquire.add_argument("--mode", required=True, type=parse_lock_mode, help="S (shared) or X (exclusive)")
    acquire.add_argument(
        "--hold", type=_seconds, default=0.0, metavar="SECONDS", help="hold the locks (default 0)"
    )
    acquire.add_argument(
        "--retries",
        type=int,
        default=DEFAULT_RETRIES,
        metavar="N",
        help=f"retries (default {DEFAULT_RETRIES})",
    )
    acquire.add_argument(
        "--wait",
        type=_seconds,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"longest wait between retries (default {DEFAULT_WAIT_SECONDS})",
    )
    acquire.add_argument("--holder", default=None, help="holder name shown by `lock show --extended`")
    acquire.add_argument(
        "--txn-id",
        type=positive_long("transaction ID"),
        default=None,
        help="open transaction the locks belong to (refused if the metastore has no such open transaction)",
    )
    acquire.add_argument("--fair", action="store_true", help="fair mode: block later readers while waiting")
    acquire.add_argument("--format", choices=("text", "jsonl"), default="text")
    show = commands.add_parser("show", parents=[common], help="list held locks (SHOW LOCKS)")
    show.add_argument("object", metavar="OBJECT", nargs="?", default=None, help="only this object and below")
    show.add_argument("--extended", action="store_true", help="add holder, host, transaction, acquired time")
    show.add_argument("--format", choices=("text", "jsonl"), default="text")
    parser.set_defaults(handler=run_lock)
    return parser


def run_lock(args: argparse.Namespace) -> int:
    """Run ``acidflow lock ACTION``; returns the exit code (AcidError propagates to the caller)."""
    if args.lock_command == "acquire":
        return _run_acquire(args)
    return _run_show(args)


def _default_holder() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{default_host()}:{os.getpid()}"


def _run_acquire(args: argparse.Namespace) -> int:
    requests = plan_lock_set(LockRequest(parse_lock_object(o), args.mode) for o in args.objects)
    if args.txn_id is not None:
        _require_open_txn(args, args.txn_id)
    manager = open_lock_manager(fair=args.fair, metastore_url=args.metastore, warehouse=warehouse_dir(args))
    try:
        handle = manager.acquire(
            requests,
            holder=args.holder or _default_holder(),
            txn_id=None if args.txn_id is None else TxnId(args.txn_id),
            retries=args.retries,
            wait_seconds=args.wait,
        )
        for request in handle.requests:
            _print_line(request.to_dict(), args.format, f"acquired {request}")
        deadline = time.monotonic() + max(args.hold, 0.0)
        while (left := deadline - time.monotonic()) > 0:
            handle.check()
            time.sleep(min(_CHECK_INTERVAL, left))
        manager.release(handle)
        _print_line(
            {"released": len(handle.requests)}, args.format, f"released {len(handle.requests)} lock(s)"
        )
    finally:
        manager.close()
    return 0


def _require_open_txn(args: argparse.Namespace, txn_id: int) -> None:
    """Hive's ``lock()`` refuses an unknown transaction (NoSuchTxnException) or one not open."""
    from acid_core.metastore import TxnState

    with open_existing_metastore(args) as metastore:
        state = metastore.get_txn(txn_id).state
    if state is not TxnState.OPEN:
        raise TxnNotOpenError(txn_id, state.value, "lock objects for")


def _run_show(args: argparse.Namespace) -> int:
    prefix = parse_lock_object(args.object) if args.object else None
    manager = open_lock_manager(metastore_url=args.metastore, warehouse=warehouse_dir(args))
    try:
        infos = manager.show(prefix, extended=args.extended)
    finally:
        manager.close()
    for info in infos:
        _print_line(info.to_dict(extended=args.extended), args.format, _text(info, extended=args.extended))
    if not infos and args.format == "text":
        print("no locks held")
    return 0


def _text(info: LockInfo, *, extended: bool) -> str:
    line = f"{info.mode.letter} {info.object}"
    if not extended:
        return line
    cells: Sequence[object] = (
        info.holder or "-",
        info.host or "-",
        "-" if info.txn_id is None else info.txn_id,
        info.acquired_at.isoformat(timespec="seconds") if info.acquired_at else "-",
    )
    return "\t".join([line, *(str(c) for c in cells)])


def _print_line(data: Mapping[str, str | int | None], fmt: str, text: str) -> None:
    print(json.dumps(data) if fmt == "jsonl" else text, flush=True)
