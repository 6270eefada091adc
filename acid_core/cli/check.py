"""``acidflow check``: find ORC files whose struct values were written shifted (read-only).

::

    acidflow check PATH [PATH ...] [--json]
    acidflow check [--metastore URL] [--warehouse DIR] [--json]     every table's and partition's location

    $ acidflow check /warehouse/sales/customers
    damaged /warehouse/sales/customers/base_0000012_v0000040/bucket_00000: row.address.city, row.address.zip
    checked 14 ORC files under 1 path: 1 damaged

Before wave 3's fix (``acid_core.orc.nested_nulls``) acidflow's writers, through pyarrow's ORC
writer, wrote a struct column holding nulls below the top level (every user column of an ACID
file is inside ``row``) so that every reader sees the values after a null struct shifted. This
command walks each PATH (a file, or a directory: a table, a partition, a whole warehouse; local,
``hdfs://`` or ``s3://``), reads the footer of every ORC file below it (names starting with ``.``
or ``_`` are skipped, as readers skip them) and, where a struct column has nulls, decodes its
stripes: a struct child whose Footer counts more values than a reader sees is named. Without
PATH it checks the location of every table of the metastore (``--metastore``, else the embedded
one of ``--warehouse``) and of every partition outside its table's directory; a location with no
files yet is skipped. It changes nothing. The rows of a damaged file cannot be recovered from
it: rewrite them from their source, or restore the compaction's inputs from the cleaner's trash
(``acidflow clean --restore``) and compact again.

Exit status: 0 nothing damaged, 1 a damaged file (or an error). ``--json``: one object per
damaged file (``{"path": ..., "columns": [...]}``), then ``{"checked": N, "damaged": K,
"not_orc": [...]}``. Errors: a PATH that does not exist is one ``acidflow: error:`` line.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from acid_core.cli.options import add_common_options, open_existing_metastore
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    import argparse

    from acid_core.fs import FileIO

__all__ = ["add_parser", "run_check"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow check`` (handler ``run_check``)."""
    parser = add_command_parser(
        subparsers,
        "check",
        description=(
            "Find ORC files below each PATH (default: every table's location in the metastore) whose "
            "struct values were written shifted by pyarrow's ORC writer (acidflow before wave 3's fix). "
            "Read-only."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a file or directory (local, hdfs://, s3://); none: every table's location in the metastore",
    )
    add_common_options(parser, json_help="one JSON object per damaged file, then a summary")
    parser.set_defaults(handler=run_check)
    return parser


def run_check(args: argparse.Namespace) -> int:
    """Run ``acidflow check``; returns the exit code (1 when a file is damaged)."""
    from acid_core.errors import StorageError
    from acid_core.fs import file_io_for

    checked, damaged, not_orc = 0, 0, []
    targets = args.paths or _metastore_locations(args)
    for given in targets:
        file_io, path = file_io_for(given)
        info = file_io.info(path)
        if info is None and not args.paths:
            continue  # a table nothing was written to yet
        if info is None:
            raise StorageError(f"Cannot check {given!r}: nothing is there; expected a file or a directory")
        files = [info] if not info.is_dir else [e for e in file_io.list_tree(path) if not e.is_dir]
        for entry in sorted(files, key=lambda e: e.path):
            if _hidden(entry.path, path if info.is_dir else entry.parent):
                continue
            columns = _shifted_columns(file_io, entry.path)
            if columns is None:
                not_orc.append(entry.path)
                continue
            checked += 1
            if columns:
                damaged += 1
                if args.json:
                    print(json.dumps({"path": entry.path, "columns": columns}))
                else:
                    print(f"damaged {entry.path}: {', '.join(columns)}")
    paths = len(targets)
    if args.json:
        print(json.dumps({"checked": checked, "damaged": damaged, "not_orc": not_orc}))
    else:
        suffix = f"; {len(not_orc)} other file(s) are not ORC" if not_orc else ""
        print(
            f"checked {checked} ORC file(s) under {paths} path{'s' if paths > 1 else ''}: "
            f"{damaged} damaged{suffix}"
        )
    return 1 if damaged else 0


def _metastore_locations(args: argparse.Namespace) -> list[str]:
    """Every table's location, and every partition's that is not below its table's."""
    metastore = open_existing_metastore(args)
    try:
        locations: list[str] = []
        for database in metastore.list_databases():
            for name in metastore.list_tables(database):
                table = metastore.get_table(f"{database}.{name}")
                root = table.location.rstrip("/")
                locations.append(root)
                locations.extend(
                    partition.location
                    for partition in (
                        metastore.list_partitions(table.full_name) if table.partition_keys else []
                    )
                    if not partition.location.startswith(root + "/")
                )
        return locations
    finally:
        metastore.close()


def _hidden(path: str, root: str) -> bool:
    """Whether a component below ``root`` starts with ``.`` or ``_`` (side files, staging, trash)."""
    relative = path[len(root) :].strip("/")
    return any(part.startswith((".", "_")) for part in relative.split("/"))


def _shifted_columns(file_io: FileIO, path: str) -> list[str] | None:
    """The shifted struct children of one file; None if it is not an ORC file."""
    from acid_core.orc.nested_nulls import shifted_struct_columns

    with file_io.open_input(path) as stream:
        return shifted_struct_columns(stream)
