"""Arguments shared by several ``acidflow`` commands: one definition, one help text.

::

    acidflow COMMAND ... [--metastore URL] [--warehouse DIR] [--json]   on every command
    acidflow state TABLE_DIR [--write-ids LIST] [--txns LIST]
    acidflow read  TABLE_DIR [--write-ids LIST] [--txns LIST | --lease ID]
    acidflow state|read db.table [--partition k=v] [--metastore URL | --warehouse DIR]
                                     the table by name: its location and snapshot from the metastore
                                     (--metastore, $ACIDFLOW_METASTORE, else the warehouse's embedded one)

TABLE_DIR is a name when it has no ``/`` and is not an existing path (an existing path wins).

``--metastore`` defaults to ``$ACIDFLOW_METASTORE``, else the embedded SQLite file of the
warehouse (a local one only: an ``s3://`` or ``hdfs://`` warehouse needs a URL); ``--warehouse``
to ``$ACIDFLOW_WAREHOUSE``, else ``./warehouse`` (an empty value or an unknown scheme is refused). A command that has no
use for one still accepts it (so one set of options fits every command) and says so in its help.

Importing this module imports nothing of the engine: the parsers are built from it before the
command's work starts (the start-up budget); the functions import what they use.
Not here: any command's own options, or what it does with the snapshot.
Errors: ``snapshot_from_args`` raises ``InvalidWriteIdListError`` for a malformed or explicitly empty
list string; ``resolve_target`` raises ``NoSuchTableError`` / ``NoSuchPartitionError`` for an unknown name.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from acid_core.metastore.hive.metastore import HiveMetastore
    from acid_core.metastore.port import Metastore
    from acid_core.metastore.sql.metastore import SqlMetastore
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = [
    "DEFAULT_WAREHOUSE",
    "METASTORE_ENV",
    "WAREHOUSE_ENV",
    "SnapshotTarget",
    "add_common_options",
    "metastore_url",
    "note_nothing",
    "open_existing_metastore",
    "warehouse_dir",
    "add_snapshot_arguments",
    "embedded_metastore_url",
    "explicit_snapshot",
    "is_table_name",
    "name_lookup_url",
    "require_existing_warehouse",
    "resolve_target",
    "snapshot_from_args",
    "table_location",
]

METASTORE_ENV: Final = "ACIDFLOW_METASTORE"
WAREHOUSE_ENV: Final = "ACIDFLOW_WAREHOUSE"
DEFAULT_WAREHOUSE: Final = "./warehouse"
_METASTORE_HELP: Final = (
    f"metastore URL: SQLAlchemy, or thrift://host:9083 for a Hive Metastore (default: ${METASTORE_ENV}, "
    "else <warehouse>/.acidflow/metastore.sqlite)"
)
_WAREHOUSE_HELP: Final = f"warehouse directory or URI (default: ${WAREHOUSE_ENV}, else {DEFAULT_WAREHOUSE})"


def add_common_options(
    parser: argparse.ArgumentParser,
    *,
    json_help: str | None = "one JSON object per line",
    metastore_help: str = _METASTORE_HELP,
    warehouse_help: str = _WAREHOUSE_HELP,
) -> None:
    """Add the options every command takes: ``--metastore``, ``--warehouse`` and ``--json``.

    Args:
        parser: the command's parser.
        json_help: help of ``--json``; None when the command gets ``--json`` otherwise (from
            ``--format jsonl``, see ``registry.add_json_alias``) or adds its own.
        metastore_help: help of ``--metastore`` (say so when the command ignores it).
        warehouse_help: help of ``--warehouse`` (say so when the command ignores it).
    """
    parser.add_argument("--metastore", metavar="URL", default=None, help=metastore_help)
    parser.add_argument("--warehouse", metavar="DIR", default=None, help=warehouse_help)
    if json_help is not None:
        parser.add_argument("--json", action="store_true", help=json_help)


def note_nothing(args: argparse.Namespace, message: str) -> None:
    """Tell a person at a terminal that a command found nothing to print (stdout stays empty).

    Scripts (stderr not a terminal) and ``--json`` readers get no line: empty output means none.
    """
    if not getattr(args, "json", False) and sys.stderr.isatty():
        print(f"acidflow {args.command}: {message}", file=sys.stderr)


def metastore_url(args: argparse.Namespace) -> str | None:
    """``--metastore``, else ``$ACIDFLOW_METASTORE``, else None (the warehouse's embedded one)."""
    url: str | None = args.metastore or os.environ.get(METASTORE_ENV) or None
    return url


def warehouse_dir(args: argparse.Namespace) -> str:
    """``--warehouse``, else ``$ACIDFLOW_WAREHOUSE``, else ``./warehouse``: checked, absolute or a URI.

    A given but empty value (``--warehouse ""``, ``ACIDFLOW_WAREHOUSE=``) is refused, not read as
    the default: a read-only command would create ``./warehouse``.

    Raises:
        InvalidWarehouseError: empty, an unknown scheme, a URI without bucket or host.
    """
    from acid_core.fs import resolve_warehouse

    if args.warehouse is not None:
        return resolve_warehouse(args.warehouse, source="--warehouse")
    if WAREHOUSE_ENV in os.environ:
        return resolve_warehouse(os.environ[WAREHOUSE_ENV], source=f"${WAREHOUSE_ENV}")
    return resolve_warehouse(DEFAULT_WAREHOUSE, source="the default")


def open_existing_metastore(args: argparse.Namespace) -> SqlMetastore | HiveMetastore:
    """The metastore the options name, refusing a warehouse that has none (see below).

    Raises:
        StorageError: no ``--metastore`` URL and no embedded metastore in the warehouse.
    """
    from acid_core.metastore.factory import open_metastore

    url, warehouse = metastore_url(args), warehouse_dir(args)
    require_existing_warehouse(url, warehouse)
    return open_metastore(url, warehouse)


def add_snapshot_arguments(parser: argparse.ArgumentParser, *, from_metastore: bool = False) -> None:
    """Add ``TABLE_DIR``, ``--write-ids``, ``--txns``, ``--partition`` and the common options.

    Args:
        parser: the subcommand's parser.
        from_metastore: also add ``--lease``; without an explicit list the snapshot is then the
            metastore's (``explicit_snapshot`` tells). Otherwise also ``--json``.
    """
    parser.add_argument(
        "table_dir",
        metavar="TABLE_DIR",
        help="table or partition directory (path or URI), or db.table looked up in the metastore "
        "(--metastore, else the embedded one of --warehouse); an existing path wins over a name",
    )
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
    parser.add_argument("--partition", metavar="k=v[/k2=v2]", default=None, help="with db.table: a partition")
    if not from_metastore:
        add_common_options(
            parser,
            json_help="print one JSON object",
            metastore_help="read TABLE_DIR as db.table from this metastore (thrift://host:9083 for a Hive "
            f"Metastore; default ${METASTORE_ENV}, else the warehouse's embedded one, when TABLE_DIR is a "
            "name, not a path); a path is read without one",
            warehouse_help="with db.table: the warehouse whose embedded metastore has the table (default: "
            f"${WAREHOUSE_ENV}, else {DEFAULT_WAREHOUSE})",
        )
        return
    parser.add_argument(
        "--lease",
        metavar="ID",
        type=_lease_id,
        default=None,
        help="read at exactly the snapshot of this reader lease (`acidflow lease take TABLE`)",
    )
    add_common_options(
        parser,
        json_help=None,
        metastore_help=f"metastore URL: SQLAlchemy or thrift://host:9083 (default: ${METASTORE_ENV}, else the "
        ".acidflow/metastore.sqlite of TABLE_DIR's nearest warehouse directory, else of --warehouse)",
        warehouse_help=f"warehouse whose embedded metastore to use (default: ${WAREHOUSE_ENV})",
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
    from acid_core.errors import InvalidWriteIdListError
    from acid_core.writeids import parse_valid_txn_list, parse_valid_write_id_list

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
        EmbeddedMetastoreLocationError: no ``--metastore`` URL for a warehouse on S3 or HDFS.
    """
    if metastore_url is not None:
        return
    from acid_core.errors import StorageError
    from acid_core.metastore.factory import default_metastore_url

    # Refuses a warehouse on S3/HDFS (no embedded metastore there) before looking for the file.
    database = Path(default_metastore_url(warehouse).removeprefix("sqlite:///"))
    if not database.is_file():
        raise StorageError(
            f"Warehouse {warehouse!r} has no metastore ({str(database)!r} does not exist); expected an "
            "existing warehouse; hint: check --warehouse / ACIDFLOW_WAREHOUSE, pass --metastore URL, or "
            "create tables first with `acidflow sql`"
        )


@dataclass(frozen=True, slots=True)
class SnapshotTarget:
    """Where to look and at which snapshot: a directory (path or URI) and its lists."""

    location: str
    write_ids: ValidWriteIdList
    txns: ValidTxnList


def _embedded_metastore_file(warehouse: str) -> Path:
    from acid_core.metastore.port import METASTORE_DIR_NAME

    return Path(warehouse).resolve() / METASTORE_DIR_NAME / "metastore.sqlite"


def embedded_metastore_url(warehouse: str) -> str | None:
    """The URL of ``warehouse``'s embedded metastore if it has one (never creates it), else None.

    Only a local warehouse has one (an ``s3://`` or ``hdfs://`` warehouse needs a metastore URL).
    """
    from acid_core.fs import is_local_location

    if not is_local_location(warehouse):
        return None
    database = _embedded_metastore_file(warehouse)
    return f"sqlite:///{database}" if database.is_file() else None


def is_table_name(text: str) -> bool:
    """Whether TABLE_DIR names a table (``db.table``) rather than a directory."""
    return "/" not in text and "\\" not in text and not os.path.exists(text)


def name_lookup_url(args: argparse.Namespace) -> str | None:
    """The metastore to look TABLE_DIR up in by name, or None: read TABLE_DIR as a path.

    A name (``db.table``, not an existing path) is looked up in ``--metastore`` /
    ``$ACIDFLOW_METASTORE``, else in the embedded metastore of ``--warehouse`` /
    ``$ACIDFLOW_WAREHOUSE`` / ``./warehouse`` when that warehouse has one.
    """
    if not is_table_name(args.table_dir):
        return None
    return metastore_url(args) or embedded_metastore_url(warehouse_dir(args))


def resolve_target(args: argparse.Namespace) -> SnapshotTarget:
    """The directory and snapshot the arguments of ``acidflow state`` name.

    A path is used as given, with ``--write-ids``/``--txns``. ``db.table`` (``name_lookup_url``:
    ``--metastore``, ``$ACIDFLOW_METASTORE`` or the warehouse's embedded metastore) is looked up in
    the metastore: its location (or
    ``--partition``'s) and, unless the lists are given, the metastore's current snapshot: the
    ValidTxnList of open and aborted transactions and the table's ValidWriteIdList (on a Hive 2.x
    metastore write IDs are transaction IDs).
    """
    explicit_write_ids, explicit_txns = snapshot_from_args(args)  # refuses malformed or empty lists
    url = name_lookup_url(args)
    if url is None:
        return SnapshotTarget(args.table_dir, explicit_write_ids, explicit_txns)
    from acid_core.metastore.factory import open_metastore

    with open_metastore(url, warehouse_dir(args)) as metastore:
        table = metastore.get_table(args.table_dir)
        location = table_location(metastore, table.full_name, args.partition)
        txns = explicit_txns if args.txns else metastore.get_valid_txns()
        write_ids = (
            explicit_write_ids if args.write_ids else metastore.get_valid_write_ids(table.full_name, txns)
        )
    return SnapshotTarget(location, write_ids, txns)


def table_location(metastore: Metastore, table_name: str, partition: str | None) -> str:
    """The directory of ``table_name`` or of its ``partition`` (``k=v[/k2=v2]``), as the metastore has it.

    Raises:
        NoSuchTableError: no such table. NoSuchPartitionError: no such partition.
    """
    from acid_core.compaction.worker import partition_location
    from acid_core.errors import NoSuchPartitionError

    table = metastore.get_table(table_name)
    if partition is not None and partition not in {
        p.name for p in metastore.list_partitions(table.full_name)
    }:
        raise NoSuchPartitionError(table.full_name, partition)
    return partition_location(metastore, table, partition)
