"""The per-statement lock table of HIVE-1293 (issue 5), one row per test case.

Expected rows are written by hand from the design's table plus its hierarchy rule ("locking a
partition in any mode also locks every parent in S"), never from the planner's output.
"""

from __future__ import annotations

import pytest

from acid_core.errors import InvalidLockRequestError
from acid_core.locks import parse_lock_object
from acid_core.locks.planner import StatementKind, StatementLocks, plan_statement_locks

K = StatementKind
T1 = "db.t1"
T1P1 = "db.t1/p=1"
T2 = "db.t2"
T2P2 = "db.t2/p=2"


def _obj(name: str):
    return parse_lock_object(name)


def _stmt(kind, target=None, sources=(), *, is_acid=False, dynamic=False) -> StatementLocks:
    return StatementLocks(
        kind,
        target=_obj(target) if target else None,
        sources=tuple(_obj(s) for s in sources),
        is_acid=is_acid,
        dynamic_partition=dynamic,
    )


# (id, statement, expected "MODE object" lines in order)
ROWS = [
    ("select-partition", _stmt(K.SELECT, sources=[T1P1]), ["S db.t1", "S db.t1/p=1"]),
    ("select-table", _stmt(K.SELECT, sources=[T1]), ["S db.t1"]),
    (
        "insert-partition-select-partition",
        _stmt(K.INSERT, T2P2, [T1P1]),
        ["S db.t1", "S db.t1/p=1", "S db.t2", "X db.t2/p=2"],
    ),
    (
        "insert-multilevel-partition",
        _stmt(K.INSERT, "db.t2/p=1/q=2", [T1P1]),
        ["S db.t1", "S db.t1/p=1", "S db.t2", "S db.t2/p=1", "X db.t2/p=1/q=2"],
    ),
    (
        "insert-three-levels",
        _stmt(K.INSERT, "db.t2/a=1/b=2/c=3", [T1]),
        ["S db.t1", "S db.t2", "S db.t2/a=1", "S db.t2/a=1/b=2", "X db.t2/a=1/b=2/c=3"],
    ),
    ("alter-rename", _stmt(K.ALTER_TABLE_RENAME, T1), ["X db.t1"]),
    ("alter-add-columns", _stmt(K.ALTER_TABLE_ADD_COLUMNS, T1), ["X db.t1"]),
    ("alter-replace-columns", _stmt(K.ALTER_TABLE_REPLACE_COLUMNS, T1), ["X db.t1"]),
    ("alter-change-column", _stmt(K.ALTER_TABLE_CHANGE_COLUMN, T1), ["X db.t1"]),
    ("alter-concatenate", _stmt(K.ALTER_TABLE_CONCATENATE, T1), ["X db.t1"]),
    ("alter-add-partition", _stmt(K.ALTER_TABLE_ADD_PARTITION, T1P1), ["S db.t1", "X db.t1/p=1"]),
    ("alter-drop-partition", _stmt(K.ALTER_TABLE_DROP_PARTITION, T1P1), ["S db.t1", "X db.t1/p=1"]),
    ("alter-touch-partition", _stmt(K.ALTER_TABLE_TOUCH, T1P1), ["S db.t1", "X db.t1/p=1"]),
    ("alter-set-serdeproperties", _stmt(K.ALTER_TABLE_SET_SERDEPROPERTIES, T1), ["S db.t1"]),
    ("alter-set-serde", _stmt(K.ALTER_TABLE_SET_SERDE, T1), ["S db.t1"]),
    ("alter-set-fileformat", _stmt(K.ALTER_TABLE_SET_FILEFORMAT, T1), ["S db.t1"]),
    ("alter-set-tblproperties", _stmt(K.ALTER_TABLE_SET_TBLPROPERTIES, T1), ["X db.t1"]),
    ("alter-partition-concatenate", _stmt(K.ALTER_TABLE_CONCATENATE, T1P1), ["S db.t1", "X db.t1/p=1"]),
    ("drop-table", _stmt(K.DROP_TABLE, T1), ["X db.t1"]),
    ("dynamic-partition-insert", _stmt(K.INSERT, T2, [T1], dynamic=True), ["S db.t1", "X db.t2"]),
    (
        "dynamic-partition-insert-known-prefix",
        _stmt(K.INSERT, "db.t2/p=1", [T1], dynamic=True),
        ["S db.t1", "S db.t2", "X db.t2/p=1"],
    ),
    (
        "insert-overwrite-non-acid",
        _stmt(K.INSERT_OVERWRITE, T2P2, [T1]),
        ["S db.t1", "S db.t2", "X db.t2/p=2"],
    ),
    (
        "acid-insert",
        _stmt(K.INSERT, T2P2, [T1P1], is_acid=True),
        ["S db.t1", "S db.t1/p=1", "S db.t2", "S db.t2/p=2"],
    ),
    ("acid-insert-dynamic", _stmt(K.INSERT, T2, [T1], is_acid=True, dynamic=True), ["S db.t1", "S db.t2"]),
    ("acid-update", _stmt(K.UPDATE, T2P2, is_acid=True), ["S db.t2", "S db.t2/p=2"]),
    ("acid-delete", _stmt(K.DELETE, T2, is_acid=True), ["S db.t2"]),
    ("acid-merge", _stmt(K.MERGE, T2, [T1P1], is_acid=True), ["S db.t1", "S db.t1/p=1", "S db.t2"]),
    ("acid-insert-overwrite", _stmt(K.INSERT_OVERWRITE, T2P2, is_acid=True), ["S db.t2", "X db.t2/p=2"]),
    (
        "compaction-partition",
        _stmt(K.COMPACT, T1P1, is_acid=True),
        ["S db.t1", "S db.t1/p=1", "X db.t1/p=1#maintenance"],
    ),
    ("compaction-table", _stmt(K.COMPACT, T1, is_acid=True), ["S db.t1", "X db.t1#maintenance"]),
    # X wins when one object is both read and written; the read source is a parent of the target.
    ("self-insert-x-wins", _stmt(K.INSERT, T2P2, [T2P2, T2]), ["S db.t2", "X db.t2/p=2"]),
    ("duplicate-sources", _stmt(K.SELECT, sources=[T1P1, T1P1, T1]), ["S db.t1", "S db.t1/p=1"]),
]


