"""``acidflow read``: print the rows a snapshot of an ACID table sees (merge-on-read).

::

    acidflow read TABLE_DIR [--write-ids LIST] [--txns LIST] [--lease ID] [--metastore URL]
                            [--warehouse DIR] [--row-id] [--columns a,b]
                            [--format jsonl|csv|table] [--limit N]

    $ acidflow read /warehouse/db/t --row-id --columns a --limit 2
    {"row__id": {"writeid": 1, "bucketid": 536870912, "rowid": 0}, "a": 1}
    {"row__id": {"writeid": 1, "bucketid": 536870912, "rowid": 1}, "a": 2}

The snapshot: without ``--write-ids``/``--txns``, the metastore's current snapshot of the table
or partition at TABLE_DIR (as a Hive query: a read-only transaction is open while the rows are
read, so aborted and open writes are invisible and the cleaner keeps what is being read); with
``--lease ID`` exactly that lease's snapshot; with ``--write-ids``/``--txns`` those lists (absent
ones: everything committed). The metastore is ``--metastore``, ``$ACIDFLOW_METASTORE``, the
embedded ``.acidflow/metastore.sqlite`` of the nearest enclosing warehouse directory, or that of
``--warehouse``/``$ACIDFLOW_WAREHOUSE`` (see ``acid_core.metastore.snapshots``). A directory no
metastore covers is read with every write committed (a note on a terminal's stderr says so).

Rows come in Hive's row-ID order ``(writeid, bucketid, rowid)`` (``scan(ordered=True)``), one JSON
object per line for ``jsonl``; ``row__id`` is the first key when ``--row-id`` is given. ``csv``
writes a header and flattens ``row__id`` to ``row__id.writeid, row__id.bucketid, row__id.rowid``;
``table`` draws a table for a terminal.

JSON values: numbers and strings as such, decimals as strings (no precision lost), dates and
timestamps in ISO 8601, binary as base64, maps as lists of ``[key, value]`` pairs.

Not here: any merge logic (``reader``); turning errors into one line (``acid_core.cli.app``).
Errors: whatever ``scan`` raises (``AcidError`` subclasses), and ``UnknownTableLocationError`` /
``NoSuchLeaseError`` for a directory or lease the metastore does not know, propagated for
``acid_core.cli.app`` to print as ``acidflow: error: ...`` with exit code 1; ``--lease`` together with
``--write-ids``/``--txns`` is a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import os
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from acid_core.cli.argtypes import whole_number
from acid_core.cli.options import (
    METASTORE_ENV,
    WAREHOUSE_ENV,
    add_snapshot_arguments,
    embedded_metastore_url,
    explicit_snapshot,
    name_lookup_url,
    snapshot_from_args,
    table_location,
    warehouse_dir,
)
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa

    from acid_core.metastore import Table
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["FORMATS", "add_parser", "run_read"]

FORMATS = ("jsonl", "csv", "table")


def _column_list(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"invalid column list {text!r}: expected names separated by ','")
    return names


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow read`` (handler ``run_read``; ``--json`` is ``--format jsonl``)."""
    parser = add_command_parser(
        subparsers,
        "read",
        description=(
            "Merge-on-read of TABLE_DIR (a table or partition directory) at a snapshot, as Hive's "
            "ACID readers do; rows are printed in row-ID order (writeid, bucketid, rowid)."
        ),
    )
    add_snapshot_arguments(parser, from_metastore=True)
    parser.add_argument("--row-id", action="store_true", help="add the row__id {writeid, bucketid, rowid}")
    parser.add_argument(
        "--columns", metavar="a,b", type=_column_list, default=None, help="row columns to print, in order"
    )
    parser.add_argument("--format", choices=FORMATS, default="jsonl", help="output format (default: jsonl)")
    parser.add_argument(
        "--limit", metavar="N", type=whole_number("limit"), default=None, help="print at most N rows"
    )
    parser.set_defaults(handler=run_read)
    return parser


def run_read(args: argparse.Namespace) -> int:
    """Run ``acidflow read``; returns the exit code (errors are raised as ``AcidError``)."""
    from acid_core.fs import file_io_for
    from acid_core.orc.reader import scan

    if args.lease is not None and explicit_snapshot(args):
        print("acidflow read: error: --lease cannot be combined with --write-ids or --txns", file=sys.stderr)
        return 2
    with _snapshot(args) as (location, write_ids, txns, table):
        file_io, path = file_io_for(location)
        reader = scan(
            file_io,
            path,
            write_ids,
            txns,
            columns=args.columns,
            with_row_id=args.row_id,
            limit=args.limit,
            ordered=True,
            schema=None if table is None else _row_schema(table),
        )
        try:
            if args.format == "jsonl":
                _write_jsonl(reader)
            elif args.format == "csv":
                _write_csv(reader)
            else:
                _write_table(args.table_dir, reader)
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader of our output went away (``| head``): not an error of ours. Point stdout at
            # devnull so the interpreter's final flush does not fail again (Python's documented recipe).
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
    return 0


