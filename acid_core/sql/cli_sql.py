"""``acidflow sql``: run Hive SQL statements against a warehouse.

::

    acidflow sql [--warehouse DIR] [--metastore URL] [--format table|jsonl|csv] STATEMENT...
    acidflow sql -f script.sql

Every STATEMENT argument (and the ``-f`` file) may hold several ``;``-separated statements. The
whole input is parsed before anything runs (a syntax error runs nothing); then each statement
runs in order, DML in its own transaction; the first failure stops the run. Result sets go to
stdout in the chosen format, ``OK: ..`` messages to stderr.

Environment: ``ACIDFLOW_WAREHOUSE`` (default ``./warehouse``), ``ACIDFLOW_METASTORE`` (default: the
embedded SQLite file of the warehouse), ``ACIDFLOW_LOCK_MANAGER`` / ``ACIDFLOW_ZOOKEEPER`` (see
``acid_core.locks``; default: the metastore-backed ``sql`` lock manager, ``none`` turns locking off).
Exit status: 0 on success; 1 with one line ``acidflow sql: error: <message>`` on stderr when a
statement fails (its transaction aborted); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Final

from acid_core.errors import AcidError

if TYPE_CHECKING:
    from acid_core.locks import LockManager

__all__ = ["METASTORE_ENV", "WAREHOUSE_ENV", "add_sql_parser", "run_sql"]

WAREHOUSE_ENV: Final = "ACIDFLOW_WAREHOUSE"
METASTORE_ENV: Final = "ACIDFLOW_METASTORE"
_STATEMENTS_HELP: Final = (
    "statements: CREATE/DROP DATABASE, SHOW DATABASES, CREATE TABLE, DROP TABLE, DESCRIBE, SHOW TABLES, "
    "SHOW PARTITIONS, ALTER TABLE .. "
    "ADD/DROP PARTITION, INSERT INTO .. VALUES/SELECT, UPDATE, DELETE, MERGE, SELECT (row__id), "
    "SHOW TRANSACTIONS, ABORT TRANSACTIONS; "
    "locks: SHOW LOCKS [t [PARTITION (k='v', ..)]] [EXTENDED], EXPLAIN LOCKS <statement> (the locks "
    "it would take; nothing runs); "
    "compaction: ALTER TABLE t [PARTITION (k='v', ..)] COMPACT 'minor'|'major' [AND WAIT], "
    "SHOW COMPACTIONS [t [PARTITION (..)]] [TYPE '..'] [STATE '..'], ABORT COMPACTIONS id [id ..]"
)


def add_sql_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``sql`` subcommand to ``acidflow``'s subparsers."""
    parser = subparsers.add_parser(
        "sql",
        help="run Hive SQL statements (CREATE/INSERT/UPDATE/DELETE/MERGE/SELECT/SHOW ...)",
        description=f"Run Hive SQL statements against a warehouse. {_STATEMENTS_HELP}.",
    )
    parser.add_argument(
        "statements", nargs="*", metavar="STATEMENT", help="SQL text; ';' separates statements"
    )
    parser.add_argument("-f", "--file", help="read statements from this file ('-' for stdin)")
    parser.add_argument(
        "--warehouse",
        default=None,
        help=f"warehouse directory or URI (env {WAREHOUSE_ENV}, default ./warehouse)",
    )
    parser.add_argument(
        "--metastore",
        default=None,
        help=f"metastore URL (env {METASTORE_ENV}, default: SQLite in the warehouse)",
    )
    parser.add_argument("--format", choices=("table", "jsonl", "csv"), default="table", help="result format")
    parser.set_defaults(handler=run_sql)
    return parser


def _lock_manager(metastore_url: str | None, warehouse: str) -> LockManager:
    from acid_core.locks import open_lock_manager

    # ACIDFLOW_LOCK_MANAGER picks zookeeper, sql or none; the default (sql) keeps the locks in
    # the same metastore database as the transactions.
    return open_lock_manager(metastore_url=metastore_url, warehouse=warehouse)


def _read_script(args: argparse.Namespace) -> str:
    parts = list(args.statements or [])
    if args.file:
        if args.file == "-":
            parts.append(sys.stdin.read())
        else:
            with open(args.file, encoding="utf-8") as handle:
                parts.append(handle.read())
    return ";\n".join(parts)


def run_sql(args: argparse.Namespace) -> int:
    """Run ``acidflow sql``; returns the exit status."""
    from acid_core.sql.engine import SqlSession
    from acid_core.sql.output import format_rows
    from acid_core.writes import Warehouse

    script = _read_script(args)
    if not script.strip():
        print("acidflow sql: error: no statements; expected STATEMENT arguments or -f FILE", file=sys.stderr)
        return 2
    warehouse_dir = args.warehouse or os.environ.get(WAREHOUSE_ENV) or "./warehouse"
    metastore_url = args.metastore or os.environ.get(METASTORE_ENV) or None
    try:
        lock_manager = _lock_manager(metastore_url, warehouse_dir)
        try:
            with Warehouse.open(warehouse_dir, metastore_url, lock_manager) as warehouse:
                session = SqlSession(warehouse)
                for result in session.iter_execute(script):
                    if result.rows is not None:
                        sys.stdout.write(format_rows(result.rows, args.format))
                        sys.stdout.flush()
                    if result.message:
                        print(result.message, file=sys.stderr)
        finally:
            lock_manager.close()
    except AcidError as e:
        print(f"acidflow sql: error: {' '.join(str(e).splitlines())}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m acid_core.sql.cli_sql`` (the same as ``acidflow sql``)."""
    parser = argparse.ArgumentParser(prog="acidflow")
    add_sql_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sql", *(sys.argv[1:] if argv is None else argv)])
    return run_sql(args)


if __name__ == "__main__":
    raise SystemExit(main())
