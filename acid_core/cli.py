"""The ``acidflow`` command: argument parsing and output only, no logic.

::

    acidflow state TABLE_DIR [--write-ids LIST] [--txns LIST] [--compactor] [--json]
    acidflow read TABLE_DIR [--write-ids LIST] [--row-id] [--columns a,b] [--format ...] [--limit N]
    acidflow sql [--warehouse DIR] [--metastore URL] [--format ...] STATEMENT... | -f FILE
    acidflow initiate [--dry-run] | compact ... | clean [--dry-run]
    acidflow lease take TABLE [--ttl SECONDS] [--json] | release ID | list
    acidflow lock acquire OBJECT... --mode S|X [--hold S] [--retries N] [--wait S] | show
    acidflow completion bash|zsh|fish     shell completion (eval "$(acidflow completion bash)")

Each command's ``--help`` ends with examples; commands printing JSON lines take ``--json``
(``acid_core.cli_help``).

Every subcommand returns an exit code; an ``AcidError`` becomes one line on stderr
(``acidflow: error: ...``) and exit code 1, never a traceback. An ``OSError`` no subsystem
translated (a full disk, a read-only or missing directory) becomes one line naming the path and the
errno (``disk full``), exit 1; anything else one line with a hint. Usage errors are one line too,
exit 2. Log records print as one line each; ``--debug`` (or ``ACIDFLOW_DEBUG=1``) adds debug
records and tracebacks.
Not here: anything a library user would also need (that lives in ``acid_core``).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn, cast

from acid_core.cli_args import add_snapshot_arguments, resolve_target
from acid_core.cli_help import add_completion_parser, autocomplete, decorate
from acid_core.errors import AcidError

__all__ = ["DEBUG_ENV", "build_parser", "describe_os_error", "main"]

Handler = Callable[[argparse.Namespace], int]
DEBUG_ENV = "ACIDFLOW_DEBUG"
_LOG = logging.getLogger("acid_core.cli")


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (the usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.splitlines())}; see '{self.prog} --help'\n")


class _OneLineFormatter(logging.Formatter):
    """``acidflow: LEVEL: message`` on one line; the traceback only when debugging."""

    def __init__(self, *, debug: bool) -> None:
        super().__init__("acidflow: %(levelname)s: %(message)s")
        self._debug = debug

    def format(self, record: logging.LogRecord) -> str:
        if self._debug:
            return super().format(record)
        message = " ".join(record.getMessage().splitlines())
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message = f"{message}: {' '.join(str(error).splitlines()) or type(error).__name__}"
        return f"acidflow: {record.levelname.lower()}: {message}"


@contextlib.contextmanager
def _logging_to_stderr(*, debug: bool) -> Iterator[None]:
    # Installed for one run and restored after, so main() can run in-process (tests, embedding).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter(debug=debug))
    root = logging.getLogger()
    # kazoo logs every refused connection attempt, thrift every failed socket: the outcome
    # (reachable or not) is reported once, as LockServiceUnavailableError / HiveMetastoreUnavailableError.
    chatty = [logging.getLogger(name) for name in ("kazoo", "thrift")]
    saved = root.level, [logger.level for logger in chatty]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    if not debug:
        for logger in chatty:
            logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        for logger, level in zip(chatty, saved[1], strict=True):
            logger.setLevel(level)


_ERRNO_PROBLEMS = {
    errno.ENOSPC: "disk full (no space left on device)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "not a directory",
    errno.EISDIR: "is a directory",
}


def describe_os_error(error: OSError) -> str:
    """One line for an ``OSError``: the path, what went wrong (``disk full`` for ENOSPC), a hint.

    >>> import errno
    >>> describe_os_error(OSError(errno.ENOSPC, "No space left on device", "/wh/t"))
    "Disk error on '/wh/t': disk full (no space left on device); expected free space; hint: free space on that disk and rerun; nothing was committed"
    """
    problem = _ERRNO_PROBLEMS.get(error.errno or 0, error.strerror or str(error) or type(error).__name__)
    path = error.filename if error.filename is not None else "(no path)"
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"Disk error on {str(path)!r}: {problem}; expected free space; hint: free space on that disk "
            "and rerun; nothing was committed"
        )
    return (
        f"Filesystem error on {str(path)!r}: {problem}; expected an existing, writable path; "
        "hint: check the path and its permissions"
    )


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
    parser = _OneLineParser(
        prog="acidflow", description="Keep Apache Hive ACID tables healthy: state, compaction, cleaning."
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"log debug records and tracebacks (also ${DEBUG_ENV}=1)",
    )
    subparsers = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
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
    add_completion_parser(subparsers)
    decorate(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``acidflow`` command; returns the exit code."""
    parser = build_parser()
    autocomplete(parser)
    args = parser.parse_args(argv)
    debug = bool(args.debug) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    with _logging_to_stderr(debug=debug):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    handler: Handler = args.handler
    try:
        return handler(args)
    except AcidError as e:
        _LOG.debug("traceback", exc_info=True)
        _print_error(str(e))
    except OSError as e:
        _LOG.debug("traceback", exc_info=True)
        _print_error(describe_os_error(e))
    except Exception as e:
        # The last line of defence: no traceback reaches a user (it is logged at debug level).
        _LOG.debug("traceback", exc_info=True)
        _print_error(
            f"unexpected {type(e).__name__}: {e}; hint: rerun with --debug for the traceback and report it"
        )
    return 1


def _print_error(message: str) -> None:
    # One line; spaces inside quoted values stay as they are.
    print(f"acidflow: error: {' '.join(message.splitlines())}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
