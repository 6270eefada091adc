"""``acidflow clean``: delete what compactions made obsolete, once no reader needs it (Hive's Cleaner).

::

    acidflow clean [--dry-run] [--quarantine] [--retention SECONDS] [--metastore URL] [--warehouse DIR] [--json]
    acidflow clean --purge-trash TABLE [--older-than SECONDS]    only inside TABLE's trash
    acidflow clean --restore TABLE --compaction ID              only back into TABLE's locations

The cleaner waits for transactions older than the compaction's commit and for reader leases,
and keeps a ledger of what it deleted or quarantined. A ledger row of ``--purge-trash`` /
``--restore`` that points outside what the table owns is named on stderr and skipped, and the
command exits 1.
Not here: the rules and the deleting (``compaction.cleaner``).
Errors: an ``AcidError`` propagates to ``app.main`` (one line on stderr, exit 1); a failed or
retrying clean makes the exit status 1.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from acid_core.cli.argtypes import non_negative_number, positive_long
from acid_core.cli.options import add_common_options, note_nothing, open_existing_metastore
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    import argparse

    from acid_core.compaction.cleaner import PathAction

__all__ = ["add_parser", "run_clean"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow clean`` (handler ``run_clean``)."""
    clean = add_command_parser(
        subparsers,
        "clean",
        description="Hive's Cleaner: waits for older transactions and reader leases; keeps a ledger.",
    )
    add_common_options(clean)
    clean.add_argument("--dry-run", action="store_true", help="list what would be deleted; change nothing")
    clean.add_argument(
        "--quarantine", action="store_true", help="move into the table's trash instead of deleting"
    )
    clean.add_argument(
        "--retention",
        type=non_negative_number("value"),
        default=0.0,
        metavar="SECONDS",
        help="wait after commit",
    )
    clean.add_argument(
        "--purge-trash", default=None, metavar="TABLE", help="purge TABLE's quarantined directories"
    )
    clean.add_argument(
        "--older-than",
        type=non_negative_number("value"),
        default=0.0,
        metavar="SECONDS",
        help="with --purge-trash",
    )
    clean.add_argument(
        "--restore", default=None, metavar="TABLE", help="restore TABLE's quarantined directories"
    )
    clean.add_argument(
        "--compaction", type=positive_long("value"), default=None, metavar="ID", help="with --restore"
    )
    clean.set_defaults(handler=run_clean)
    return clean


def run_clean(args: argparse.Namespace) -> int:
    """``acidflow clean``: clean ready compactions, or purge / restore a table's trash; exit 1 if any failed."""
    from acid_core.compaction.cleaner import (
        CleanerOptions,
        purge_trash,
        restore_from_trash,
        run_cleaner,
        waiting_to_clean,
    )

    skipped: list[str] = []

    def report(action: PathAction, why: str) -> None:
        # A ledger row is input, not trust: one pointing elsewhere is named, skipped, and fails the run.
        skipped.append(action.path)
        print(
            f"acidflow clean: skipped ledger row of compaction {action.compaction_id}: {why}", file=sys.stderr
        )

    with open_existing_metastore(args) as metastore:
        if args.purge_trash is not None:
            location = metastore.get_table(args.purge_trash).location
            for path in purge_trash(location, args.older_than, on_skip=report):
                print(json.dumps({"purged": path}) if args.json else f"purged {path}")
            return 1 if skipped else 0
        if args.restore is not None:
            if args.compaction is None:
                print("acidflow clean: error: --restore needs --compaction ID", file=sys.stderr)
                return 2
            table = metastore.get_table(args.restore)
            partitions = [p.location for p in metastore.list_partitions(table.full_name)]
            for path in restore_from_trash(
                table.location, args.compaction, partition_locations=partitions, on_skip=report
            ):
                print(json.dumps({"restored": path}) if args.json else f"restored {path}")
            return 1 if skipped else 0
        options = CleanerOptions(
            retention_seconds=args.retention, dry_run=args.dry_run, quarantine=args.quarantine
        )
        results = run_cleaner(metastore, options)
        # Entries 'ready for cleaning' that this run left alone: say why (Hive's cleaner is silent).
        results += waiting_to_clean(metastore, (r.compaction_id for r in results), options)
    if not results:
        note_nothing(args, "nothing to clean (no compaction is ready for cleaning)")
    for result in results:
        if args.json:
            actions = [{"path": a.path, "reason": a.reason, "action": a.action} for a in result.actions]
            print(
                json.dumps(
                    {
                        "compaction_id": result.compaction_id,
                        "status": result.status,
                        "message": result.message,
                        "actions": actions,
                    }
                )
            )
            continue
        print(f"compaction {result.compaction_id}: {result.status}: {result.message}")
        for action in result.actions:
            print(f"  {action.action}\t{action.reason}\t{action.path}")
    return 1 if any(result.status in ("failed", "retrying") for result in results) else 0