def _row_schema(table: Table) -> pa.Schema:
    """The table's row columns, as the metastore names and types them.

    Files map onto it by position, as Hive reads them: Hive 2.x writes ``_col0, _col1, ..`` into
    the files of an INSERT (FileSinkOperator's internal names), and the metastore names them.
    """
    from acid_core.orc.schema import row_schema

    return row_schema((c.name, c.type) for c in table.columns)


@contextmanager
def _snapshot(
    args: argparse.Namespace,
) -> Iterator[tuple[str, ValidWriteIdList, ValidTxnList, Table | None]]:
    """The directory, the snapshot and the table (None if no metastore knows it) to read with.

    The snapshot is held (read-only transaction) until the rows are written. TABLE_DIR is a
    directory, or ``db.table`` (with ``--partition``) looked up by name in the metastore
    (``--metastore`` / ``$ACIDFLOW_METASTORE``, e.g. a Hive Metastore, else the embedded one of
    ``--warehouse``: ``options.name_lookup_url``); an existing path wins over a name.
    """
    name_url = name_lookup_url(args)
    by_name = name_url is not None
    if explicit_snapshot(args) and not by_name:
        yield (args.table_dir, *snapshot_from_args(args), None)
        return
    from acid_core.errors import UnknownTableLocationError
    from acid_core.fs import is_local_location
    from acid_core.metastore.snapshots import find_embedded_metastore, locate_table

    given = args.warehouse is not None or WAREHOUSE_ENV in os.environ
    warehouse = warehouse_dir(args) if given else None  # refuses an empty one or an unknown scheme
    url = name_url or args.metastore or os.environ.get(METASTORE_ENV) or None
    if url is None:
        url = find_embedded_metastore(args.table_dir)
    if url is None and warehouse is not None:
        url = embedded_metastore_url(warehouse)
    if url is None:
        if args.lease is not None:
            raise UnknownTableLocationError(args.table_dir, "(no metastore found)")
        yield (args.table_dir, *snapshot_from_args(args), None)
        if sys.stderr.isatty():  # a hint for people; scripts get clean stderr (Hive test trees, ...)
            print(
                f"acidflow read: note: no metastore covers {args.table_dir}; read every write as committed "
                "(pass --metastore, or --write-ids/--txns)",
                file=sys.stderr,
            )
        return
    # sqlalchemy and alembic load only when a metastore is actually used.
    from acid_core.metastore.factory import open_metastore
    from acid_core.metastore.port import TxnType
    from acid_core.metastore.snapshots import live_lease

    default_warehouse = (
        "./warehouse"
        if by_name
        else os.path.dirname(os.path.abspath(args.table_dir))
        if is_local_location(args.table_dir)
        else args.table_dir.rstrip("/").rpartition("/")[0]
    )
    with open_metastore(url, warehouse or default_warehouse) as store:
        if by_name:
            table = store.get_table(args.table_dir)
            location = table_location(store, table.full_name, args.partition)
        else:
            table, _ = locate_table(store, args.table_dir, url)
            location = args.table_dir
        if explicit_snapshot(args):
            yield (location, *snapshot_from_args(args), table)
            return
        if args.lease is not None:
            lease = live_lease(store, args.lease, table.full_name)
            # live_lease refuses a lease without its transaction list.
            yield location, lease.write_ids, cast("ValidTxnList", lease.txns), table
            return
        # Hive runs a query in a read-only transaction: its snapshot, and the cleaner waits for it.
        txn = store.open_txn(txn_type=TxnType.READ_ONLY)
        try:
            txns = store.get_valid_txns(txn)
            yield location, store.get_valid_write_ids(table.full_name, txns), txns, table
        finally:
            store.commit_txn(txn)


def _json_value(value: object) -> object:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _rows(reader: pa.RecordBatchReader) -> Iterator[dict[str, Any]]:
    for batch in reader:
        yield from batch.to_pylist()


def _write_jsonl(reader: pa.RecordBatchReader) -> None:
    write = sys.stdout.write
    for row in _rows(reader):
        write(json.dumps(row, default=_json_value, ensure_ascii=False) + "\n")


def _write_csv(reader: pa.RecordBatchReader) -> None:
    from acid_core.orc.stream import write_csv

    write_csv(reader, reader.schema, sys.stdout.buffer)  # batch by batch, never the whole table
    sys.stdout.buffer.flush()


def _write_table(table_dir: str, reader: pa.RecordBatchReader) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Rows of {table_dir}", title_justify="left")
    names = reader.schema.names
    for name in names:
        table.add_column(name)
    for row in _rows(reader):
        table.add_row(*(json.dumps(row[name], default=_json_value) for name in names))
    Console(soft_wrap=True).print(table)
