"""What the statement handlers share: the Hive dialect, the statement's expression, its locks.

::

    expression_of(statement)          the sqlglot expression of an expression-registered statement
    table_name_of(exp.Table)          db.table (lower case), or the bare name in the current database
    locked(context, statement)        hold the statement's locks (EXPLAIN LOCKS's) while it runs

Used by ``statements`` (SELECT and the writes) and ``catalog_statements`` (DDL, SHOW, DESCRIBE).
Not here: any handler. Errors: the lock manager's (``LockRefusedError``, ...).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from sqlglot.dialects.hive import Hive

from acid_core.sql.lock_statements import plan_lock_requests

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sqlglot import exp

    from acid_core.locks import LockRequest
    from acid_core.sql.registry import ParsedStatement, StatementContext


__all__ = ["HIVE_DIALECT", "expression_of", "locked", "statement_locks", "table_name_of"]

HIVE_DIALECT: Final = Hive()


def expression_of(statement: ParsedStatement) -> exp.Expr:
    """The sqlglot expression of a statement registered by expression type."""
    assert statement.expression is not None  # noqa: S101 - expression-registered handlers always get one
    return statement.expression


def table_name_of(table: exp.Table) -> str:
    """``db.table`` in lower case, or the bare table name when the statement names no database."""
    return f"{table.db}.{table.name}".lower() if table.db else table.name.lower()


def statement_locks(context: StatementContext, statement: ParsedStatement) -> list[LockRequest]:
    """The locks the statement takes: exactly those EXPLAIN LOCKS prints for it."""
    # The one statement -> locks mapping, shared with EXPLAIN LOCKS: a statement takes exactly
    # the locks EXPLAIN LOCKS prints for it.
    return plan_lock_requests(statement.text, context.warehouse.metastore.get_table)


@contextmanager
def locked(context: StatementContext, statement: ParsedStatement) -> Iterator[None]:
    """Hold the statement's locks while it runs (DDL and SELECT, which run outside a transaction)."""
    # For statements outside a transaction (DDL, SELECT): hold the locks while the statement runs.
    requests = statement_locks(context, statement)
    if not requests:
        yield
        return
    manager = context.warehouse.lock_manager
    handle = context.warehouse.acquire_locks(requests)
    try:
        yield
    finally:
        manager.release(handle)
