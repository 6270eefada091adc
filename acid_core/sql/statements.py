"""SELECT and the writes of Hive's documentation, executed against the ACID engine.

::

    INSERT INTO [TABLE] t [PARTITION (k='v' | k, ..)] [(cols)] VALUES (..), .. | SELECT ..
    UPDATE t SET c = expr [, ..] [WHERE cond]                      split-update, one statement ID
    DELETE FROM t [WHERE cond]
    MERGE INTO t [AS a] USING s [AS b] ON cond WHEN [NOT] MATCHED [AND cond] THEN UPDATE SET ..
        | DELETE | INSERT [(cols)] VALUES (..)      statement IDs: the NOT MATCHED INSERT clauses
                                                    first, then the MATCHED clauses, in text order
    SELECT .. (row__id virtual column: struct<writeid, bucketid, rowid>)

Locks: every statement takes exactly the locks EXPLAIN LOCKS prints for it
(``lock_statements.plan_lock_requests``, the one statement -> locks mapping); an ACID write whose
partitions are only known once its rows are computed also takes S on each partition it writes,
before writing there (``Transaction.lock_written_partitions``).

Each write statement runs in its own transaction (``SqlSession.write_transaction``): its locks
first, then the reads at the transaction's snapshot (DuckDB over Arrow),
the type checks and casts, and the writes; any error aborts it, so a failing statement changes
no visible row.

Not here: DDL, SHOW and DESCRIBE (``catalog_statements``), parsing and dispatch (``engine``,
``registry``), files (``acid_core.writes``).
Errors: ``NoSuchTableError``, ``NoSuchColumnError``, ``SqlTypeError``, ``ValueOutOfRangeError``,
``SqlExecutionError``, ``UnsupportedStatementError``, ``CommitConflictError``, lock errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import pyarrow as pa
from sqlglot import exp

from acid_core.errors import (
    NoSuchColumnError,
    SqlExecutionError,
    SqlSyntaxError,
    UnsupportedStatementError,
)
from acid_core.metastore import (
    Table,
    TableType,
)
from acid_core.orc.schema import ROW_ID_COLUMN, hive_to_arrow, parse_hive_type
from acid_core.sql.evaluate import Evaluator
from acid_core.sql.lock_statements import plan_read_partitions
from acid_core.sql.registry import ParsedStatement, StatementContext, StatementResult, register_statement

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Transaction

from acid_core.sql.statement_support import HIVE_DIALECT, expression_of, statement_locks, table_name_of

__all__: list[str] = []


def _session(context: StatementContext) -> SqlSession:
    return cast("SqlSession", context)


def _pruned_loader(
    context: StatementContext, query: exp.Expr, txn: Transaction
) -> Callable[[str, bool], pa.Table]:
    # Partition pruning: each table is read only in the partitions its WHERE pins, found by the
    # same analysis that decides the statement's locks (``plan_read_partitions``), so a statement
    # never opens a partition it has not locked.
    metastore = context.warehouse.metastore
    restriction = plan_read_partitions(query, metastore.get_table)

    def load(name: str, with_row_id: bool) -> pa.Table:
        partitions = restriction.get(metastore.get_table(name).full_name)
        return txn.read(name, with_row_id=with_row_id, partitions=partitions)

    return load


def _literal_text(expression: exp.Expr, statement: str) -> str | None:
    if isinstance(expression, exp.Null):
        return None
    if isinstance(expression, exp.Literal):
        return str(expression.this)
    if isinstance(expression, exp.Neg) and isinstance(expression.this, exp.Literal):
        return f"-{expression.this.this}"
    if isinstance(expression, exp.Boolean):
        return "true" if expression.this else "false"
    raise UnsupportedStatementError(
        statement,
        f"partition value {expression.sql(dialect=HIVE_DIALECT)!r} is not a literal",
        "k='value' or k=123",
    )


@register_statement("select", expression_type=exp.Query)
def select(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """SELECT over the current snapshot; DuckDB runs the query over the tables' Arrow rows.

    Each table is read only in the partitions the query's WHERE pins (what it locks). It runs in
    a read-only transaction (Hive's ``TxnType.READ_ONLY``), open from its locks to its last row and
    then committed: SHOW TRANSACTIONS lists it meanwhile, and the cleaner waits for it.
    """
    query = expression_of(statement).copy()
    locks = statement_locks(context, statement)
    with context.warehouse.transaction(read_only=True) as txn, Evaluator(statement.text) as evaluator:
        txn.acquire_locks(locks)
        evaluator.bind_tables(query, _pruned_loader(context, query, txn))
        rows = evaluator.query(query.sql(dialect="duckdb"))
    return StatementResult("select", rows=rows)


# -- writes --------------------------------------------------------------------------------------


def _data_targets(table: Table, names: Sequence[str]) -> list[tuple[str, str]]:
    by_name = {c.name: c.type for c in (*table.columns, *table.partition_keys)}
    targets = []
    for name in names:
        if name.lower() not in by_name:
            raise NoSuchColumnError(name, tuple(by_name))
        targets.append((name.lower(), by_name[name.lower()]))
    return targets


def _complete_rows(table: Table, coerced: pa.Table) -> pa.Table:
    """Data columns in table order (missing ones null), then the partition columns present."""
    arrays = []
    fields = []
    for column in table.columns:
        if column.name in coerced.column_names:
            arrays.append(coerced.column(column.name))
            fields.append(coerced.schema.field(column.name))
        else:
            kind = hive_to_arrow(parse_hive_type(column.type))
            arrays.append(pa.chunked_array([pa.nulls(coerced.num_rows, kind)]))  # type: ignore[call-overload]
            fields.append(pa.field(column.name, kind))
    for key in table.partition_keys:
        if key.name in coerced.column_names:
            arrays.append(coerced.column(key.name))
            fields.append(coerced.schema.field(key.name))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


@register_statement("insert", expression_type=exp.Insert)
def insert(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """INSERT INTO .. VALUES / SELECT, with static and dynamic partitions."""
    session = _session(context)
    node = expression_of(statement).copy()
    if node.args.get("overwrite"):
        raise UnsupportedStatementError(
            statement.text, "INSERT OVERWRITE", "INSERT INTO (overwrite is not supported yet)"
        )
    target = node.this
    explicit: list[str] | None = None
    if isinstance(target, exp.Schema):
        explicit = [i.name.lower() for i in target.expressions]
        target = target.this
    table_node = cast("exp.Table", target)
    table = context.warehouse.metastore.get_table(table_name_of(table_node))
    static: dict[str, str | None] = {}
    dynamic: list[str] = []
    spec = table_node.args.get("partition")
    key_names = [k.name for k in table.partition_keys]
    if spec is not None:
        if not key_names:
            raise UnsupportedStatementError(
                statement.text,
                f"PARTITION on {table.full_name}, which is not partitioned",
                "no PARTITION clause",
            )
        for item in spec.expressions:
            if isinstance(item, exp.EQ):
                static[item.this.name.lower()] = _literal_text(item.expression, statement.text)
            else:
                dynamic.append(item.name.lower())
        unknown = [k for k in (*static, *dynamic) if k not in key_names]
        if unknown:
            raise NoSuchColumnError(unknown[0], tuple(key_names))
    dynamic = [k for k in key_names if k not in static]  # Hive: unnamed keys are dynamic, in key order
    data_names = explicit if explicit is not None else [c.name for c in table.columns]
    targets = _data_targets(table, [*data_names, *dynamic])
    source = node.expression
    locks = statement_locks(context, statement)
    with session.write_transaction() as txn, Evaluator(statement.text) as evaluator:
        txn.acquire_locks(locks)  # S on each partition written follows in txn.insert (ACID)
        if isinstance(source, exp.Values):
            sql = f"SELECT * FROM ({source.sql(dialect='duckdb')}) AS __acidflow_values"
        else:
            query = source.copy()
            evaluator.bind_tables(query, _pruned_loader(context, query, txn))
            sql = query.sql(dialect="duckdb")
        coerced = evaluator.coerce_columns(table.full_name, evaluator.query(sql), targets)
        rows = _complete_rows(table, coerced)
        count = txn.insert(table.full_name, rows, static_partition=static or None)
    return StatementResult(
        "insert", message=f"OK: {count} row(s) inserted into {table.full_name} (txn {txn.txn_id})"
    )


def _acid_table(context: StatementContext, table_node: exp.Table, statement: str, what: str) -> Table:
    table = context.warehouse.metastore.get_table(table_name_of(table_node))
    if table.table_type is not TableType.ACID:
        raise UnsupportedStatementError(
            statement,
            f"{what} on {table.full_name}, a {table.table_type.value.replace('_', '-')} table",
            "a full ACID table: TBLPROPERTIES ('transactional'='true')",
        )
    return table


def _set_columns(table: Table, assignments: Sequence[exp.Expr], statement: str) -> dict[str, exp.Expr]:
    sets: dict[str, exp.Expr] = {}
    names = [c.name for c in table.columns]
    for assignment in assignments:
        if not isinstance(assignment, exp.EQ):
            raise SqlSyntaxError(
                statement, f"{assignment.sql(dialect=HIVE_DIALECT)!r} is not column = expression"
            )
        column = assignment.this.name.lower()
        if column in {k.name for k in table.partition_keys} or column in table.bucket_columns:
            raise UnsupportedStatementError(
                statement,
                f"SET of {'partition' if column not in names else 'bucketing'} column {column!r}",
                "SET of other columns (Hive cannot update partition or bucketing columns)",
            )
        if column not in names:
            raise NoSuchColumnError(column, tuple(names))
        sets[column] = assignment.expression
    return sets


def _changed_rows_select(table: Table, alias: str, sets: dict[str, exp.Expr] | None) -> list[exp.Expr]:
    columns: list[exp.Expr] = [exp.column(ROW_ID_COLUMN, table=alias)]
    if sets is not None:
        for column in table.columns:
            value = sets.get(column.name)
            columns.append(
                exp.alias_(
                    value.copy() if value is not None else exp.column(column.name, table=alias), column.name
                )
            )
    columns.extend(exp.alias_(exp.column(k.name, table=alias), k.name) for k in table.partition_keys)
    return columns


def _coerce_sets(evaluator: Evaluator, table: Table, rows: pa.Table, sets: dict[str, exp.Expr]) -> pa.Table:
    names = list(sets)
    coerced = evaluator.coerce_columns(table.full_name, rows.select(names), _data_targets(table, names))
    for name in names:
        rows = rows.set_column(
            rows.column_names.index(name), coerced.schema.field(name), coerced.column(name)
        )
    return rows


@register_statement("update", expression_type=exp.Update)
def update(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """UPDATE t SET .. WHERE ..: split-update (delete_delta + delta, one write and statement ID)."""
    session = _session(context)
    node = expression_of(statement).copy()
    table_node = cast("exp.Table", node.this)
    table = _acid_table(context, table_node, statement.text, "UPDATE")
    sets = _set_columns(table, node.expressions, statement.text)
    alias = table_node.alias or table_node.name
    query = exp.select(*_changed_rows_select(table, alias, sets)).from_(table_node.copy())
    where = node.args.get("where")
    if where is not None:
        query = query.where(where.this.copy())
    locks = statement_locks(context, statement)
    with session.write_transaction() as txn, Evaluator(statement.text) as evaluator:
        txn.acquire_locks(locks)  # S on each partition written follows in txn.update
        evaluator.bind_tables(query, _pruned_loader(context, query, txn))
        rows = _coerce_sets(evaluator, table, evaluator.query(query.sql(dialect="duckdb")), sets)
        count = txn.update(table.full_name, rows)
    return StatementResult(
        "update", message=f"OK: {count} row(s) updated in {table.full_name} (txn {txn.txn_id})"
    )


@register_statement("delete", expression_type=exp.Delete)
def delete(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """DELETE FROM t WHERE ..: delete events in delete_delta_w_w_s."""
    session = _session(context)
    node = expression_of(statement).copy()
    table_node = cast("exp.Table", node.this)
    table = _acid_table(context, table_node, statement.text, "DELETE")
    alias = table_node.alias or table_node.name
    query = exp.select(*_changed_rows_select(table, alias, None)).from_(table_node.copy())
    where = node.args.get("where")
    if where is not None:
        query = query.where(where.this.copy())
    locks = statement_locks(context, statement)
    with session.write_transaction() as txn, Evaluator(statement.text) as evaluator:
        txn.acquire_locks(locks)  # S on each partition written follows in txn.delete
        evaluator.bind_tables(query, _pruned_loader(context, query, txn))
        count = txn.delete(table.full_name, evaluator.query(query.sql(dialect="duckdb")))
    return StatementResult(
        "delete", message=f"OK: {count} row(s) deleted from {table.full_name} (txn {txn.txn_id})"
    )


def _not_true(condition: exp.Expr) -> exp.Expr:
    return exp.not_(exp.func("COALESCE", exp.paren(condition.copy()), exp.false()))


def _is_true(condition: exp.Expr) -> exp.Expr:
    return exp.func("COALESCE", exp.paren(condition.copy()), exp.false())


def _check_merge_clauses(text: str, whens: Sequence[exp.Expr]) -> None:
    # Hive's MergeSemanticAnalyzer: at most one UPDATE, one DELETE and one INSERT clause; with two
    # WHEN MATCHED clauses the first needs an extra predicate; the INSERT clause comes last.
    kinds = [
        "insert"
        if not w.args.get("matched")
        else ("update" if isinstance(w.args["then"], exp.Update) else "delete")
        for w in whens
    ]
    for kind in ("insert", "update", "delete"):
        if kinds.count(kind) > 1:
            raise UnsupportedStatementError(
                text,
                f"{kinds.count(kind)} WHEN clauses that {kind.upper()}",
                f"at most one {kind.upper()} clause (as Hive)",
            )
    if "insert" in kinds and kinds[-1] != "insert":
        raise UnsupportedStatementError(
            text, "a WHEN MATCHED clause after WHEN NOT MATCHED", "the INSERT clause last (as Hive)"
        )
    matched = [w for w in whens if w.args.get("matched")]
    if len(matched) == 2 and matched[0].args.get("condition") is None:
        raise UnsupportedStatementError(
            text,
            "two WHEN MATCHED clauses and the first has no AND <predicate>",
            "WHEN MATCHED AND <predicate> THEN .. first (as Hive)",
        )


@register_statement("merge", expression_type=exp.Merge)
def merge(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """MERGE INTO: each WHEN clause its own statement ID (NOT MATCHED INSERT first, then MATCHED)."""
    session = _session(context)
    node = expression_of(statement).copy()
    target_node = cast("exp.Table", node.this)
    table = _acid_table(context, target_node, statement.text, "MERGE")
    whens = list(node.args["whens"].expressions)
    inserts = [w for w in whens if not w.args.get("matched")]
    matched = [w for w in whens if w.args.get("matched")]
    if any(w.args.get("source") for w in whens):
        raise UnsupportedStatementError(
            statement.text, "WHEN NOT MATCHED BY SOURCE", "WHEN MATCHED / WHEN NOT MATCHED"
        )
    _check_merge_clauses(statement.text, whens)
    locks = statement_locks(context, statement)
    counts = {"inserted": 0, "updated": 0, "deleted": 0}
    with session.write_transaction() as txn, Evaluator(statement.text) as evaluator:
        txn.acquire_locks(locks)  # S on each partition written follows in txn.insert/update/delete
        evaluator.bind_tables(node, session.load_table, with_row_id=True)
        target = cast("exp.Table", node.this)
        using = cast("exp.Expr", node.args["using"])
        on = cast("exp.Expr", node.args["on"])
        alias = target.alias
        target_sql = target.sql(dialect="duckdb")
        using_sql = using.sql(dialect="duckdb")
        on_sql = on.sql(dialect="duckdb")
        join = f"FROM {target_sql} JOIN {using_sql} ON {on_sql}"
        duplicate = evaluator.query(
            f"SELECT CAST({alias}.row__id AS VARCHAR) AS r {join} GROUP BY {alias}.row__id HAVING count(*) > 1 LIMIT 1"
        )
        if duplicate.num_rows:
            raise SqlExecutionError(
                statement.text,
                f"target row {duplicate.column(0)[0].as_py()} of {table.full_name} matches more than one source "
                "row (Hive's MERGE cardinality check)",
            )
        statement_ids = {id(w): i for i, w in enumerate([*inserts, *matched])}
        earlier: list[exp.Expr] = []
        for when in matched:
            condition = when.args.get("condition")
            filters = [_not_true(c) for c in earlier] + (
                [_is_true(condition)] if condition is not None else []
            )
            where = " AND ".join(f.sql(dialect="duckdb") for f in filters) or "TRUE"
            earlier.append(condition if condition is not None else exp.true())
            then = when.args["then"]
            if isinstance(then, exp.Update):
                sets = _set_columns(table, then.expressions, statement.text)
                columns = ", ".join(e.sql(dialect="duckdb") for e in _changed_rows_select(table, alias, sets))
                rows = evaluator.query(f"SELECT {columns} {join} WHERE {where}")
                rows = _coerce_sets(evaluator, table, rows, sets)
                counts["updated"] += txn.update(table.full_name, rows, statement_id=statement_ids[id(when)])
            else:
                columns = ", ".join(e.sql(dialect="duckdb") for e in _changed_rows_select(table, alias, None))
                rows = evaluator.query(f"SELECT {columns} {join} WHERE {where}")
                counts["deleted"] += txn.delete(table.full_name, rows, statement_id=statement_ids[id(when)])
        earlier = []
        for when in inserts:
            condition = when.args.get("condition")
            filters = [_not_true(c) for c in earlier] + (
                [_is_true(condition)] if condition is not None else []
            )
            earlier.append(condition if condition is not None else exp.true())
            then = cast("exp.Insert", when.args["then"])
            values = cast("exp.Tuple", then.expression)
            explicit = (
                [c.name.lower() for c in then.this.expressions] if isinstance(then.this, exp.Tuple) else None
            )
            names = (
                explicit
                if explicit is not None
                else [c.name for c in (*table.columns, *table.partition_keys)]
            )
            select_list = ", ".join(v.sql(dialect="duckdb") for v in values.expressions)
            where = " AND ".join(
                [
                    f"NOT EXISTS (SELECT 1 FROM {target_sql} WHERE {on_sql})",
                    *(f.sql(dialect="duckdb") for f in filters),
                ]
            )
            raw = evaluator.query(f"SELECT {select_list} FROM {using_sql} WHERE {where}")
            coerced = evaluator.coerce_columns(table.full_name, raw, _data_targets(table, names))
            counts["inserted"] += txn.insert(
                table.full_name, _complete_rows(table, coerced), statement_id=statement_ids[id(when)]
            )
    shown = ", ".join(f"{n} {k}" for k, n in counts.items())
    return StatementResult("merge", message=f"OK: merged into {table.full_name}: {shown} (txn {txn.txn_id})")