@pytest.mark.parametrize(("statement", "expected"), [(s, e) for _, s, e in ROWS], ids=[i for i, _, _ in ROWS])
def test_plan_statement_locks_matches_design_table(statement, expected):
    assert [str(r) for r in plan_statement_locks(statement)] == expected


def test_plan_statement_locks_two_compactions_of_one_partition_conflict_but_not_with_writers():
    first = plan_statement_locks(_stmt(K.COMPACT, T1P1, is_acid=True))
    writer = plan_statement_locks(_stmt(K.UPDATE, T1P1, is_acid=True))
    drop = plan_statement_locks(_stmt(K.ALTER_TABLE_DROP_PARTITION, T1P1))

    def conflicts(a, b):
        modes_a = {r.object: r.mode for r in a}
        return any(r.object in modes_a and "X" in (r.mode.letter, modes_a[r.object].letter) for r in b)

    assert conflicts(first, first)
    assert not conflicts(first, writer)
    assert conflicts(first, drop)


BAD = [
    ("select-without-sources", _stmt(K.SELECT), "SELECT without sources"),
    ("select-with-target", _stmt(K.SELECT, T1, [T1]), "SELECT with a target"),
    ("insert-without-target", _stmt(K.INSERT, sources=[T1]), "insert without a target"),
    ("update-non-acid", _stmt(K.UPDATE, T1), "UPDATE on a table that is not transactional"),
    ("add-partition-on-table", _stmt(K.ALTER_TABLE_ADD_PARTITION, T1), "needs a partition"),
    ("drop-table-on-partition", _stmt(K.DROP_TABLE, T1P1), "takes a table, not a partition"),
    ("dynamic-ddl", _stmt(K.ALTER_TABLE_RENAME, T1, dynamic=True), "dynamic partitions on a statement"),
]


@pytest.mark.parametrize(("statement", "match"), [(s, m) for _, s, m in BAD], ids=[i for i, _, _ in BAD])
def test_plan_statement_locks_inconsistent_description_raises(statement, match):
    with pytest.raises(InvalidLockRequestError, match=match):
        plan_statement_locks(statement)


def test_plan_statement_locks_error_message_names_statement_and_expectation():
    with pytest.raises(InvalidLockRequestError) as info:
        plan_statement_locks(_stmt(K.UPDATE, T1))
    assert str(info.value) == (
        "Invalid lock request 'update target=db.t1 sources=[]': UPDATE on a table that is not "
        "transactional; expected an ACID table (Hive refuses UPDATE/DELETE/MERGE on non-ACID tables)"
    )
