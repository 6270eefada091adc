"""Arguments shared by several ``acidflow`` subcommands: one definition, one help text.

::

    acidflow state TABLE_DIR [--write-ids LIST] [--txns LIST]
    acidflow read  TABLE_DIR [--write-ids LIST] [--txns LIST | --lease ID] [--metastore URL] [--warehouse DIR]

Not here: any subcommand's own options, or what it does with the snapshot.
Errors: ``snapshot_from_args`` raises ``InvalidWriteIdListError`` for a malformed or explicitly empty
list string.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Final

from acid_core.errors import InvalidWriteIdListError, StorageError
from acid_core.metastore.port import METASTORE_DIR_NAME
from acid_core.writeids import parse_valid_txn_list, parse_valid_write_id_list

if TYPE_CHECKING:
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = [
    "METASTORE_ENV",
    "WAREHOUSE_ENV",
    "add_snapshot_arguments",
    "explicit_snapshot",
    "require_existing_warehouse",
    "snapshot_from_args",
]

METASTORE_ENV: Final = "ACIDFLOW_METASTORE"
WAREHOUSE_ENV: Final = "ACIDFLOW_WAREHOUSE"


def add_snapshot_arguments(parser: argparse.ArgumentParser, *, from_metastore: bool = False) -> None:
    """Add ``TABLE_DIR``, ``--write-ids`` and ``--txns``.

    Args:
        parser: the subcommand's parser.
        from_metastore: also add ``--lease``, ``--metastore`` and ``--warehouse``; without an
            explicit list the snapshot is then the metastore's (``explicit_snapshot`` tells).
    """
    parser.add_argument("table_dir", metavar="TABLE_DIR", help="table or partition directory (path or URI)")
    default = "the metastore's current snapshot" if from_metastore else "everything committed"
    parser.add_argument(
        "--write-ids",
        metavar="LIST",
        default=None,
        help="ValidWriteIdList, e.g. 'db.t:7:5:5:3' (table:hwm:minOpen:open,..:aborted,..); "
        f"default: {default}",
    )
    parser.add_argument(
        "--txns",
        metavar="LIST",
        default=None,
        help="ValidTxnList deciding _v visibility, e.g. '20:18:18:' (hwm:minOpen:open,..:aborted,..); "
        f"default: {default if from_metastore else 'every transaction committed'}",
    )
    if not from_metastore:
        return
    parser.add_argument(
        "--lease",
        metavar="ID",
        type=_lease_id,
        default=None,
        help="read at exactly the snapshot of this reader lease (`acidflow lease take TABLE`)",
    )
    parser.add_argument(
        "--metastore",
        metavar="URL",
        default=None,
        help=f"metastore SQLAlchemy URL (default: ${METASTORE_ENV}, else the .acidflow/metastore.sqlite "
        "of TABLE_DIR's nearest warehouse directory, else of --warehouse)",
    )
    parser.add_argument(
        "--warehouse",
        metavar="DIR",
        default=None,
        help=f"warehouse whose embedded metastore to use (default: ${WAREHOUSE_ENV})",
    )


def _lease_id(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"invalid lease ID {text!r}: expected a positive integer")
    return int(text)


def explicit_snapshot(args: argparse.Namespace) -> bool:
    """Whether ``--write-ids`` or ``--txns`` was given (else the snapshot comes from elsewhere)."""
    return args.write_ids is not None or args.txns is not None


def snapshot_from_args(args: argparse.Namespace) -> tuple[ValidWriteIdList, ValidTxnList]:
    """The ``(write_ids, txns)`` snapshot named by ``--write-ids`` and ``--txns``.

    An omitted option means everything committed; an explicitly empty one (``--write-ids "$UNSET"``)
    is refused rather than read as everything committed, which is what Hive would make of it.
    """
    for option, value in (("--write-ids", args.write_ids), ("--txns", args.txns)):
        if value is not None and not value.strip():
            raise InvalidWriteIdListError(
                value,
                f"{option} list",
                "is empty; expected a list such as 'db.t:7:5:5:3' (--write-ids) or '20:18:18:' "
                f"(--txns); hint: omit {option} to see everything committed",
            )
    return parse_valid_write_id_list(args.write_ids or ""), parse_valid_txn_list(args.txns or "")


def require_existing_warehouse(metastore_url: str | None, warehouse: str) -> None:
    """Refuse a warehouse without its embedded metastore, for commands that only maintain one.

    ``acidflow sql`` creates a warehouse on first use; ``initiate``, ``compact``, ``clean`` and
    ``lease`` must not create an empty one because of a typo in ``--warehouse``.

    Raises:
        StorageError: no ``--metastore`` URL and no ``<warehouse>/.acidflow/metastore.sqlite``.
    """
    if metastore_url is not None:
        return
    database = Path(warehouse).resolve() / METASTORE_DIR_NAME / "metastore.sqlite"
    if not database.is_file():
        raise StorageError(
            f"Warehouse {warehouse!r} has no metastore ({str(database)!r} does not exist); expected an "
            "existing warehouse; hint: check --warehouse / ACIDFLOW_WAREHOUSE, pass --metastore URL, or "
            "create tables first with `acidflow sql`"
        )
