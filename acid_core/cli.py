"""The ``acidflow`` command: argument parsing and output only, no logic.

::

    acidflow state TABLE_DIR [--write-ids LIST] [--txns LIST] [--compactor] [--json]
    acidflow read TABLE_DIR [--write-ids LIST] [--row-id] [--columns a,b] [--format ...] [--limit N]
    acidflow sql [--warehouse DIR] [--metastore URL] [--format ...] STATEMENT... | -f FILE
    acidflow initiate [--dry-run] | compact ... | clean [--dry-run]
    acidflow lease take TABLE [--ttl SECONDS] [--json] | release ID | list
    acidflow lock acquire OBJECT... --mode S|X [--hold S] [--retries N] [--wait S] | show

Every subcommand returns an exit code; an ``AcidError`` becomes one line on stderr
(``acidflow: error: ...``) and exit code 1, never a traceback. Usage errors exit 2 (argparse).
Not here: anything a library user would also need (that lives in ``acid_core``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import cast

from acid_core.cli_args import add_snapshot_arguments, resolve_target
from acid_core.errors import AcidError

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]


def _add_state_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "state",
        help="show which base, deltas and original files a reader merges, and what is obsolete",
        description=(
            "Decide the ACID directory state of TABLE_DIR (a table or partition directory) as Hive's "
            "AcidUtils.getAcidState does, for a snapshot."
        ),
    )
    add_snapshot_arguments(parser)
    parser.add_argument(
        "--compactor",
        action="store_true",
        help="use the compactor's view of --write-ids (Hive's ValidCompactorWriteIdList)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=_run_state)


def _run_state(args: argparse.Namespace) -> int:
    from acid_core.directory import load_directory_state
    from acid_core.fs import file_io_for
    from acid_core.writeids import to_compactor_write_id_list

    target = resolve_target(args)
    write_ids, txns = target.write_ids, target.txns
    if args.compactor:
        write_ids = to_compactor_write_id_list(write_ids)
    file_io, path = file_io_for(target.location)
    state = load_directory_state(file_io, path, write_ids, txns)
    if args.json:
        print(json.dumps(state.to_json_dict()))
        return 0
    _print_state_table(args.table_dir, state.to_json_dict())
    return 0


def _print_state_table(table_dir: str, data: dict[str, object]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"ACID state of {table_dir}", title_justify="left")
    table.add_column("role", no_wrap=True)
    table.add_column("name", overflow="fold")  # never truncate a directory name
    rows: list[tuple[str, str]] = []
    if data["base"] is not None:
        rows.append(("base", str(data["base"])))
    for role, key in (
        ("delta", "deltas"),
        ("original", "original_files"),
        ("obsolete", "obsolete"),
        ("aborted", "aborted"),
    ):
        rows.extend((role, str(value)) for value in cast("list[str]", data[key]))
    for role, name in rows:
        table.add_row(role, name)
    if not rows:
        table.add_row("(empty)", "no base, deltas or original files")
    Console(soft_wrap=True).print(table)


def build_parser() -> argparse.ArgumentParser:
    """The full ``acidflow`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="acidflow", description="Keep Apache Hive ACID tables healthy: state, compaction, cleaning."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_state_parser(subparsers)
    # Each subsystem owns its subcommand's arguments; the modules import their heavy
    # dependencies (kazoo, sqlalchemy, pyarrow) only when the subcommand runs.
    from acid_core.compaction.cli_compaction import add_compaction_parsers
    from acid_core.locks.cli_lock import add_lock_parser
    from acid_core.metastore.cli_lease import add_lease_parser
    from acid_core.orc.cli_read import add_read_parser
    from acid_core.sql.cli_sql import add_sql_parser

    add_read_parser(subparsers)
    add_sql_parser(subparsers)
    add_compaction_parsers(subparsers)
    add_lease_parser(subparsers)
    add_lock_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``acidflow`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except AcidError as e:
        print(f"acidflow: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
