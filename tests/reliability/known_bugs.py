"""Bugs of issue 11 being fixed on other branches: each flag steers the quick profile around one.

Every check stays in the code; a flag only avoids the sequence (or relaxes the one assertion) that
hits the bug, so the suite passes on this branch. Flip a flag to False once its fix is merged; the
soak must then pass with it off (each is named in the integrator's report with its reproduction).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from acid_core.metastore import CompactionState, CompactionType

if TYPE_CHECKING:
    from acid_core.metastore import Metastore

TABLE = "default.t"

KNOWN_BUG_LEASE_TXN_SNAPSHOT = False
"""A lease records only a ValidWriteIdList, not the transaction list of the moment it was taken.

A reader holding the lease reads with the write IDs *and* the txn list it had; the cleaner protects
only what the lease reads with today's txn list (and with the cleaned compaction's txn open). So
the files a lease's reader reads may be deleted when another compaction's ``_vT`` output, which
that reader cannot see, covers them: a second compaction under the lease, or an older compaction
cleaned after a newer one committed. Reproductions in ``test_known_bugs.py``; the long PostgreSQL
soaks (seeds 333393093, 222845642) hit the second case. With the flag on, the soak runs no
compaction under a live lease once one ran, nor while an older one is not cleaned
(``blocked_compaction``). Fixed by "snapshots" (leases as full snapshots, issue 11 part 2).
"""

KNOWN_BUG_DEAD_WORKER_LOCK_SESSION = False
"""A SIGKILLed ``acidflow compact`` leaves its SQL lock session (the partition's maintenance lock)
until the session times out (30 s): the next compaction of that table is refused meanwhile.
With the flag on, the final phase retries the major compaction until the session has expired;
off, the first ``acidflow compact`` after the kill must compact. Fixed by "crash" (issue 11 part 4).
"""

KNOWN_BUG_CLEANER_STUCK_MINOR_THEN_MAJOR = False
"""A minor then a major compaction with no clean in between: cleaning the minor one raises
NotEnoughHistoryError at every run (its capped snapshot is older than the major's base), so it
stays 'ready for cleaning' and nothing is deleted. With the flag on, the soak runs no major
compaction while a minor one is not cleaned, and the final phase cleans minors before its major;
off, nothing may be left 'ready for cleaning'. Fixed by "snapshots" (issue 11 part 3).
"""


def blocked_compaction(metastore: Metastore, kind: str, now: float | None = None) -> str | None:
    """Why a ``kind`` compaction of the soak table now would enter a sequence a flagged bug breaks.

    Returns:
        None when it may run; else the reason (the soak skips that compaction).
    """
    now = time.time() if now is None else now
    entries = metastore.show_compactions(TABLE)
    if KNOWN_BUG_CLEANER_STUCK_MINOR_THEN_MAJOR and kind == "major":
        waiting = [
            c.id
            for c in entries
            if c.compaction_type is CompactionType.MINOR
            and c.state in (CompactionState.WORKING, CompactionState.READY_FOR_CLEANING)
        ]
        if waiting:
            return f"minor compaction(s) {waiting} not cleaned yet (KNOWN_BUG_CLEANER_STUCK_MINOR_THEN_MAJOR)"
    if KNOWN_BUG_LEASE_TXN_SNAPSHOT:
        leases = [lease for lease in metastore.list_leases(TABLE) if lease.expires > now]
        if leases:
            oldest = min(lease.created for lease in leases)
            # Any compaction that had not committed before the lease was taken counts: its output
            # is invisible to the lease's txn list.
            ran = [
                c.id
                for c in entries
                if c.state is CompactionState.WORKING
                or (
                    c.state in (CompactionState.READY_FOR_CLEANING, CompactionState.SUCCEEDED)
                    and max(t for t in (c.start_time, c.commit_time, c.end_time, 0.0) if t is not None)
                    >= oldest
                )
            ]
            if ran:
                return f"compaction(s) {ran} already ran under a live lease (KNOWN_BUG_LEASE_TXN_SNAPSHOT)"
            # An older compaction not cleaned yet is cleaned after this one commits: its cleaning
            # then sees this one's output, which the lease's reader does not.
            uncleaned = [
                c.id
                for c in entries
                if c.state in (CompactionState.WORKING, CompactionState.READY_FOR_CLEANING)
            ]
            if uncleaned:
                return f"compaction(s) {uncleaned} not cleaned yet under a live lease (KNOWN_BUG_LEASE_TXN_SNAPSHOT)"
    return None
