"""Expressions evaluated by DuckDB over the Arrow tables the ACID reader returns.

::

    statement (sqlglot, hive) ──bind_tables──> every table reference replaced by a registered
        Arrow table (the snapshot's rows, ``row__id`` first when the statement mentions it)
    ──.sql(dialect="duckdb")──> DuckDB ──> pyarrow.Table
    ──coerce_columns──> the target columns' Hive types: a type check (SqlTypeError), then a DuckDB
        CAST per column (a value that does not fit: ValueOutOfRangeError, naming the value)

Invariants: nothing is evaluated by hand: comparisons, arithmetic, functions and casts are DuckDB's.
Not here: transactions and files (``acid_core.writes``), statement dispatch (``registry``).
Errors: ``NoSuchColumnError`` (DuckDB cannot bind a column), ``SqlExecutionError`` (any other
evaluation failure), ``SqlTypeError``, ``ValueOutOfRangeError``, ``UnsupportedStatementError``
(a column type the SQL front end cannot write).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import duckdb
import pyarrow as pa
from sqlglot import exp

from acid_core.errors import (
    NoSuchColumnError,
    SqlExecutionError,
    SqlTypeError,
    UnsupportedStatementError,
    ValueOutOfRangeError,
)
from acid_core.orc.schema import ROW_ID_COLUMN, hive_to_arrow, parse_hive_type

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["Evaluator", "check_assignable", "duckdb_type", "mentions_row_id"]

_SIMPLE: Final = {
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "int": "INTEGER",
    "bigint": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "binary": "BLOB",
}
_NUMERIC: Final = frozenset({"tinyint", "smallint", "int", "bigint", "float", "double", "decimal"})
_STRINGS: Final = frozenset({"string", "varchar", "char"})
_INTEGERS: Final = frozenset({"tinyint", "smallint", "int", "bigint"})
_MISSING_COLUMN: Final = re.compile(r'Referenced column "([^"]+)" not found', re.IGNORECASE)


def _base(hive_type: str) -> str:
    return hive_type.strip().lower().split("(", 1)[0].strip()


def duckdb_type(hive_type: str) -> str:
    """The DuckDB type a Hive column type is cast to.

    Raises:
        UnsupportedStatementError: complex types (array, map, struct, union).
    """
    base = _base(hive_type)
    if base in _SIMPLE:
        return _SIMPLE[base]
    if base in ("varchar", "char"):
        return "VARCHAR"
    if base == "decimal":
        precision, scale = ((*tuple(parse_hive_type(hive_type).params), 10, 0))[:2]
        return f"DECIMAL({precision},{scale})"
    raise UnsupportedStatementError(
        f"a {hive_type} column",
        "the SQL front end cannot write this type",
        f"one of {sorted(_SIMPLE)}, decimal, varchar, char",
    )


def _category(data_type: pa.DataType) -> str:
    if pa.types.is_null(data_type):
        return "null"
    if pa.types.is_integer(data_type) or pa.types.is_floating(data_type) or pa.types.is_decimal(data_type):
        return "numeric"
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return "string"
    if pa.types.is_boolean(data_type):
        return "boolean"
    if pa.types.is_date(data_type):
        return "date"
    if pa.types.is_timestamp(data_type):
        return "timestamp"
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return "binary"
    return str(data_type)


def _accepts(hive_type: str) -> frozenset[str]:
    base = _base(hive_type)
    if base in _NUMERIC:
        return frozenset({"numeric"})
    if base in _STRINGS:
        # Hive converts numbers, booleans and dates to strings implicitly on insert.
        return frozenset({"string", "numeric", "boolean", "date", "timestamp"})
    if base == "boolean":
        return frozenset({"boolean"})
    if base in ("date", "timestamp"):
        return frozenset({"date", "timestamp", "string"})
    if base == "binary":
        return frozenset({"binary", "string"})
    return frozenset()


def check_assignable(table: str, column: str, source: pa.DataType, hive_type: str) -> None:
    """Refuse a value type Hive would not put into a column of ``hive_type``.

    Raises:
        SqlTypeError: e.g. a string into an int column.
    """
    category = _category(source)
    if category != "null" and category not in _accepts(hive_type):
        raise SqlTypeError(table, column, f"{category} ({source})", hive_type)


def mentions_row_id(expression: exp.Expr) -> bool:
    """Whether a statement refers to the ``row__id`` virtual column (any case)."""
    return any(ident.name.lower() == "row__id" for ident in expression.find_all(exp.Identifier))


class Evaluator:
    """One DuckDB connection with the statement's tables registered (one per statement)."""

    def __init__(self, statement: str) -> None:
        self.statement = statement
        self.connection = duckdb.connect()
        self._count = 0
        self.columns: dict[str, tuple[str, ...]] = {}

    def close(self) -> None:
        """Close the DuckDB connection."""
        self.connection.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def register(self, rows: pa.Table) -> str:
        """Register rows under a fresh name and return it."""
        name = f"__acidflow_t{self._count}"
        self._count += 1
        self.connection.register(name, rows)
        return name

    def bind_tables(
        self,
        expression: exp.Expr,
        load: Callable[[str, bool], pa.Table],
        *,
        with_row_id: bool | None = None,
    ) -> dict[str, str]:
        """Replace each table reference (not a CTE name) by a registered snapshot of it, in place.

        Args:
            expression: the statement; modified.
            load: ``load(table_name, with_row_id)`` reads a table's rows.
            with_row_id: register ``row__id`` too; default: when the statement mentions it.

        Returns:
            Original table name (``db.t`` as written, lower-case) -> registered name.
        """
        ctes = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
        if with_row_id is None:
            with_row_id = mentions_row_id(expression)
        bound: dict[str, str] = {}
        for table in list(expression.find_all(exp.Table)):
            if not table.name or (not table.db and table.name.lower() in ctes):
                continue
            full = f"{table.db}.{table.name}".lower() if table.db else table.name.lower()
            if full not in bound:
                rows = load(full, with_row_id)
                bound[full] = self.register(rows)
                self.columns[bound[full]] = tuple(rows.column_names)
            alias = table.alias or table.name
            table.replace(
                exp.Table(
                    this=exp.to_identifier(bound[full]), alias=exp.TableAlias(this=exp.to_identifier(alias))
                )
            )
        return bound

    def query(self, sql: str) -> pa.Table:
        """Run DuckDB SQL and return the result as Arrow.

        Raises:
            NoSuchColumnError: a column DuckDB cannot bind.
            SqlExecutionError: any other DuckDB error.
        """
        try:
            result: pa.Table = self.connection.sql(sql).to_arrow_table()
            return result
        except duckdb.BinderException as e:
            missing = _MISSING_COLUMN.search(str(e))
            if missing:
                available = tuple(
                    dict.fromkeys(c for cols in self.columns.values() for c in cols if c != ROW_ID_COLUMN)
                )
                raise NoSuchColumnError(missing.group(1), available) from e
            raise SqlExecutionError(self.statement, _first_line(e)) from e
        except duckdb.Error as e:
            raise SqlExecutionError(self.statement, _first_line(e)) from e

    def coerce_columns(self, table: str, source: pa.Table, targets: Sequence[tuple[str, str]]) -> pa.Table:
        """Cast ``source``'s columns (by position) to the target ``(name, hive type)`` columns.

        Raises:
            SqlExecutionError: a different number of columns.
            SqlTypeError: a value type the column does not accept.
            ValueOutOfRangeError: a value that does not fit (overflow, too long, bad date).
        """
        if source.num_columns != len(targets):
            raise SqlExecutionError(
                self.statement,
                f"the statement gives {source.num_columns} value(s) per row but {table} expects "
                f"{len(targets)} ({', '.join(name for name, _ in targets)})",
            )
        for (name, hive_type), column in zip(targets, source.columns, strict=True):
            check_assignable(table, name, column.type, hive_type)
        names = [f"c{i}" for i in range(source.num_columns)]
        registered = self.register(source.rename_columns(names))
        arrays = []
        for column_name, (name, hive_type), column in zip(names, targets, source.columns, strict=True):
            # Hive converts a fractional value to an integer column by truncation toward zero
            # (PrimitiveObjectInspectorUtils.getInt: (int) double, HiveDecimal.intValue): 1.9 -> 1.
            # DuckDB's CAST rounds (1.9 -> 2), so truncate first.
            truncate = _base(hive_type) in _INTEGERS and (
                pa.types.is_floating(column.type) or pa.types.is_decimal(column.type)
            )
            arrays.append(
                self._cast_column(registered, column_name, table, name, hive_type, truncate=truncate)
            )
        schema = pa.schema([pa.field(name, hive_to_arrow(parse_hive_type(t))) for name, t in targets])
        return pa.Table.from_arrays(arrays, schema=schema)

    def _cast_column(
        self, registered: str, column: str, table: str, name: str, hive_type: str, *, truncate: bool = False
    ) -> pa.ChunkedArray[Any]:
        target = duckdb_type(hive_type)
        base = _base(hive_type)
        length = parse_hive_type(hive_type).params[0] if base in ("varchar", "char") else None
        value = f'trunc("{column}")' if truncate else f'"{column}"'
        try:
            result = self.connection.sql(
                f"SELECT CAST({value} AS {target}) FROM {registered}"
            ).to_arrow_table()
        except duckdb.Error as e:
            bad = self.connection.execute(
                f'SELECT CAST("{column}" AS VARCHAR) FROM {registered} '
                f'WHERE "{column}" IS NOT NULL AND TRY_CAST({value} AS {target}) IS NULL LIMIT 1'
            ).fetchone()
            raise ValueOutOfRangeError(table, name, str(bad[0]) if bad else _first_line(e), hive_type) from e
        values = result.column(0)
        if length is not None:
            too_long = self.connection.execute(
                f'SELECT CAST("{column}" AS VARCHAR) FROM {registered} '
                f'WHERE length(CAST("{column}" AS VARCHAR)) > {int(length)} LIMIT 1'
            ).fetchone()
            if too_long is not None:
                raise ValueOutOfRangeError(table, name, str(too_long[0]), hive_type)
        try:
            cast_values: pa.ChunkedArray[Any] = values.cast(hive_to_arrow(parse_hive_type(hive_type)))
            return cast_values
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise ValueOutOfRangeError(table, name, str(e), hive_type) from e


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
