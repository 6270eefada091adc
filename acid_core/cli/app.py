"""The ``acidflow`` command's top level: pick the command, parse, run it, turn errors into one line.

::

    acidflow [--debug] COMMAND ...     COMMAND from registry.COMMANDS, one module each in acid_core.cli
        state | read | sql | initiate | compact | clean | lease | lock | completion

Only the selected command's module is imported and its parser built; the others are listed with
their one-line help (``acidflow --help``). A shell's completion request builds them all.

Every subcommand returns an exit code; an ``AcidError`` becomes one line on stderr
(``acidflow: error: ...``) and exit code 1, never a traceback. An ``OSError`` no subsystem
translated (a full disk, a read-only or missing directory) becomes one line naming the path and the
errno (``disk full``), exit 1; anything else one line with a hint. Usage errors are one line too,
exit 2. Log records print as one line each; ``--debug`` (or ``ACIDFLOW_DEBUG=1``) adds debug
records and tracebacks. A command that logged an error record (an ``acidflow: error:`` line)
exits 1 even if it returned 0: a printed error always means a non-zero exit status.
Not here: anything a library user would also need (that lives in ``acid_core``).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NoReturn, cast

from acid_core.cli.registry import COMMANDS, add_json_alias
from acid_core.errors import AcidError

__all__ = ["DEBUG_ENV", "build_parser", "describe_os_error", "freeze_start_up", "main"]

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


class _CountingHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes records to stderr and counts those at ERROR or above (each is an ``acidflow: error:`` line)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.errors = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            self.errors += 1
        super().emit(record)


@contextlib.contextmanager
def _logging_to_stderr(*, debug: bool) -> Iterator[_CountingHandler]:
    # Installed for one run and restored after, so main() can run in-process (tests, embedding).
    handler = _CountingHandler()
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
        yield handler
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


def _selected_command(argv: Sequence[str]) -> str | None:
    # The first word that is not an option; the top-level parser has only flags (--debug, -h).
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``acidflow`` argument parser.

    Args:
        commands: the commands to build in full (their modules are imported); the others get a
            stub with their one-line help, enough for ``acidflow --help``. None: all of them.
    """
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
    full = set(COMMANDS) if commands is None else set(commands)
    for name, command in COMMANDS.items():
        if name not in full:
            subparsers.add_parser(name, help=command.summary)
            continue
        # Each command module imports its heavy dependencies (pyarrow, sqlalchemy, kazoo,
        # sqlglot) only when its handler runs; the module itself is imported only when selected.
        module = importlib.import_module(command.module)
        add_json_alias(module.add_parser(subparsers))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``acidflow`` command; returns the exit code.

    ``argv`` None means this process's own command line (the console script, ``python -m
    acid_core.cli``): the process is acidflow's alone and ends after this command, so a command may
    set process-wide policy (``args.own_process``: ``compact`` freezes the garbage collector after
    its start-up, ``freeze_start_up``). A caller that passes ``argv`` (tests, the soak, a library
    user) gets no such change to its interpreter.
    """
    words = sys.argv[1:] if argv is None else list(argv)
    if "_ARGCOMPLETE" in os.environ:
        # The shell asks for completions: every command's options are needed.
        from acid_core.cli.completion import autocomplete

        parser = build_parser()
        autocomplete(parser)
    else:
        selected = _selected_command(words)
        parser = build_parser([selected] if selected in COMMANDS else [])
    args = parser.parse_args(words)
    args.own_process = argv is None
    debug = bool(args.debug) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    with _logging_to_stderr(debug=debug) as handler:
        code = _run(args)
    # A printed ``acidflow: error:`` line means the run failed, whichever layer logged it.
    return 1 if code == 0 and handler.errors else code


def freeze_start_up(args: argparse.Namespace) -> None:
    """In acidflow's own process (``args.own_process``), move what the start-up made out of the GC's way.

    A command calls this once its heavy imports and set-up are done: the modules, classes and
    caches they made live until the process ends, so the cyclic garbage collector's full
    collections during the work (and at exit) need not walk them again (``gc.freeze``; collection
    stays on for what the work allocates). An in-process ``main(argv)`` caller is left alone:
    frozen objects are never collected.
    """
    if getattr(args, "own_process", False):
        gc.freeze()


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
