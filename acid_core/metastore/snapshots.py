"""Which snapshot a reader of a table directory uses: the metastore's current one, or a lease's.

::

    acidflow read /wh/db.db/t                 metastore found?  -> the table's current snapshot
                                                                   (read-only txn: aborted and open
                                                                   writes invisible, the cleaner waits)
    acidflow read /wh/db.db/t --lease 7       lease 7's full snapshot (write IDs + txns), exactly
    acidflow read /wh/db.db/t --write-ids ... explicit lists: no metastore involved

    the metastore of a directory:  --metastore URL > $ACIDFLOW_METASTORE
                                   > the nearest ancestor holding .acidflow/metastore.sqlite
                                   > --warehouse / $ACIDFLOW_WAREHOUSE, if its SQLite file exists

Invariants: nothing here creates a metastore file; a directory is matched to a table or partition
by its normalized location (absolute, no trailing ``/``, ``file://`` stripped).
Not here: reading files (``orc.reader``), the command line (``acid_core.cli.read``).
Errors: ``UnknownTableLocationError`` (no table or partition of the metastore is there),
``NoSuchLeaseError`` (a lease that is gone or expired), ``InvalidMetastoreRequestError`` (a lease
of another table, or one taken before revision 0003, which stored no transaction list).
"""

from __future__ import annotations

import os
import posixpath
import time
from typing import TYPE_CHECKING

from acid_core.errors import InvalidMetastoreRequestError, NoSuchLeaseError, UnknownTableLocationError
from acid_core.metastore.port import METASTORE_DIR_NAME

if TYPE_CHECKING:
    from acid_core.metastore.port import Lease, Metastore, Partition, Table

__all__ = [
    "METASTORE_FILE_NAME",
    "find_embedded_metastore",
    "live_lease",
    "locate_table",
    "normalize_location",
]

METASTORE_FILE_NAME = "metastore.sqlite"


def normalize_location(location: str) -> str:
    """A location in one spelling: ``file://`` stripped, local paths absolute, no trailing ``/``.

    >>> normalize_location("file:///wh/t/")
    '/wh/t'
    >>> normalize_location("hdfs://nn:8020/wh/t/")
    'hdfs://nn:8020/wh/t'
    """
    if location.startswith("file://"):
        location = location[len("file://") :]
    if "://" not in location:
        return os.path.realpath(os.path.abspath(location))
    return location.rstrip("/")


def find_embedded_metastore(directory: str) -> str | None:
    """The SQLite URL of the embedded metastore in ``directory`` or its nearest ancestor, if any.

    Only local directories have one (a warehouse on HDFS or S3 uses ``--metastore``).
    """
    path = normalize_location(directory)
    if "://" in path:
        return None
    while True:
        candidate = os.path.join(path, METASTORE_DIR_NAME, METASTORE_FILE_NAME)
        if os.path.isfile(candidate):
            return f"sqlite:///{candidate}"
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def locate_table(metastore: Metastore, directory: str, where: str) -> tuple[Table, Partition | None]:
    """The table, and partition if any, whose location is ``directory``.

    Args:
        metastore: the metastore to search.
        directory: a table or partition directory.
        where: the metastore's name for messages (its URL).

    Raises:
        UnknownTableLocationError: no table or partition is there.
    """
    wanted = normalize_location(directory)
    for database in metastore.list_databases():
        for name in metastore.list_tables(database):
            table = metastore.get_table(f"{database}.{name}")
            root = normalize_location(table.location)
            if root == wanted:
                return table, None
            if not (wanted.startswith(root + "/") or posixpath.dirname(wanted) == root):
                continue
            for partition in metastore.list_partitions(table.full_name):
                if normalize_location(partition.location) == wanted:
                    return table, partition
    raise UnknownTableLocationError(directory, where)


def live_lease(
    metastore: Metastore, lease_id: int, table: str | None = None, now: float | None = None
) -> Lease:
    """A lease to read with: it exists, has not expired, has its txn list, and is on ``table``.

    Raises:
        NoSuchLeaseError: released, expired or never taken.
        InvalidMetastoreRequestError: taken on another table, or before metastore revision 0003.
    """
    lease = metastore.get_lease(lease_id)
    if lease.expires <= (time.time() if now is None else now):
        raise NoSuchLeaseError(lease_id)
    if table is not None and lease.table != table:
        raise InvalidMetastoreRequestError(
            "lease", lease_id, f"a lease on {table!r} (lease {lease_id} is on {lease.table!r})"
        )
    if lease.txns is None:
        raise InvalidMetastoreRequestError(
            "lease",
            lease_id,
            "a lease with a transaction list; it was taken before metastore revision 0003, "
            "take a new one with `acidflow lease take`",
        )
    return lease
