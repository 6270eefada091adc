"""A lock client run in its own process (or thread) by the lock contract tests.

    python lock_worker.py hold SPEC OBJECT MODE SESSION_TIMEOUT
        acquire, print "ACQUIRED", then sleep until killed (the kill -9 test)
    python lock_worker.py workload SPEC SEED OPS RETRIES WAIT
        a random workload; one JSON line per event on stdout

SPEC is JSON: ``{"kind": "zookeeper", "hosts": ..., "root": ...}`` or ``{"kind": "sql", "url": ...}``.

Timestamps come from ``time.monotonic()``: CLOCK_MONOTONIC on Linux is one clock for every
process of the machine, so the observer can compare events of different processes. A worker logs
"acquired" *after* ``acquire`` returned and "release" *before* calling ``release``, so each logged
interval lies inside the real holding interval: overlapping logged intervals prove a real overlap.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import TYPE_CHECKING

from acid_core.errors import LockRefusedError
from acid_core.locks import LockManager, LockRequest, parse_lock_mode, parse_lock_object

if TYPE_CHECKING:
    from collections.abc import Callable

UNIVERSE = ["db.t", "db.t/p=1", "db.t/p=2", "db.t/p=1/q=1", "db.u", "db.u/p=1"]


def run_workload(
    manager: LockManager,
    *,
    worker: int,
    seed: int,
    ops: int,
    retries: int,
    wait_seconds: float,
    log: Callable[[dict[str, object]], None],
) -> None:
    rng = random.Random(seed)
    for op in range(ops):
        picked = rng.sample(UNIVERSE, rng.randint(1, 2))
        wanted = [(name, rng.choice(["S", "S", "X"])) for name in picked]
        requests = [LockRequest(parse_lock_object(n), parse_lock_mode(m)) for n, m in wanted]
        started = time.monotonic()
        try:
            handle = manager.acquire(
                requests, holder=f"w{worker}-{op}", retries=retries, wait_seconds=wait_seconds
            )
        except LockRefusedError as e:
            log(
                {
                    "event": "refused",
                    "worker": worker,
                    "op": op,
                    "attempts": e.attempts,
                    "t": time.monotonic(),
                }
            )
            continue
        acquired = time.monotonic()
        log(
            {
                "event": "acquired",
                "worker": worker,
                "op": op,
                "locks": wanted,
                "t": acquired,
                "asked": started,
            }
        )
        time.sleep(rng.uniform(0.002, 0.02))
        log({"event": "release", "worker": worker, "op": op, "t": time.monotonic()})
        manager.release(handle)


def open_manager(spec: str, session_timeout: float = 10.0) -> LockManager:
    """``{"kind": "zookeeper", "hosts", "root"}`` or ``{"kind": "sql", "url"}`` as JSON."""
    config = json.loads(spec)
    if config["kind"] == "zookeeper":
        from acid_core.locks.zookeeper import KazooLockManager

        return KazooLockManager(config["hosts"], root=config["root"], session_timeout=session_timeout)
    from acid_core.locks.sql import SqlLockManager

    return SqlLockManager(config["url"], session_timeout=session_timeout)


def main(argv: list[str]) -> int:
    command, spec, *rest = argv
    if command == "hold":
        obj, mode, session_timeout = rest
        manager = open_manager(spec, float(session_timeout))
        manager.acquire(
            [LockRequest(parse_lock_object(obj), parse_lock_mode(mode))], holder="doomed", retries=0
        )
        print("ACQUIRED", flush=True)
        time.sleep(600)
        return 0
    if command == "workload":
        seed, ops, retries, wait = rest
        manager = open_manager(spec)

        def log(event: dict[str, object]) -> None:
            print(json.dumps(event), flush=True)

        run_workload(
            manager,
            worker=int(seed),
            seed=int(seed),
            ops=int(ops),
            retries=int(retries),
            wait_seconds=float(wait),
            log=log,
        )
        manager.close()
        print(json.dumps({"event": "done", "worker": int(seed)}), flush=True)
        return 0
    print(f"unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
