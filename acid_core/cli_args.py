"""Arguments shared by several ``acidflow`` subcommands: one definition, one help text.

::

    acidflow state TABLE_DIR [--write-ids LIST] [--txns LIST]
    acidflow read  TABLE_DIR [--write-ids LIST] [--txns LIST]

Not here: any subcommand's own options, or what it does with the snapshot.
Errors: ``snapshot_from_args`` raises ``InvalidWriteIdListError`` for a malformed list string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acid_core.writeids import parse_valid_txn_list, parse_valid_write_id_list

if TYPE_CHECKING:
    import argparse

    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["add_snapshot_arguments", "snapshot_from_args"]


def add_snapshot_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``TABLE_DIR``, ``--write-ids`` and ``--txns``."""
    parser.add_argument("table_dir", metavar="TABLE_DIR", help="table or partition directory (path or URI)")
    parser.add_argument(
        "--write-ids",
        metavar="LIST",
        default="",
        help="ValidWriteIdList, e.g. 'db.t:7:5:5:3' (table:hwm:minOpen:open,..:aborted,..); "
        "default: everything committed",
    )
    parser.add_argument(
        "--txns",
        metavar="LIST",
        default="",
        help="ValidTxnList deciding _v visibility, e.g. '20:18:18:' (hwm:minOpen:open,..:aborted,..); "
        "default: every transaction committed",
    )


def snapshot_from_args(args: argparse.Namespace) -> tuple[ValidWriteIdList, ValidTxnList]:
    """The ``(write_ids, txns)`` snapshot named by ``--write-ids`` and ``--txns``."""
    return parse_valid_write_id_list(args.write_ids), parse_valid_txn_list(args.txns)
