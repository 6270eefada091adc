"""What ``acidflow`` adds on top of each command's parser: examples, ``--json``, shell completion.

::

    acidflow COMMAND --help            ends with "examples:" (EXAMPLES[command])
    acidflow read|sql|lock ... --json  the same as --format jsonl (one JSON object per line)
    acidflow completion bash|zsh|fish  prints the shell code that completes acidflow (argcomplete)
        eval "$(acidflow completion bash)"

``decorate(parser)`` walks the finished parser tree (subcommands and their subcommands) once;
the commands' own modules stay as they are.
Not here: what any command does. Errors: none (a command without examples gets none).
"""

from __future__ import annotations

import argparse
import sys
from typing import Final

__all__ = ["EXAMPLES", "add_completion_parser", "decorate", "run_completion"]

SHELLS: Final = ("bash", "zsh", "fish", "tcsh", "powershell")

EXAMPLES: Final[dict[str, str]] = {
    "state": """\
  acidflow state /warehouse/sales/orders/ds=2024-01-01
  acidflow state /warehouse/employee --write-ids 'default.employee:7:9223372036854775807::5' --json
  acidflow state hdfs://nn:8020/warehouse/web_events --compactor --write-ids 'default.web_events:9:6:6:'""",
    "read": """\
  acidflow read /warehouse/employee --format table
  acidflow read /warehouse/employee --row-id --limit 10 --json
  acidflow read /warehouse/web_events/ds=2024-01-01 --columns id,event --format csv""",
    "sql": """\
  acidflow sql --warehouse /tmp/wh "CREATE TABLE t (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
  acidflow sql --warehouse /tmp/wh "INSERT INTO t VALUES (1), (2)" "SELECT row__id, id FROM t" --json
  acidflow sql --warehouse /tmp/wh "ALTER TABLE t COMPACT 'major' AND WAIT"
  acidflow sql --warehouse /tmp/wh -f nightly.sql""",
    "initiate": """\
  acidflow initiate --dry-run                      # the backlog: what Hive's initiator would queue
  acidflow initiate --table sales.orders --json    # queue what is due in one table""",
    "compact": """\
  acidflow compact                                 # run everything queued (embedded or Spark by size)
  acidflow compact --table sales.orders --partition ds=2024-01-01 --type major --progress on
  acidflow compact --executor spark --spark-master yarn --max 4 --json""",
    "clean": """\
  acidflow clean --dry-run                         # what would be deleted, and what waits for readers
  acidflow clean --quarantine --retention 3600
  acidflow clean --restore sales.orders --compaction 12""",
    "lease": """\
  acidflow lease take sales.orders --ttl 3600 --json
  acidflow lease list --json
  acidflow lease renew 4 --ttl 3600
  acidflow lease release 4""",
    "lock": """\
  acidflow lock acquire sales.orders/ds=2024-01-01 --mode X --hold 30
  acidflow lock show --extended --json""",
    "completion": """\
  eval "$(acidflow completion bash)"               # in ~/.bashrc
  acidflow completion zsh > ~/.zfunc/_acidflow""",
}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _has_option(parser: argparse.ArgumentParser, option: str) -> argparse.Action | None:
    return next((a for a in parser._actions if option in a.option_strings), None)


def _add_json_alias(parser: argparse.ArgumentParser) -> None:
    if _has_option(parser, "--json") is not None:
        return
    fmt = _has_option(parser, "--format")
    if fmt is not None and fmt.choices is not None and "jsonl" in fmt.choices:
        parser.add_argument(
            "--json",
            dest=fmt.dest,
            action="store_const",
            const="jsonl",
            help="one JSON object per line (the same as --format jsonl)",
        )


def decorate(parser: argparse.ArgumentParser) -> None:
    """Add examples to every command's ``--help`` and ``--json`` where it has ``--format jsonl``."""
    for name, command in _subcommands(parser).items():
        if name in EXAMPLES:
            command.epilog = "examples:\n" + EXAMPLES[name]
            command.formatter_class = argparse.RawDescriptionHelpFormatter
        _add_json_alias(command)
        for child in _subcommands(command).values():
            _add_json_alias(child)


def add_completion_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``acidflow completion SHELL``."""
    parser = subparsers.add_parser(
        "completion",
        help="print the shell code that completes acidflow's commands and options",
        description="Print the completion script for SHELL (argcomplete); source it or eval it.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell")
    parser.set_defaults(handler=run_completion)


def run_completion(args: argparse.Namespace) -> int:
    """Print ``argcomplete``'s shell code for ``acidflow``."""
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["acidflow"], shell=args.shell))
    return 0


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer a shell's completion request (``_ARGCOMPLETE`` set) and exit; otherwise do nothing."""
    import os

    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser)
