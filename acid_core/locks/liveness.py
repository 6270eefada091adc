"""Who holds a lock, and whether that owner is still alive: host names and local process liveness.

::

    default_host()                                  this machine, recorded with each lock
    is_dead_local_process(host, pid, started=...)   True only for an ended process of this host

Used by the lock adapters (dead-owner sessions) and the compaction worker (dead local workers,
Hive's ``CompactionTxnHandler.revokeFromLocalWorkers``). Linux ``/proc`` tells zombies and reused
process IDs apart; elsewhere only ``kill(pid, 0)`` is asked.
Not here: what is done about a dead owner. Errors: none (unknown means alive).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def default_host() -> str:
    """This machine's host name, recorded with each lock."""
    return socket.gethostname()


def _process_start_epoch(pid: int) -> float | None:
    """When process ``pid`` started (epoch seconds, Linux ``/proc``); None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        ticks = float(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime, after "pid (comm)"
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def is_dead_local_process(
    host: str, pid: int | None, *, started: float | None = None, local_host: str | None = None
) -> bool:
    """Whether the owner ``pid`` on ``host`` is certainly gone: a process of this host that has ended.

    Dead-owner detection for lock sessions and compaction workers (Hive reverts the compactions of
    dead local workers, ``CompactionTxnHandler.revokeFromLocalWorkers``). Only an owner on this
    host can be checked; any other owner is *not* dead here (it expires by heartbeat timeout). A
    zombie (killed, not yet reaped by its parent) is dead; so is a process ID that was reused by a
    process started after ``started`` (the owner's registration time, epoch seconds).

    Args:
        host: the owner's host name as recorded.
        pid: the owner's process ID (None: unknown, so not dead).
        started: when the owner registered (epoch seconds), to detect a reused process ID.
        local_host: this host's name (default ``default_host()``).

    Returns:
        True only when the owner is certainly dead.
    """
    if pid is None or pid <= 0 or host != (local_host or default_host()):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # someone else's live process
    if _is_zombie(pid):
        return True
    if started is not None:
        process_started = _process_start_epoch(pid)
        # 2 s of slack: boot time and clock ticks are coarse; a reused PID starts much later.
        if process_started is not None and process_started > started + 2.0:
            return True
    return False
