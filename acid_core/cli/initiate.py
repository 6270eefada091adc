"""``acidflow initiate``: the backlog, one initiator decision per table/partition, and queue what is due.

::

    acidflow initiate [--dry-run] [--table T ...] [--lookback-seconds S] [--metastore URL]
                      [--warehouse DIR] [--json]

    one line per table/partition listed: TYPE<tab>REASON<tab>MESSAGE[ (queued as compaction N)]

Unless ``--dry-run``, a partition with no write, abort or compaction since the table's previous
cycle (and no change of its settings) is not listed and gets no line, as in Hive's Initiator; a
dry run lists everything. A person at a terminal gets one line on stderr with the count.

The decisions are Hive's ``Initiator`` rules (``compaction.initiator``); without ``--dry-run``
each due compaction is queued, as Hive's initiator does. ``--json``: one object per decision,
with ``compaction_id`` (null when nothing was queued).
Not here: the rules. Errors: ``AcidError`` propagates to ``app.main`` (one line, exit 1).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from acid_core.cli.argtypes import non_negative_number
from acid_core.cli.options import add_common_options, note_nothing, open_existing_metastore
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run_initiate"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow initiate`` (handler ``run_initiate``)."""
    parser = add_command_parser(
        subparsers,
        "initiate",
        description="Print the backlog: the initiator's decision, reason and numbers per table and partition.",
    )
    add_common_options(parser)
    parser.add_argument("--dry-run", action="store_true", help="decide only; queue nothing")
    parser.add_argument("--table", action="append", default=None, metavar="TABLE", help="only these tables")
    parser.add_argument(
        "--lookback-seconds",
        type=non_negative_number("value"),
        default=None,
        metavar="S",
        help="a change this long before the previous cycle still counts as new (default 300: "
        "writers' clock skew)",
    )
    parser.set_defaults(handler=run_initiate)
    return parser


def run_initiate(args: argparse.Namespace) -> int:
    """``acidflow initiate``: print the backlog (and queue compactions unless ``--dry-run``)."""
    from acid_core.compaction.backlog import InitiatorStats, iter_initiator
    from acid_core.compaction.initiator import INITIATOR_LOOKBACK_SECONDS

    lookback = INITIATOR_LOOKBACK_SECONDS if args.lookback_seconds is None else args.lookback_seconds
    stats = InitiatorStats()
    # Streamed: a line per partition as it is decided, whatever the size of the warehouse.
    with open_existing_metastore(args) as metastore:
        printed = 0
        for entry in iter_initiator(
            metastore, dry_run=args.dry_run, tables=args.table, stats=stats, lookback_seconds=lookback
        ):
            printed += 1
            decision = entry.decision
            if args.json:
                print(json.dumps({**decision.to_json_dict(), "compaction_id": entry.compaction_id}))
                continue
            what = decision.compaction_type.value if decision.compaction_type else "none"
            queued = (
                f" (queued as compaction {entry.compaction_id})" if entry.compaction_id is not None else ""
            )
            print(f"{what}\t{decision.reason.value}\t{decision.message}{queued}")
    if stats.skipped:
        note_nothing(args, f"{stats.skipped} partitions unchanged since their table's last cycle, not listed")
    elif not printed:
        note_nothing(args, "no ACID table to consider")
    return 0
