"""The ``acidflow`` commands: which module implements each, its one-line help and its examples.

::

    COMMANDS["compact"] = Command("acid_core.cli.compact", "run queued compactions ...")
    acidflow COMMAND --help            ends with "examples:" (EXAMPLES[command])
    acidflow read|sql|lock ... --json  the same as --format jsonl (one JSON object per line)

Only the selected command's module is imported (``acid_core.cli.app``): this module holds what
``acidflow --help`` shows for all of them, so listing the commands imports none.
Each command module has ``add_parser(subparsers)`` (which calls ``add_command_parser``) and a
handler set with ``set_defaults(handler=...)``.
Not here: what any command does. Errors: none.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Final

__all__ = ["COMMANDS", "EXAMPLES", "Command", "add_command_parser", "add_json_alias", "subcommands"]


@dataclass(frozen=True, slots=True)
class Command:
    """One ``acidflow`` command: the module with its ``add_parser`` and its one-line help."""

    module: str
    summary: str


COMMANDS: Final[dict[str, Command]] = {
    "state": Command(
        "acid_core.cli.state",
        "show which base, deltas and original files a reader merges, and what is obsolete",
    ),
    "read": Command(
        "acid_core.cli.read",
        "print the rows a snapshot sees (merge-on-read of base, deltas and delete deltas)",
    ),
    "sql": Command(
        "acid_core.cli.sql", "run Hive SQL statements (CREATE/INSERT/UPDATE/DELETE/MERGE/SELECT/SHOW ...)"
    ),
    "initiate": Command(
        "acid_core.cli.initiate",
        "decide which tables/partitions need compaction (Hive's Initiator) and queue them",
    ),
    "compact": Command(
        "acid_core.cli.compact", "run queued compactions (recovering those whose worker died)"
    ),
    "clean": Command(
        "acid_core.cli.clean", "delete directories made obsolete by compactions, once no reader needs them"
    ),
    "lease": Command(
        "acid_core.cli.lease", "register or release an external reader's snapshot (the cleaner honours it)"
    ),
    "lock": Command(
        "acid_core.cli.lock", "acquire or list table/partition locks (ZooKeeper or the metastore)"
    ),
    "check": Command(
        "acid_core.cli.check",
        "find ORC files whose struct values were written shifted (pyarrow's writer, before the fix)",
    ),
    "completion": Command(
        "acid_core.cli.completion", "print the shell code that completes acidflow's commands and options"
    ),
}

EXAMPLES: Final[dict[str, str]] = {
    "state": """\
  acidflow state /warehouse/sales/orders/ds=2024-01-01
  acidflow state /warehouse/employee --write-ids 'default.employee:7:9223372036854775807::5' --json
  acidflow state hdfs://nn:8020/warehouse/web_events --compactor --write-ids 'default.web_events:9:6:6:'
  acidflow state sales.orders --partition ds=2024-01-01 --metastore thrift://hms:9083""",
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
    "check": """\
  acidflow check /warehouse/sales/customers        # a table: every ORC file below it
  acidflow check s3://bucket/warehouse --json      # a whole warehouse, one JSON object per damaged file""",
    "completion": """\
  eval "$(acidflow completion bash)"               # in ~/.bashrc
  acidflow completion zsh > ~/.zfunc/_acidflow""",
}


def add_command_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str, *, description: str
) -> argparse.ArgumentParser:
    """Add command ``name`` with its registered one-line help and its examples after the options."""
    return subparsers.add_parser(
        name,
        help=COMMANDS[name].summary,
        description=description,
        epilog="examples:\n" + EXAMPLES[name],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of ``parser`` by name (empty when it has none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _has_option(parser: argparse.ArgumentParser, option: str) -> argparse.Action | None:
    return next((a for a in parser._actions if option in a.option_strings), None)


def add_json_alias(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` (= ``--format jsonl``) to ``parser`` and its subcommands that have that format."""
    for command in (parser, *subcommands(parser).values()):
        if _has_option(command, "--json") is not None:
            continue
        fmt = _has_option(command, "--format")
        if fmt is not None and fmt.choices is not None and "jsonl" in fmt.choices:
            command.add_argument(
                "--json",
                dest=fmt.dest,
                action="store_const",
                const="jsonl",
                help="one JSON object per line (the same as --format jsonl)",
            )
