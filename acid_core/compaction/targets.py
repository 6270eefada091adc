"""Check a manual compaction request against the catalog before anything is queued.

::

    check_compaction_target(metastore, "db.t", "p=1")   -> ("db.t", "p=1")
        table exists and is transactional; a partitioned table names an existing partition;
        an unpartitioned table names none

Hive's ``AlterTableCompactOperation`` refuses the same requests (``INVALID_PARTITION_SPEC``,
"You must specify a partition to compact for partitioned tables", "Compaction is not allowed on
non-ACID table"); ``TxnHandler.compact`` itself would queue anything.
Not here: queueing (``Metastore.enqueue_compaction``), running (``worker``).
Errors: ``InvalidCompactStatementError`` naming the request and the problem; nothing is queued.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acid_core.errors import InvalidCompactStatementError, NoSuchTableError
from acid_core.metastore.port import TableType

if TYPE_CHECKING:
    from acid_core.metastore.port import Metastore

__all__ = ["check_compaction_target"]

_SHOWN = 5  # how many known partitions an error message lists


def check_compaction_target(
    metastore: Metastore, table: str, partition: str | None
) -> tuple[str, str | None]:
    """The ``(full table name, partition name)`` of a valid manual compaction request.

    Args:
        metastore: the catalog.
        table: ``table`` or ``db.table``.
        partition: Hive's partition name ``k=v[/k2=v2]``, or None.

    Returns:
        The table's full name and the partition name as the catalog spells it.

    Raises:
        InvalidCompactStatementError: the table does not exist or is not transactional, or the
            partition is missing, unknown, or given for an unpartitioned table.
    """
    what = table if partition is None else f"{table} partition {partition}"
    try:
        found = metastore.get_table(table)
    except NoSuchTableError as error:
        raise InvalidCompactStatementError(what, f"table {table!r} does not exist") from error
    if found.table_type is TableType.PLAIN:
        raise InvalidCompactStatementError(what, f"table {found.full_name!r} is not transactional")
    if not found.partition_keys:
        if partition is not None:
            raise InvalidCompactStatementError(
                what, f"table {found.full_name!r} is not partitioned, yet partition {partition!r} was given"
            )
        return found.full_name, None
    names = sorted(p.name for p in metastore.list_partitions(found.full_name))
    if partition is None:
        raise InvalidCompactStatementError(
            what, f"table {found.full_name!r} is partitioned: name a partition (one of {names[:_SHOWN]})"
        )
    if partition not in names:
        raise InvalidCompactStatementError(
            what, f"partition {partition!r} of {found.full_name!r} does not exist (known: {names[:_SHOWN]})"
        )
    return found.full_name, partition
