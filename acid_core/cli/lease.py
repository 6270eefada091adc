"""``acidflow lease``: register, release and list reader leases (external readers' snapshots).

::

    acidflow lease take TABLE [--ttl SECONDS] [--owner NAME] [--json]   prints {"lease_id", "write_ids", "txns"}
    acidflow lease renew ID [--ttl SECONDS] [--json]                      heartbeat (HMS) and extend
    acidflow lease release ID
    acidflow lease list [TABLE] [--json]                                 one JSON object per line

    $ acidflow lease take db.t --json
    {"lease_id": 7, "write_ids": "db.t:3:9223372036854775807::", "txns": "5:9223372036854775807::"}
    $ acidflow read /warehouse/db.db/t --lease 7        # exactly that snapshot, later compactions or not

Every action takes ``--metastore URL`` (default ``$ACIDFLOW_METASTORE``, else the embedded SQLite
file of the warehouse) and ``--warehouse DIR`` (default ``$ACIDFLOW_WAREHOUSE``, else
``./warehouse``). ``take`` registers the table's current snapshot, its ValidWriteIdList and the
ValidTxnList of the same moment (Hive's string formats), for ``--ttl`` seconds (default 3600): the
cleaner keeps every file that snapshot reads, however many compactions run meanwhile, until the
lease is released or expires. A reader passes both lists to its ACID reader (``--write-ids`` and
``--txns``, or ``--lease ID``, of ``acidflow read``). ``renew`` moves the expiry to ``--ttl`` seconds
from now; on a Hive Metastore a lease is an open HMS transaction, which the HMS aborts when it is not
heartbeated within ``hive.txn.timeout`` (300 s by default), so its holder runs ``renew`` more often
than that (see ``acid_core.metastore.hive.leases``).

Not here: the lease rules (``SqlMetastore.take_lease``).
Errors: an ``AcidError`` propagates to ``acid_core.cli.app.main`` (one line on stderr, exit 1), e.g.
``NoSuchTableError`` or ``NoSuchLeaseError``.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from acid_core.cli.argtypes import positive_long, positive_seconds
from acid_core.cli.options import add_common_options, note_nothing, open_existing_metastore
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    from acid_core.metastore.port import Lease

__all__ = ["DEFAULT_LEASE_TTL_SECONDS", "add_parser", "run_lease"]

DEFAULT_LEASE_TTL_SECONDS = 3600.0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``lease take``, ``lease renew``, ``lease release`` and ``lease list`` (handler ``run_lease``)."""
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(common, json_help=None)
    parser = add_command_parser(
        subparsers,
        "lease",
        description="Reader leases: a snapshot of a table that the cleaner keeps readable until it expires.",
    )
    actions = parser.add_subparsers(dest="lease_command", required=True, metavar="ACTION")
    take = actions.add_parser("take", parents=[common], help="register the current snapshot of TABLE")
    take.add_argument("table", metavar="TABLE", help="table or db.table")
    take.add_argument(
        "--ttl",
        type=positive_seconds("TTL", finite=False),  # the metastore refuses an infinite TTL
        default=DEFAULT_LEASE_TTL_SECONDS,
        metavar="SECONDS",
        help=f"lifetime in seconds (default {DEFAULT_LEASE_TTL_SECONDS:g})",
    )
    take.add_argument("--owner", default=None, help="who holds it (default: user@host)")
    take.add_argument("--json", action="store_true", help='print {"lease_id", "write_ids", "txns"}')
    renew = actions.add_parser(
        "renew", parents=[common], help="keep a lease for --ttl more seconds (heartbeats it on an HMS)"
    )
    renew.add_argument("lease_id", metavar="ID", type=positive_long("lease ID"))
    renew.add_argument(
        "--ttl",
        type=positive_seconds("TTL", finite=False),
        default=DEFAULT_LEASE_TTL_SECONDS,
        metavar="SECONDS",
        help=f"new lifetime from now, in seconds (default {DEFAULT_LEASE_TTL_SECONDS:g})",
    )
    renew.add_argument("--json", action="store_true", help='print {"lease_id", "expires"}')
    release = actions.add_parser("release", parents=[common], help="drop a lease")
    release.add_argument("--json", action="store_true", help='print {"lease_id", "released"}')
    release.add_argument("lease_id", metavar="ID", type=positive_long("lease ID"))
    listing = actions.add_parser("list", parents=[common], help="list leases")
    listing.add_argument("table", metavar="TABLE", nargs="?", default=None, help="only this table")
    listing.add_argument("--json", action="store_true", help="one JSON object per lease")
    parser.set_defaults(handler=run_lease)
    return parser


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="seconds")


def _snapshot_fields(lease: Lease) -> dict[str, object]:
    # "txns" is null only for a lease taken before metastore revision 0003.
    return {
        "lease_id": lease.lease_id,
        "write_ids": lease.write_ids.to_string(),
        "txns": None if lease.txns is None else lease.txns.to_string(),
    }


def run_lease(args: argparse.Namespace) -> int:
    """Run one ``lease`` action; returns the exit code."""
    # sqlalchemy and alembic load only when a lease command actually runs.
    with open_existing_metastore(args) as store:
        if args.lease_command == "take":
            taken = store.take_lease(args.table, args.ttl, owner=args.owner)
            if args.json:
                print(json.dumps(_snapshot_fields(taken)))
            else:
                fields = _snapshot_fields(taken)
                print(
                    f"lease {taken.lease_id} on {taken.table}: write IDs {fields['write_ids']} "
                    f"txns {fields['txns']} ({args.ttl:g} s)"
                )
            return 0
        if args.lease_command == "renew":
            renewed = store.renew_lease(args.lease_id, args.ttl)
            if args.json:
                print(json.dumps({"lease_id": renewed.lease_id, "expires": _iso(renewed.expires)}))
            else:
                print(f"renewed lease {renewed.lease_id} until {_iso(renewed.expires)}")
            return 0
        if args.lease_command == "release":
            store.release_lease(args.lease_id)
            if args.json:
                print(json.dumps({"lease_id": args.lease_id, "released": True}))
            else:
                print(f"released lease {args.lease_id}")
            return 0
        leases = store.list_leases(args.table)
        if not leases:
            note_nothing(args, "no reader lease")
        for lease in leases:
            if args.json:
                row = {
                    **_snapshot_fields(lease),
                    "table": lease.table,
                    "owner": lease.owner,
                    "created": _iso(lease.created),
                    "expires": _iso(lease.expires),
                }
                print(json.dumps(row))
            else:
                print(
                    f"{lease.lease_id}\t{lease.table}\t{lease.write_ids.to_string()}\t{lease.owner}\t"
                    f"expires {_iso(lease.expires)}"
                )
        return 0
