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

import sys
from typing import TYPE_CHECKING, Final

from acid_core.cli.options import (
    DEFAULT_WAREHOUSE,
    WAREHOUSE_ENV,
    add_common_options,
    metastore_url,
    warehouse_dir,
)
from acid_core.cli.registry import add_command_parser
from acid_core.errors import AcidError

if TYPE_CHECKING:
    import argparse

    from acid_core.locks import LockManager

__all__ = ["add_parser", "run_sql"]

_STATEMENTS_HELP: Final = (
    "statements: CREATE/DROP DATABASE, SHOW DATABASES, CREATE TABLE, DROP TABLE, DESCRIBE, SHOW TABLES, "
    "SHOW PARTITIONS, ALTER TABLE .. "
    "ADD/DROP PARTITION, ALTER TABLE t [PARTITION (..)] SET LOCATION '..' (metadata only), "
    "ALTER TABLE t SET TBLPROPERTIES ('k'='v', ..) / UNSET TBLPROPERTIES [IF EXISTS] ('k', ..) (validated), INSERT INTO .. VALUES/SELECT, UPDATE, DELETE, MERGE, SELECT (row__id), "
    "SHOW TRANSACTIONS, ABORT TRANSACTIONS; "
    "locks: SHOW LOCKS [t [PARTITION (k='v', ..)]] [EXTENDED], EXPLAIN LOCKS <statement> (the locks "
    "it would take; nothing runs); "
    "compaction: ALTER TABLE t [PARTITION (k='v', ..)] COMPACT 'minor'|'major' [AND WAIT], "
    "SHOW COMPACTIONS [t [PARTITION (..)]] [TYPE '..'] [STATE '..'], ABORT COMPACTIONS id [id ..]"
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow sql`` (handler ``run_sql``; ``--json`` is ``--format jsonl``)."""
    parser = add_command_parser(
        subparsers, "sql", description=f"Run Hive SQL statements against a warehouse. {_STATEMENTS_HELP}."
    )
    parser.add_argument(
        "statements", nargs="*", metavar="STATEMENT", help="SQL text; ';' separates statements"
    )
    parser.add_argument("-f", "--file", help="read statements from this file ('-' for stdin)")
    add_common_options(
        parser,
        json_help=None,
        warehouse_help=f"warehouse directory or URI, created on first use (default: ${WAREHOUSE_ENV}, "
        f"else {DEFAULT_WAREHOUSE})",
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
    location, url = warehouse_dir(args), metastore_url(args)
    try:
        lock_manager = _lock_manager(url, location)
        try:
            with Warehouse.open(location, url, lock_manager) as warehouse:
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
