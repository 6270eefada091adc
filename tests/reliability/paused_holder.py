"""A writer in its own process for the paused-holder test (``test_zookeeper_faults.py``).

    python -m tests.reliability.paused_holder HOSTS WAREHOUSE METASTORE_URL

Begins a transaction, takes X on ``default.t`` in ZooKeeper, inserts the row 2, prints one JSON
line ``{"session", "password", "txn"}``, then waits for a line on stdin and commits: prints
``COMMITTED`` or ``LOST <the one-line error>``. The test pauses it (SIGSTOP) between the two.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa

from acid_core.errors import LockLostError
from acid_core.locks import LockMode, LockRequest
from acid_core.locks.port import parse_lock_object
from acid_core.locks.zookeeper import KazooLockManager
from acid_core.metastore import SqlMetastore
from acid_core.writes import Warehouse


def main(argv: list[str]) -> int:
    hosts, root, url = argv
    manager = KazooLockManager(hosts, session_timeout=4.0, host="paused")
    wh = Warehouse(root, SqlMetastore(url, warehouse=root), manager, user="paused", heartbeat_seconds=None)
    txn = wh.transaction().begin()
    txn.acquire_locks([LockRequest(parse_lock_object("default.t"), LockMode.EXCLUSIVE)])
    txn.insert("t", pa.table({"id": pa.array([2], pa.int32())}))
    session, password = manager.client_id
    print(json.dumps({"session": session, "password": password.hex(), "txn": txn.txn_id}), flush=True)
    sys.stdin.readline()
    try:
        txn.commit()
    except LockLostError as error:
        print(f"LOST {error}", flush=True)
    else:
        print("COMMITTED", flush=True)
    wh.close()
    manager.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
