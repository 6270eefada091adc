r"""The lock statements of ``acidflow sql``: SHOW LOCKS and EXPLAIN LOCKS (issue 5, HIVE-1293).

::

    SHOW LOCKS [[db.]t [PARTITION (k='v', ..)]] [EXTENDED]
        the locks held now, from the warehouse's lock manager: one row per lock
        object  mode                        (EXTENDED adds holder, host, txn_id, acquired_at)
        default.t1  S
        default.t1/p=1  X
    EXPLAIN LOCKS <statement>
        the locks <statement> would take; it is parsed, never run, and nothing is locked

``plan_explain_locks`` is the PURE mapping from a statement text to ``StatementLocks`` (one per
lock set the statement takes), and ``plan_lock_requests`` (``plan_lock_set`` over their
``plan_statement_locks``) is what EXPLAIN LOCKS prints AND what the statement's executor
(``acid_core.sql.statements``) acquires: one function, so the two cannot disagree. ACID writes
whose partitions are only known at run time add S on each partition written, before writing it.
The mapping follows the design's table (see ``acid_core.locks.planner``):

    SELECT .. FROM t1 WHERE p='1'                   sources: t1/p=1 (equalities on a prefix of the
                                                    partition keys in the query's WHERE)
    INSERT INTO t2 [PARTITION (p='2'[, q])] ..      target: the static partition, or its known
                                                    prefix for dynamic partitions; sources as SELECT
    UPDATE / DELETE .. [WHERE p='1']                target: the partition the WHERE pins, else the table
    MERGE INTO t USING s ..                         target: t; sources: s
    DROP TABLE t                                    target: t
    ALTER TABLE t [PARTITION (..)] RENAME TO / ADD / REPLACE COLUMNS / CHANGE [COLUMN] /
        CONCATENATE / ADD / DROP / TOUCH PARTITION / SET SERDEPROPERTIES / SET SERDE /
        SET FILEFORMAT / SET|UNSET TBLPROPERTIES / SET LOCATION / COMPACT '..'   (the compaction
        worker's locks)
    CREATE TABLE, CREATE/DROP DATABASE, SHOW .., DESCRIBE, ABORT ..   no table or partition locks

Table names resolve as the other statements resolve them (``db.t``, or ``t`` in ``default``).
Invariants: EXPLAIN LOCKS runs nothing, opens no transaction and takes no lock.
Not here: the lock rules (``acid_core.locks.planner``), holding locks (``acid_core.locks``).
Errors: ``SqlSyntaxError`` / ``UnsupportedStatementError`` for an inner statement that cannot be
parsed or whose locks are unknown, ``NoSuchTableError`` for an unknown table,
``InvalidPartitionError`` for a partition spec that does not fit the table's keys,
``InvalidLockRequestError`` for a statement the lock rules refuse (UPDATE on a non-ACID table).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import pyarrow as pa
from sqlglot import TokenType, exp
from sqlglot.dialects.hive import Hive
from sqlglot.errors import TokenError

from acid_core.errors import (
    InvalidPartitionError,
    NoSuchTableError,
    SqlSyntaxError,
    UnsupportedStatementError,
)
from acid_core.locks import LockObject, LockRequest, NoLockManager, plan_lock_set
from acid_core.locks.planner import StatementKind, StatementLocks, plan_statement_locks
from acid_core.metastore import TableType
from acid_core.sql.engine import parse_statement, split_statements
from acid_core.sql.registry import StatementResult, load_extensions, register_statement

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from acid_core.locks import LockInfo
    from acid_core.metastore import Table
    from acid_core.sql.registry import ParsedStatement, StatementContext

__all__ = [
    "TableResolver",
    "explain_lock_requests",
    "plan_explain_locks",
    "plan_lock_requests",
    "plan_read_partitions",
]

TableResolver = Callable[[str], "Table"]
"""Looks a table name (``t`` or ``db.t``) up; raises ``NoSuchTableError`` for an unknown one."""

_DIALECT: Final = Hive()
_NAME: Final = r"(?P<table>`?\w+`?(?:\.`?\w+`?)?)"
# Hive writes a NULL partition value as this directory name (FileUtils / HiveConf DEFAULTPARTITIONNAME).
_DEFAULT_PARTITION: Final = "__HIVE_DEFAULT_PARTITION__"
# Registered statements that take no table or partition lock in acidflow (nor in the design's table).
_NO_LOCKS: Final = frozenset(
    {
        "create_database",
        "drop_database",
        "show_databases",
        "describe",
        "show_tables",
        "show_partitions",
        "show_transactions",
        "abort_transactions",
        "show_compactions",
        "abort_compactions",
        "show_locks",
        "explain_locks",
    }
)
# ALTER TABLE actions, tried in order on the text after ``ALTER TABLE t [PARTITION (..)]``.
_ALTER_ACTIONS: Final[tuple[tuple[str, StatementKind], ...]] = (
    (r"RENAME\s+TO\b", StatementKind.ALTER_TABLE_RENAME),
    (r"ADD\s+COLUMNS\b", StatementKind.ALTER_TABLE_ADD_COLUMNS),
    (r"REPLACE\s+COLUMNS\b", StatementKind.ALTER_TABLE_REPLACE_COLUMNS),
    (r"CHANGE\b", StatementKind.ALTER_TABLE_CHANGE_COLUMN),
    (r"CONCATENATE\s*$", StatementKind.ALTER_TABLE_CONCATENATE),
    (r"ADD\s+(?:IF\s+NOT\s+EXISTS\s+)?PARTITION\b", StatementKind.ALTER_TABLE_ADD_PARTITION),
    (r"DROP\s+(?:IF\s+EXISTS\s+)?PARTITION\b", StatementKind.ALTER_TABLE_DROP_PARTITION),
    (r"TOUCH\b", StatementKind.ALTER_TABLE_TOUCH),
    (r"SET\s+SERDEPROPERTIES\b", StatementKind.ALTER_TABLE_SET_SERDEPROPERTIES),
    (r"SET\s+SERDE\b", StatementKind.ALTER_TABLE_SET_SERDE),
    (r"SET\s+FILEFORMAT\b", StatementKind.ALTER_TABLE_SET_FILEFORMAT),
    (r"(?:SET|UNSET)\s+TBLPROPERTIES\b", StatementKind.ALTER_TABLE_SET_TBLPROPERTIES),
    (r"SET\s+LOCATION\b", StatementKind.ALTER_TABLE_SET_LOCATION),
    (r"COMPACT\s+'(?:minor|major)'", StatementKind.COMPACT),
)
_ALTER_KINDS: Final = ", ".join(
    [
        "RENAME TO",
        "ADD/REPLACE COLUMNS",
        "CHANGE COLUMN",
        "CONCATENATE",
        "ADD/DROP/TOUCH PARTITION",
        "SET SERDEPROPERTIES/SERDE/FILEFORMAT/TBLPROPERTIES/LOCATION",
        "COMPACT",
    ]
)


# -- partition specs -----------------------------------------------------------------------------


def _literal_text(node: exp.Expr) -> str | None:
    """The text of a literal partition value (NULL: Hive's default partition); None if not a literal."""
    if isinstance(node, exp.Paren):
        return _literal_text(node.this)
    if isinstance(node, exp.Null):
        return _DEFAULT_PARTITION
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return f"-{node.this.this}"
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return None


def _parse_partition_specs(text: str, statement: str) -> list[list[tuple[str, str]]]:
    """Every ``PARTITION (k=v, ..)`` of ``text``, read with the Hive tokenizer (quotes respected)."""
    try:
        tokens = _DIALECT.tokenize(text)
    except TokenError as e:
        raise SqlSyntaxError(statement, str(e).strip().splitlines()[0]) from e
    specs: list[list[tuple[str, str]]] = []
    index = 0
    while index < len(tokens):
        if not (
            tokens[index].text.upper() == "PARTITION"
            and index + 1 < len(tokens)
            and tokens[index + 1].token_type is TokenType.L_PAREN
        ):
            index += 1
            continue
        index += 2
        spec: list[tuple[str, str]] = []
        while index < len(tokens) and tokens[index].token_type is not TokenType.R_PAREN:
            key = tokens[index]
            if index + 2 >= len(tokens) or tokens[index + 1].token_type is not TokenType.EQ:
                raise SqlSyntaxError(statement, f"partition key {key.text!r} without '=value'")
            index += 2
            sign = ""
            if tokens[index].token_type is TokenType.DASH and index + 1 < len(tokens):
                sign, index = "-", index + 1
            value = tokens[index]
            if value.token_type is TokenType.NULL:
                shown = _DEFAULT_PARTITION
            elif value.token_type in (
                TokenType.STRING,
                TokenType.NUMBER,
                TokenType.VAR,
                TokenType.TRUE,
                TokenType.FALSE,
            ):
                shown = sign + value.text
            else:
                raise SqlSyntaxError(statement, f"partition value {value.text!r} is not a literal")
            spec.append((key.text.strip("`"), shown))
            index += 1
            if index < len(tokens) and tokens[index].token_type is TokenType.COMMA:
                index += 1
        if index >= len(tokens):
            raise SqlSyntaxError(statement, "a PARTITION spec without its closing ')'")
        specs.append(spec)
        index += 1
    return specs


def _partition_object(table: Table, spec: Sequence[tuple[str, str]], *, full: bool, shown: str) -> LockObject:
    """The lock object of ``spec`` on ``table``: keys in table order, a prefix (all keys if ``full``)."""
    keys = [k.name.lower() for k in table.partition_keys]
    values: dict[str, str] = {}
    for key, value in spec:
        folded = key.lower()
        if folded not in keys:
            expected = f"keys of {keys}" if keys else "no PARTITION clause (the table is not partitioned)"
            raise InvalidPartitionError(table.full_name, shown, expected)
        if folded in values:
            raise InvalidPartitionError(table.full_name, shown, f"each key once; {folded!r} appears twice")
        values[folded] = value
    if full and len(values) != len(keys):
        raise InvalidPartitionError(table.full_name, shown, f"a value for each partition key {keys}")
    if keys[: len(values)] != [k for k in keys if k in values]:
        raise InvalidPartitionError(table.full_name, shown, f"a leading prefix of the partition keys {keys}")
    return LockObject(table.database, table.name, tuple((k, values[k]) for k in keys if k in values))


def _table_object(table: Table) -> LockObject:
    return LockObject(table.database, table.name)


def _is_acid(table: Table) -> bool:
    return table.table_type is not TableType.PLAIN


# -- queries: which tables and partitions are read -----------------------------------------------


def _table_name(node: exp.Table) -> str:
    return f"{node.db}.{node.name}" if node.db else node.name


def _conjuncts(condition: exp.Expr | None) -> Iterable[exp.Expr]:
    if condition is None:
        return
    if isinstance(condition, exp.Paren):
        yield from _conjuncts(condition.this)
    elif isinstance(condition, exp.And):
        yield from _conjuncts(condition.this)
        yield from _conjuncts(condition.expression)
    else:
        yield condition


def _pinned_partition(
    table: Table, names: set[str], condition: exp.Expr | None, ambiguous: set[str]
) -> tuple[tuple[str, str], ...]:
    """The partition prefix that ``k = literal`` conjuncts of ``condition`` pin for ``table``.

    ``names`` are the table's name and alias (for qualified columns); an unqualified column counts
    unless another table of the same query has a column of that name (``ambiguous``).
    """
    keys = [k.name.lower() for k in table.partition_keys]
    pinned: dict[str, str] = {}
    for conjunct in _conjuncts(condition):
        if not isinstance(conjunct, exp.EQ):
            continue
        for column, other in ((conjunct.this, conjunct.expression), (conjunct.expression, conjunct.this)):
            if not isinstance(column, exp.Column) or isinstance(other, exp.Null):
                continue
            value = _literal_text(other)
            key = column.name.lower()
            qualifier = column.table.lower()
            if value is None or key not in keys:
                continue
            if (qualifier and qualifier not in names) or (not qualifier and key in ambiguous):
                continue
            if pinned.setdefault(key, value) != value:
                return ()  # p = '1' AND p = '2' reads nothing; lock the table, as Hive would
    prefix: list[tuple[str, str]] = []
    for key in keys:
        if key not in pinned:
            break
        prefix.append((key, pinned[key]))
    return tuple(prefix)


def _column_names(table: Table) -> set[str]:
    return {c.name.lower() for c in (*table.columns, *table.partition_keys)}


def _sources(expression: exp.Expr | None, resolve: TableResolver) -> tuple[LockObject, ...]:
    """The tables (or the partitions their query's WHERE pins) that ``expression`` reads."""
    if expression is None:
        return ()
    ctes = {c.alias_or_name.lower() for c in expression.find_all(exp.CTE)}
    nodes = [
        n for n in expression.find_all(exp.Table) if n.name and not (not n.db and n.name.lower() in ctes)
    ]
    tables = {id(n): resolve(_table_name(n)) for n in nodes}
    scopes: dict[int, list[exp.Table]] = {}
    for node in nodes:
        scopes.setdefault(id(node.find_ancestor(exp.Select)), []).append(node)
    objects: list[LockObject] = []
    for node in nodes:
        table = tables[id(node)]
        select = node.find_ancestor(exp.Select)
        where = select.args.get("where") if select is not None else None
        others = [tables[id(o)] for o in scopes[id(select)] if o is not node]
        ambiguous = set().union(*(_column_names(o) for o in others)) if others else set()
        names = {node.name.lower(), node.alias_or_name.lower()}
        partition = _pinned_partition(table, names, where.this if where is not None else None, ambiguous)
        objects.append(LockObject(table.database, table.name, partition))
    return tuple(dict.fromkeys(objects))


def plan_read_partitions(
    query: exp.Expr, resolve: TableResolver
) -> dict[str, tuple[tuple[tuple[str, str], ...], ...] | None]:
    """The partitions ``query`` reads of each table: the same analysis as its locks (partition pruning).

    PURE apart from ``resolve``. Each table reference of ``query`` reads the partition prefix that
    ``k = literal`` conjuncts of its own SELECT's WHERE pin (``_sources``, what SELECT locks), so a
    statement reads exactly the partitions it locks and a concurrent DROP of another partition
    cannot break it. A table referenced once without a pin is read whole.

    Args:
        query: a query (SELECT, or the ``SELECT .. FROM t WHERE ..`` an UPDATE/DELETE evaluates).
        resolve: the table lookup (``Metastore.get_table``).

    Returns:
        ``db.table`` -> the partition prefixes to read, or None for every partition.

    Example: ``SELECT a FROM t WHERE p = '1'`` -> ``{"default.t": ((("p", "1"),),)}``.
    """
    restriction: dict[str, tuple[tuple[tuple[str, str], ...], ...] | None] = {}
    for source in _sources(query, resolve):
        name = f"{source.db}.{source.table}"
        known = restriction.get(name, ())
        if not source.partition or known is None:
            restriction[name] = None
        else:
            restriction[name] = (*known, source.partition)
    return restriction


# -- statements ----------------------------------------------------------------------------------


def _insert_locks(node: exp.Insert, resolve: TableResolver, statement: str) -> StatementLocks:
    target = node.this.this if isinstance(node.this, exp.Schema) else node.this
    if not isinstance(target, exp.Table):
        raise UnsupportedStatementError(
            statement, "INSERT into something that is not a table", "INSERT INTO t"
        )
    table = resolve(_table_name(target))
    keys = [k.name.lower() for k in table.partition_keys]
    static: dict[str, str] = {}
    spec = target.args.get("partition")
    if spec is not None:
        shown = spec.sql(dialect=_DIALECT)
        named: list[tuple[str, str]] = []
        for item in spec.expressions:
            if isinstance(item, exp.EQ):
                value = _literal_text(item.expression)
                if value is None:
                    raise UnsupportedStatementError(
                        statement, f"partition value {item.expression.sql(dialect=_DIALECT)!r}", "k='value'"
                    )
                named.append((item.this.name, value))
                static[item.this.name.lower()] = value
            else:
                named.append((item.name, "?"))  # a dynamic key: only its name is checked below
        _check_keys(table, [k for k, _ in named], shown)
    prefix: list[tuple[str, str]] = []
    for key in keys:
        if key not in static:
            break
        prefix.append((key, static[key]))
    return StatementLocks(
        StatementKind.INSERT_OVERWRITE if node.args.get("overwrite") else StatementKind.INSERT,
        target=LockObject(table.database, table.name, tuple(prefix)),
        sources=_sources(node.expression, resolve),
        is_acid=_is_acid(table),
        dynamic_partition=len(prefix) < len(keys),
    )


def _check_keys(table: Table, names: Sequence[str], shown: str) -> None:
    keys = [k.name.lower() for k in table.partition_keys]
    for name in names:
        if name.lower() not in keys:
            expected = f"keys of {keys}" if keys else "no PARTITION clause (the table is not partitioned)"
            raise InvalidPartitionError(table.full_name, shown, expected)


def _row_level_locks(
    kind: StatementKind, node: exp.Update | exp.Delete, resolve: TableResolver
) -> StatementLocks:
    target = node.this
    table = resolve(_table_name(target))
    where = node.args.get("where")
    condition = where.this if where is not None else None
    names = {target.name.lower(), target.alias_or_name.lower()}
    partition = _pinned_partition(table, names, condition, set())
    sources = [s for s in _sources(condition, resolve) if (s.db, s.table) != (table.database, table.name)]
    return StatementLocks(
        kind,
        target=LockObject(table.database, table.name, partition),
        sources=tuple(sources),
        is_acid=table.table_type is TableType.ACID,
        dynamic_partition=len(partition) < len(table.partition_keys),
    )


def _merge_locks(node: exp.Merge, resolve: TableResolver) -> StatementLocks:
    table = resolve(_table_name(node.this))
    using = node.args.get("using")
    sources = _sources(using, resolve)
    return StatementLocks(
        StatementKind.MERGE,
        target=_table_object(table),
        sources=tuple(s for s in sources if (s.db, s.table) != (table.database, table.name)),
        is_acid=table.table_type is TableType.ACID,
        dynamic_partition=bool(table.partition_keys),
    )


def _drop_table_locks(node: exp.Drop, resolve: TableResolver) -> tuple[StatementLocks, ...]:
    locks: list[StatementLocks] = []
    for target in node.args.get("tables") or [node.this]:
        try:
            table = resolve(_table_name(target))
        except NoSuchTableError:
            if node.args.get("exists"):
                continue  # DROP TABLE IF EXISTS of a missing table does nothing, so locks nothing
            raise
        locks.append(StatementLocks(StatementKind.DROP_TABLE, target=_table_object(table)))
    return tuple(locks)


def _alter_table_locks(
    match: re.Match[str], resolve: TableResolver, statement: str
) -> tuple[StatementLocks, ...]:
    table = resolve(match.group("table").replace("`", ""))
    action = match.group("action").strip()
    partition_text = match.group("partition")
    kind = next((k for p, k in _ALTER_ACTIONS if re.match(p, action, re.IGNORECASE | re.DOTALL)), None)
    if kind is None:
        raise UnsupportedStatementError(
            statement,
            f"EXPLAIN LOCKS does not know ALTER TABLE .. {action.split()[0].upper()}",
            f"ALTER TABLE t {_ALTER_KINDS}",
        )
    acid = _is_acid(table)
    if kind in (StatementKind.ALTER_TABLE_ADD_PARTITION, StatementKind.ALTER_TABLE_DROP_PARTITION) or (
        kind is StatementKind.ALTER_TABLE_TOUCH and partition_text is None
    ):
        if partition_text is not None:
            raise UnsupportedStatementError(
                statement,
                "ALTER TABLE t PARTITION (..) with a partition action",
                "ALTER TABLE t ADD PARTITION (..)",
            )
        specs = _parse_partition_specs(action, statement)
        if not specs:
            raise SqlSyntaxError(statement, "no PARTITION (k=v, ...) spec")
        full = kind is not StatementKind.ALTER_TABLE_DROP_PARTITION  # Hive drops by a partial spec too
        return tuple(
            StatementLocks(
                kind,
                target=_partition_object(table, spec, full=full, shown=_spec_text(spec)),
                is_acid=acid,
            )
            for spec in specs
        )
    target = _table_object(table)
    if partition_text is not None:
        (spec,) = _parse_partition_specs(partition_text, statement)
        full = kind in (StatementKind.COMPACT, StatementKind.ALTER_TABLE_SET_LOCATION)
        target = _partition_object(table, spec, full=full, shown=_spec_text(spec))
    elif kind is StatementKind.COMPACT and table.partition_keys:
        keys = [k.name for k in table.partition_keys]
        raise InvalidPartitionError(
            table.full_name,
            None,
            f"PARTITION ({', '.join(k + '=...' for k in keys)}) for a partitioned table",
        )
    return (StatementLocks(kind, target=target, is_acid=acid),)


def _spec_text(spec: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{k}={v}" for k, v in spec)


_ALTER_TABLE: Final = (
    rf"ALTER\s+TABLE\s+{_NAME}(?:\s+(?P<partition>PARTITION\s*\(.*?\)))?\s+(?!PARTITION\b)(?P<action>\S.*)"
)


def plan_explain_locks(text: str, resolve: TableResolver) -> tuple[StatementLocks, ...]:
    """Map one statement to the lock sets it takes (empty: it takes none). PURE apart from ``resolve``.

    Args:
        text: one statement (no ``;``-separated script).
        resolve: the table lookup (``Metastore.get_table``).

    Returns:
        One ``StatementLocks`` per lock set (several for ALTER TABLE .. ADD PARTITION (..) PARTITION (..)).

    Raises:
        SqlSyntaxError / UnsupportedStatementError: the statement cannot be parsed, or its locks are
            unknown.
        NoSuchTableError / InvalidPartitionError: an unknown table or a spec that does not fit it.
    """
    statements = split_statements(text)
    if len(statements) != 1:
        raise UnsupportedStatementError(
            text, f"{len(statements)} statements after EXPLAIN LOCKS", "EXPLAIN LOCKS <one statement>"
        )
    (text,) = statements
    alter = re.fullmatch(_ALTER_TABLE, text, re.IGNORECASE | re.DOTALL)
    if alter is not None:
        return _alter_table_locks(alter, resolve, text)
    load_extensions()
    prepared = parse_statement(text)
    name = prepared.spec.name
    if name in _NO_LOCKS:
        return ()
    expression = prepared.statement.expression
    if expression is None:  # registered by a text pattern, and not a lock-free one
        raise UnsupportedStatementError(text, f"EXPLAIN LOCKS does not know the locks of {name}", _KNOWN)
    if isinstance(expression, exp.Query):
        sources = _sources(expression, resolve)
        return (StatementLocks(StatementKind.SELECT, sources=sources),) if sources else ()
    if isinstance(expression, exp.Insert):
        return (_insert_locks(expression, resolve, text),)
    if isinstance(expression, exp.Update):
        return (_row_level_locks(StatementKind.UPDATE, expression, resolve),)
    if isinstance(expression, exp.Delete):
        return (_row_level_locks(StatementKind.DELETE, expression, resolve),)
    if isinstance(expression, exp.Merge):
        return (_merge_locks(expression, resolve),)
    if name == "drop_table" and isinstance(expression, exp.Drop):
        return _drop_table_locks(expression, resolve)
    if name == "create_table" and isinstance(expression, exp.Create):
        # HIVE-1293 locks nothing for CREATE TABLE; CREATE TABLE .. AS SELECT reads its sources.
        sources = _sources(expression.expression, resolve)
        return (StatementLocks(StatementKind.SELECT, sources=sources),) if sources else ()
    raise UnsupportedStatementError(text, f"EXPLAIN LOCKS does not know the locks of {name}", _KNOWN)


_KNOWN: Final = (
    "SELECT, INSERT, UPDATE, DELETE, MERGE, CREATE/DROP TABLE, ALTER TABLE .. "
    f"{_ALTER_KINDS}, or a statement that takes no locks (SHOW .., DESCRIBE)"
)


def plan_lock_requests(text: str, resolve: TableResolver) -> list[LockRequest]:
    """The locks ``text`` takes up front: what EXPLAIN LOCKS prints and what its executor acquires.

    The one mapping from a statement to its locks. An ACID write whose partitions are only known
    once its rows are computed (dynamic partitions; UPDATE/DELETE/MERGE not pinned to a partition)
    also takes S on each partition it writes, at run time, before writing there
    (``Transaction.lock_written_partitions``); a non-ACID one holds X on the table or known prefix,
    which covers them.

    Args:
        text: one statement.
        resolve: the table lookup (``Metastore.get_table``).

    Raises:
        As ``plan_explain_locks``, and ``InvalidLockRequestError`` for a statement the lock rules refuse.
    """
    return explain_lock_requests(plan_explain_locks(text, resolve))


def _locks_written_partitions(statement: StatementLocks) -> bool:
    # An ACID write holds only S on its target; when that is not a whole partition, the
    # partitions written are locked at run time (a non-ACID write's X already covers them).
    return (
        statement.is_acid
        and statement.dynamic_partition
        and statement.kind
        in (StatementKind.INSERT, StatementKind.UPDATE, StatementKind.DELETE, StatementKind.MERGE)
    )


def explain_lock_requests(statements: Sequence[StatementLocks]) -> list[LockRequest]:
    """The locks EXPLAIN LOCKS prints: every set planned, then merged (sorted, X wins, hierarchy).

    >>> from acid_core.locks import parse_lock_object
    >>> [str(r) for r in explain_lock_requests([StatementLocks(
    ...     StatementKind.DROP_TABLE, target=parse_lock_object("db.t"))])]
    ['X db.t']
    """
    return plan_lock_set(itertools.chain.from_iterable(plan_statement_locks(s) for s in statements))


# -- the registered statements -------------------------------------------------------------------


@register_statement("explain_locks", pattern=r"EXPLAIN\s+LOCKS\s+(?P<statement>\S.*)")
def explain_locks(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """EXPLAIN LOCKS <statement>: the locks it would take (nothing runs, nothing is locked)."""
    if statement.match is None:
        raise UnsupportedStatementError(statement.text, "no pattern match", "EXPLAIN LOCKS <statement>")
    inner = statement.match.group("statement")
    statements = plan_explain_locks(inner, context.warehouse.metastore.get_table)
    requests = explain_lock_requests(statements)  # = plan_lock_requests(inner, ..), what the executor takes
    rows = pa.table(
        {
            "object": pa.array([r.object.to_name() for r in requests], pa.string()),
            "mode": pa.array([r.mode.letter for r in requests], pa.string()),
        }
    )
    shown = " ".join(inner.split())
    head = f"{shown[:60]}{'..' if len(shown) > 60 else ''}"
    taken = f"would take {len(requests)} lock(s)" if requests else "takes no table or partition locks"
    if any(_locks_written_partitions(s) for s in statements):
        taken += ", then S on each partition it writes (known when it runs)"
    message = f"OK: {head} {taken}; nothing ran and nothing was locked"
    return StatementResult("explain_locks", rows=rows, message=message)


@register_statement(
    "show_locks",
    pattern=(
        rf"SHOW\s+LOCKS(?:\s+(?!EXTENDED\s*$){_NAME}(?:\s+(?P<partition>PARTITION\s*\(.*\)))?)?"
        r"(?P<extended>\s+EXTENDED)?"
    ),
)
def show_locks(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """SHOW LOCKS [t [PARTITION (..)]] [EXTENDED]: the locks held now, on the object and below it."""
    match = statement.match
    if match is None:
        raise UnsupportedStatementError(statement.text, "no pattern match", "SHOW LOCKS [t] [EXTENDED]")
    prefix: LockObject | None = None
    if match.group("table"):
        table = context.warehouse.metastore.get_table(match.group("table").replace("`", ""))
        prefix = _table_object(table)
        if match.group("partition"):
            specs = _parse_partition_specs(match.group("partition"), statement.text)
            if len(specs) != 1:
                raise SqlSyntaxError(statement.text, "more than one PARTITION spec")
            prefix = _partition_object(table, specs[0], full=False, shown=_spec_text(specs[0]))
    extended = bool(match.group("extended"))
    manager = context.warehouse.lock_manager
    infos = manager.show(prefix, extended=extended)
    message = None
    if isinstance(manager, NoLockManager):
        message = (
            "OK: locking is off (no lock manager configured), so no locks are held; "
            "hint: set ACIDFLOW_LOCK_MANAGER=sql or zookeeper"
        )
    return StatementResult("show_locks", rows=_lock_rows(infos, extended=extended), message=message)


def _lock_rows(infos: Sequence[LockInfo], *, extended: bool) -> pa.Table:
    columns: dict[str, pa.Array[pa.Scalar[pa.DataType]]] = {
        "object": pa.array([i.object.to_name() for i in infos], pa.string()),
        "mode": pa.array([i.mode.letter for i in infos], pa.string()),
    }
    if extended:
        columns["holder"] = pa.array([i.holder for i in infos], pa.string())
        columns["host"] = pa.array([i.host for i in infos], pa.string())
        columns["txn_id"] = pa.array([i.txn_id for i in infos], pa.int64())
        columns["acquired_at"] = pa.array(
            [None if i.acquired_at is None else i.acquired_at.isoformat() for i in infos], pa.string()
        )
    return pa.table(columns)
