"""Plan the locks a statement takes (what EXPLAIN LOCKS prints). PURE.

The per-statement table of Hive's concurrency design (HIVE-1293), with ``T1.P1`` written
``db.t1/p=1`` and ``P.Q`` a two-level partition ``db.t2/p=1/q=2``::

    statement                                            locks (before the hierarchy is added)
    SELECT .. T1 partition P1                            S T1.P1
    INSERT INTO T2 partition P2 SELECT .. T1 part. P1    S T1.P1, X T2.P2
    INSERT INTO T2 partition P.Q SELECT .. T1 part. P1   S T1.P1, X T2.P.Q
    ALTER TABLE T1 RENAME / ADD COLUMNS / REPLACE
        COLUMNS / CHANGE COLUMN / CONCATENATE            X T1
    ALTER TABLE T1 ADD / DROP / TOUCH PARTITION P1       X T1.P1
    ALTER TABLE T1 SET SERDEPROPERTIES / SERDE /
        FILEFORMAT                                       S T1
    ALTER TABLE T1 SET TBLPROPERTIES                     X T1
    ALTER TABLE T1 PARTITION P1 CONCATENATE              X T1.P1
    ALTER TABLE T1 [PARTITION P1] SET LOCATION           X T1 [X T1.P1] (Hive's DDL_EXCLUSIVE
                                                         for ALTERLOCATION)
    DROP TABLE T1                                        X T1
    non-ACID write with dynamic partitions               X on the table, or on the known prefix
    INSERT / UPDATE / DELETE / MERGE on an ACID table    S on the target (DbTxnManager: MVCC
                                                         isolates writers; the S keeps DROP out)
    INSERT OVERWRITE on an ACID table                    X on the target (DbTxnManager's
                                                         exclusive lock for insert overwrite)
    compaction of T1.P1 (the worker)                     X T1.P1#maintenance

then ``plan_lock_set`` adds S on every parent (the table and each partition prefix; for the
maintenance object also the partition itself, so the partition cannot be dropped while it is
compacted, like Hive's Worker holding a shared lock), de-duplicates (X wins), and sorts.

Invariants: the output is sorted, one request per object, and closed under ``parents()``.
Not here: acquiring anything; parsing SQL (the SQL layer builds ``StatementLocks``).
Errors: ``InvalidLockRequestError`` for an inconsistent description (a partition-level ALTER
without a partition, UPDATE on a non-ACID table, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from acid_core.errors import InvalidLockRequestError
from acid_core.locks.port import LockMode, LockObject, LockRequest, plan_lock_set

__all__ = ["StatementKind", "StatementLocks", "plan_statement_locks"]


class StatementKind(StrEnum):
    """The statements whose locks the design defines."""

    SELECT = "select"
    INSERT = "insert"
    INSERT_OVERWRITE = "insert_overwrite"
    UPDATE = "update"
    DELETE = "delete"
    MERGE = "merge"
    ALTER_TABLE_RENAME = "alter_table_rename"
    ALTER_TABLE_ADD_COLUMNS = "alter_table_add_columns"
    ALTER_TABLE_REPLACE_COLUMNS = "alter_table_replace_columns"
    ALTER_TABLE_CHANGE_COLUMN = "alter_table_change_column"
    ALTER_TABLE_CONCATENATE = "alter_table_concatenate"
    ALTER_TABLE_ADD_PARTITION = "alter_table_add_partition"
    ALTER_TABLE_DROP_PARTITION = "alter_table_drop_partition"
    ALTER_TABLE_TOUCH = "alter_table_touch"
    ALTER_TABLE_SET_SERDEPROPERTIES = "alter_table_set_serdeproperties"
    ALTER_TABLE_SET_SERDE = "alter_table_set_serde"
    ALTER_TABLE_SET_FILEFORMAT = "alter_table_set_fileformat"
    ALTER_TABLE_SET_TBLPROPERTIES = "alter_table_set_tblproperties"
    ALTER_TABLE_SET_LOCATION = "alter_table_set_location"
    DROP_TABLE = "drop_table"
    COMPACT = "compact"


_WRITES = frozenset(
    {
        StatementKind.INSERT,
        StatementKind.INSERT_OVERWRITE,
        StatementKind.UPDATE,
        StatementKind.DELETE,
        StatementKind.MERGE,
    }
)
_ROW_LEVEL = frozenset({StatementKind.UPDATE, StatementKind.DELETE, StatementKind.MERGE})
# Table-level DDL that rewrites the table's metadata or files: X on the table only.
_TABLE_EXCLUSIVE = frozenset(
    {
        StatementKind.ALTER_TABLE_RENAME,
        StatementKind.ALTER_TABLE_ADD_COLUMNS,
        StatementKind.ALTER_TABLE_REPLACE_COLUMNS,
        StatementKind.ALTER_TABLE_CHANGE_COLUMN,
        StatementKind.ALTER_TABLE_SET_TBLPROPERTIES,
        StatementKind.DROP_TABLE,
    }
)
_PARTITION_EXCLUSIVE = frozenset(
    {
        StatementKind.ALTER_TABLE_ADD_PARTITION,
        StatementKind.ALTER_TABLE_DROP_PARTITION,
        StatementKind.ALTER_TABLE_TOUCH,
    }
)
# The design gives these only S on the table: they change how future reads decode files.
_SHARED_TARGET = frozenset(
    {
        StatementKind.ALTER_TABLE_SET_SERDEPROPERTIES,
        StatementKind.ALTER_TABLE_SET_SERDE,
        StatementKind.ALTER_TABLE_SET_FILEFORMAT,
    }
)


@dataclass(frozen=True, slots=True)
class StatementLocks:
    """What the lock planner needs to know about one statement (built by the SQL layer).

    Args:
        kind: the statement.
        target: the table or partition written or altered (None for SELECT). For a dynamic
            partition write it is the table or the known static prefix.
        sources: the tables and partitions read.
        is_acid: the target is a transactional (ACID) table.
        dynamic_partition: the written partitions are only known at run time.
    """

    kind: StatementKind
    target: LockObject | None = None
    sources: tuple[LockObject, ...] = ()
    is_acid: bool = False
    dynamic_partition: bool = False

    def describe(self) -> str:
        """A short text for error messages."""
        target = self.target.to_name() if self.target else "-"
        return f"{self.kind.value} target={target} sources={[s.to_name() for s in self.sources]}"


def _bad(statement: StatementLocks, problem: str, expected: str) -> InvalidLockRequestError:
    return InvalidLockRequestError(statement.describe(), problem, expected)


def _target_mode(statement: StatementLocks, target: LockObject) -> LockMode:
    kind = statement.kind
    if target.maintenance:
        raise _bad(statement, "the target is a maintenance object", "a table or partition")
    if kind in _WRITES:
        if kind in _ROW_LEVEL and not statement.is_acid:
            raise _bad(
                statement,
                f"{kind.value.upper()} on a table that is not transactional",
                "an ACID table (Hive refuses UPDATE/DELETE/MERGE on non-ACID tables)",
            )
        if statement.is_acid and kind is not StatementKind.INSERT_OVERWRITE:
            return LockMode.SHARED
        return LockMode.EXCLUSIVE
    if statement.dynamic_partition:
        raise _bad(statement, "dynamic partitions on a statement that writes no rows", "a write")
    if kind in _TABLE_EXCLUSIVE:
        if target.partition:
            raise _bad(statement, f"{kind.value} takes a table, not a partition", "db.table")
        return LockMode.EXCLUSIVE
    if kind in _PARTITION_EXCLUSIVE:
        if not target.partition:
            raise _bad(statement, f"{kind.value} needs a partition", "db.table/k=v")
        return LockMode.EXCLUSIVE
    if kind in (StatementKind.ALTER_TABLE_CONCATENATE, StatementKind.ALTER_TABLE_SET_LOCATION):
        return LockMode.EXCLUSIVE  # the table, or T1.P1 for ALTER TABLE T1 PARTITION P1 ..
    if kind in _SHARED_TARGET:
        return LockMode.SHARED
    raise _bad(statement, f"no lock rule for {kind.value}", "a statement kind with a rule")


def plan_statement_locks(statement: StatementLocks) -> list[LockRequest]:
    """Return the sorted, de-duplicated locks ``statement`` takes, hierarchy included.

    >>> from acid_core.locks import parse_lock_object
    >>> plan = plan_statement_locks(StatementLocks(
    ...     StatementKind.INSERT, target=parse_lock_object("db.t2/p=2"),
    ...     sources=(parse_lock_object("db.t1/p=1"),)))
    >>> [str(r) for r in plan]
    ['S db.t1', 'S db.t1/p=1', 'S db.t2', 'X db.t2/p=2']

    Raises:
        InvalidLockRequestError: the description is inconsistent.
    """
    kind = statement.kind
    requests = [LockRequest(source.data_object(), LockMode.SHARED) for source in statement.sources]
    if kind is StatementKind.SELECT:
        if statement.target is not None:
            raise _bad(statement, "SELECT with a target", "sources only")
        if not statement.sources:
            raise _bad(statement, "SELECT without sources", "at least one table or partition read")
        return plan_lock_set(requests)
    target = statement.target
    if target is None:
        raise _bad(statement, f"{kind.value} without a target", "the table or partition it changes")
    if kind is StatementKind.COMPACT:
        if statement.dynamic_partition or statement.sources:
            raise _bad(statement, "compaction with sources or dynamic partitions", "a target only")
        # Two workers on one partition conflict on the maintenance object; readers and ACID
        # writers only take S on the data objects, so compaction never blocks them.
        requests.append(LockRequest(target.data_object().maintenance_object(), LockMode.EXCLUSIVE))
        return plan_lock_set(requests)
    requests.append(LockRequest(target, _target_mode(statement, target)))
    return plan_lock_set(requests)
