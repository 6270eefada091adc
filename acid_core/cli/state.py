"""``acidflow state``: which base, deltas and original files a reader merges, and what is obsolete.

::

    acidflow state TABLE_DIR [--write-ids LIST] [--txns LIST] [--compactor] [--json]
    acidflow state db.table [--partition k=v] [--metastore URL] [--warehouse DIR]

    $ acidflow state /warehouse/t --json
    {"base": "base_0000005", "deltas": ["delta_0000006_0000006_0000"], "obsolete": [...], ...}

The decision is Hive's ``AcidUtils.getAcidState`` (``acid_core.state``) over one listing of the
directory. A path is read with ``--write-ids``/``--txns`` (absent: everything committed); a name
(``db.table``, with ``--metastore`` or ``$ACIDFLOW_METASTORE``) is looked up in the metastore, with
its current snapshot unless the lists are given (``options.resolve_target``).
Not here: the rules (``state``, ``directory``). Errors: ``AcidError`` propagates to ``app.main``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from acid_core.cli.options import add_snapshot_arguments, resolve_target
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run_state"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow state`` (handler ``run_state``)."""
    parser = add_command_parser(
        subparsers,
        "state",
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
    parser.set_defaults(handler=run_state)
    return parser


def run_state(args: argparse.Namespace) -> int:
    """Run ``acidflow state``; returns the exit code."""
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
