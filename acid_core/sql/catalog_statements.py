"""The catalog statements of Hive's documentation: DDL, SHOW and DESCRIBE, executed against the metastore.

::

    CREATE TABLE t (c type, ..) [PARTITIONED BY (k type, ..)] [CLUSTERED BY (c) INTO n BUCKETS]
        [STORED AS ORC] [LOCATION '..'] [TBLPROPERTIES ('transactional'='true'
        [, 'transactional_properties'='insert_only'])]            full ACID / insert-only / plain
    DROP TABLE [IF EXISTS] t                       X lock; managed: data removed; EXTERNAL: files kept
    CREATE DATABASE [IF NOT EXISTS] db | DROP DATABASE [IF EXISTS] db [CASCADE] | SHOW DATABASES
    DESCRIBE t | SHOW TABLES [IN db] | SHOW PARTITIONS t
    ALTER TABLE t ADD [IF NOT EXISTS] PARTITION (k='v') [LOCATION '..'] [PARTITION (..) [LOCATION '..']]
        | DROP [IF EXISTS] PARTITION (..) | [PARTITION (k='v', ..)] SET LOCATION '..'   (metadata only)
    ALTER TABLE t SET TBLPROPERTIES ('k'='v', ..) | UNSET TBLPROPERTIES [IF EXISTS] ('k', ..)
                                                   validated first (acid_core.table_properties)
    SHOW TRANSACTIONS | ABORT TRANSACTIONS id [id ..]

Locks: every statement takes exactly the locks EXPLAIN LOCKS prints for it
(``statement_support.locked``).

Locations (``acid_core.locations``): a CREATE TABLE / CREATE DATABASE / ADD PARTITION / SET
LOCATION location, given or default, is validated before anything is created or changed (also
where its symbolic links lead; a managed table's or partition's directory must be empty or new,
since its DROP deletes it all);
a DROP validates every directory it will delete before the metadata goes, deletes a managed
table's data only (Hive's rule: EXTERNAL tables keep their files), and removes a dropped database's
directory only once it is empty. ``DROP DATABASE default`` is refused, as in Hive.

Not here: SELECT and the writes (``statements``), parsing and dispatch (``engine``, ``registry``).
Errors: ``InvalidLocationError``, ``InvalidObjectNameError``, ``UnsafeDeleteError``,
``DropDefaultDatabaseError``, ``NoSuchTableError``, ``UnsupportedStatementError``, lock errors;
``InvalidTablePropertyError`` / ``InvalidCompactionConfigError`` / ``NoSuchTablePropertyError``
for a refused TBLPROPERTIES change.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final, cast

import pyarrow as pa
from sqlglot import TokenType, exp

from acid_core.errors import (
    AcidError,
    DatabaseAlreadyExistsError,
    DropDefaultDatabaseError,
    InvalidLocationError,
    InvalidPartitionError,
    InvalidTableDefinitionError,
    NoSuchDatabaseError,
    NoSuchPartitionError,
    NoSuchTableError,
    PartitionAlreadyExistsError,
    SqlSyntaxError,
    TableAlreadyExistsError,
    UnsafeDeleteError,
    UnsupportedStatementError,
)
from acid_core.fs import SUPPORTED_SCHEMES, LocalFileIO, file_io_for, real_path
from acid_core.locations import (
    Occupant,
    check_location,
    format_location,
    is_inside,
    is_same_location,
    parse_location,
    validate_object_name,
    validate_partition_value,
)
from acid_core.metastore import (
    DEFAULT_DATABASE,
    Column,
    Table,
    TableDefinition,
    format_partition_name,
    split_table_name,
)
from acid_core.sql.registry import ParsedStatement, StatementContext, StatementResult, register_statement
from acid_core.table_properties import plan_set_table_properties, plan_unset_table_properties
from acid_core.writes.bucketing import BUCKETING_VERSION_KEY, DEFAULT_BUCKETING_VERSION

if TYPE_CHECKING:
    from collections.abc import Sequence

    from acid_core.metastore import Metastore

from acid_core.sql.statement_support import HIVE_DIALECT, expression_of, locked, table_name_of

__all__: list[str] = []

_TRANSACTIONAL_FORMATS: Final = frozenset({"ORC"})


def _hive_type(column: exp.ColumnDef) -> str:
    kind = column.args.get("kind")
    if kind is None:
        raise SqlSyntaxError(column.sql(dialect=HIVE_DIALECT), "a column without a type")
    return "".join(kind.sql(dialect=HIVE_DIALECT).lower().split())


def _columns(schema: exp.Expr) -> tuple[Column, ...]:
    return tuple(
        Column(c.name.lower(), _hive_type(c)) for c in schema.expressions if isinstance(c, exp.ColumnDef)
    )


def _property_key(expression: exp.Expr) -> str:
    return str(expression.this) if isinstance(expression, exp.Literal) else expression.name


# -- location safety (acid_core.locations) --------------------------------------------------------


def _real(location: str) -> str:
    """A local location with its symbolic links resolved; other stores have none."""
    try:
        io, path = file_io_for(location)
    except AcidError:
        return location  # a scheme no filesystem serves: nothing to resolve
    return real_path(io, path) if isinstance(io, LocalFileIO) else location


def _occupants(metastore: Metastore, container: str | None = None) -> list[Occupant]:
    """Every database, table and partition location; ``container`` is a table that may hold the new one."""
    found: list[Occupant] = []
    for db_name in metastore.list_databases():
        found.append(Occupant("database", db_name, metastore.get_database(db_name).location, True))
        for name in metastore.list_tables(db_name):
            table = metastore.get_table(f"{db_name}.{name}")
            found.append(Occupant("table", table.full_name, table.location, table.full_name == container))
            if table.partition_keys:
                found.extend(
                    Occupant("partition", f"{table.full_name}/{p.name}", p.location)
                    for p in metastore.list_partitions(table.full_name)
                )
    return found


def _checked_location(context: StatementContext, candidate: str, occupants: Sequence[Occupant]) -> str:
    """Validate a location as written and where its symbolic links lead; returns the text to store.

    Raises:
        InvalidLocationError: see ``acid_core.locations.check_location``.
    """
    warehouse, cwd = context.warehouse.location, os.getcwd()
    location = format_location(
        check_location(
            candidate,
            warehouse_root=warehouse,
            occupants=occupants,
            cwd=cwd,
            supported_schemes=SUPPORTED_SCHEMES,
            allow_relative=False,
        )
    )
    real = _real(location)
    try:
        check_location(
            real,
            warehouse_root=_real(warehouse),
            occupants=[Occupant(o.kind, o.name, _real(o.location), o.may_contain) for o in occupants],
            cwd=cwd,
            supported_schemes=SUPPORTED_SCHEMES,
        )
    except InvalidLocationError as e:
        if real == location:
            raise
        raise InvalidLocationError(
            candidate, f"it leads (through a symbolic link) to {real!r}, and {e.problem}", e.expected
        ) from e
    return location


def _checked_delete(context: StatementContext, what: str, location: str, others: Sequence[Occupant]) -> str:
    """Validate a directory a DROP is about to delete, before anything is dropped.

    Raises:
        UnsafeDeleteError: the metastore row points somewhere acidflow does not own.
    """
    try:
        return _checked_location(context, location, others)
    except InvalidLocationError as e:
        raise UnsafeDeleteError(
            location,
            f"it is the location of {what}, but {e.problem}",
            "a directory that only this table owns; nothing was dropped (hint: DROP of an EXTERNAL "
            "table keeps its files)",
        ) from e


def _managed_data(context: StatementContext, table: Table, occupants: Sequence[Occupant]) -> list[str]:
    """What a DROP of a managed table deletes: its location, and each partition location outside it.

    Hive's ``drop_table_core`` (``deleteTableData``, ``deletePartitionData``): an EXTERNAL table
    keeps every file; a managed one loses its directory and its partitions' directories that lie
    elsewhere. Each is validated against every other location first.
    """
    if table.external:
        return []
    own = f"{table.full_name}/"
    mine = [o for o in occupants if o.kind == "partition" and o.name.startswith(own)]
    others = [o for o in occupants if o not in mine and not (o.kind == "table" and o.name == table.full_name)]
    targets = [_checked_delete(context, f"table {table.full_name}", table.location, others)]
    root = parse_location(targets[0], cwd=os.getcwd(), supported_schemes=SUPPORTED_SCHEMES)
    for partition in mine:
        try:
            inside = is_inside(
                parse_location(partition.location, cwd=os.getcwd(), supported_schemes=SUPPORTED_SCHEMES),
                root,
                strictly=True,
            )
        except InvalidLocationError:
            inside = False  # refused below, naming it
        if not inside:
            rest = [o for o in occupants if o != partition]
            targets.append(_checked_delete(context, f"partition {partition.name}", partition.location, rest))
    return targets


def _check_unowned_files(context: StatementContext, candidate: str, location: str) -> None:
    """A managed table's or partition's new directory must be empty or new: its DROP deletes it all.

    Raises:
        InvalidLocationError: the directory already holds files acidflow did not write.
    """
    file_io, path = context.warehouse.table_dir(location)
    if file_io.info(path) is None:
        return
    entries = sorted(child.name for child in file_io.list_dir(path))
    if entries:
        raise InvalidLocationError(
            candidate,
            f"it already holds {len(entries)} entries acidflow did not write (first {entries[0]!r}), which a "
            "DROP of a managed table would delete",
            "an empty or new directory; hint: CREATE EXTERNAL TABLE uses existing files and keeps them",
        )


def _table_exists(metastore: Metastore, name: str) -> bool:
    try:
        metastore.get_table(name)
    except NoSuchTableError:
        return False
    return True


def _delete_dirs(context: StatementContext, locations: Sequence[str]) -> None:
    for location in locations:
        file_io, path = context.warehouse.table_dir(location)
        file_io.delete_dir(path)


# -- DDL -----------------------------------------------------------------------------------------


_MAX_BUCKETS = 2**31 - 1  # Hive's numBuckets is a Java int (StorageDescriptor.numBuckets: i32)


def _bucket_count(table: str, text: str) -> int:
    # Hive's parser reads INTO n BUCKETS with Integer.parseInt: above 2^31-1 it is an error.
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= _MAX_BUCKETS:
        raise InvalidTableDefinitionError(
            table, f"{text} BUCKETS is out of range", f"INTO n BUCKETS with 1 <= n <= {_MAX_BUCKETS}"
        )
    return int(text)


@register_statement(
    "create_table",
    expression_type=exp.Create,
    predicate=lambda e: str(e.args.get("kind", "")).upper() == "TABLE",
)
def create_table(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """CREATE TABLE (full ACID, insert-only or plain; partitioned; bucketed)."""
    create = expression_of(statement)
    schema = create.this
    if not isinstance(schema, exp.Schema) or create.expression is not None:
        raise UnsupportedStatementError(
            statement.text, "CREATE TABLE without a column list", "CREATE TABLE t (c type, ...)"
        )
    name = table_name_of(cast("exp.Table", schema.this))
    partition_keys: tuple[Column, ...] = ()
    bucket_columns: tuple[str, ...] = ()
    num_buckets = -1
    properties: dict[str, str] = {}
    location: str | None = None
    file_format = "ORC"
    external = False
    props = create.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.PartitionedByProperty):
            partition_keys = _columns(prop.this)
        elif isinstance(prop, exp.ClusteredByProperty):
            bucket_columns = tuple(c.name.lower() for c in prop.expressions)
            num_buckets = _bucket_count(name, str(prop.args["buckets"].this))
        elif isinstance(prop, exp.FileFormatProperty):
            file_format = prop.this.name.upper() if prop.this is not None else "ORC"
        elif isinstance(prop, exp.LocationProperty):
            location = str(prop.this.this)
        elif isinstance(prop, exp.ExternalProperty):
            external = True
        elif isinstance(prop, exp.Property):
            properties[_property_key(prop.this).lower()] = str(prop.args["value"].this)
    if file_format not in _TRANSACTIONAL_FORMATS:
        raise UnsupportedStatementError(
            statement.text, f"STORED AS {file_format}", "STORED AS ORC (acidflow writes ORC files only)"
        )
    if bucket_columns:
        properties.setdefault(BUCKETING_VERSION_KEY, str(DEFAULT_BUCKETING_VERSION))
    metastore = context.warehouse.metastore
    database_name, table_name = split_table_name(name)
    validate_object_name("database", database_name)
    validate_object_name("table", table_name)
    if not _table_exists(metastore, name):
        # The default location is checked too: an earlier LOCATION may have taken it.
        default = f"{metastore.get_database(database_name).location.rstrip('/')}/{table_name}"
        checked = _checked_location(context, default if location is None else location, _occupants(metastore))
        if not external:
            _check_unowned_files(context, default if location is None else location, checked)
        location = checked if location is not None else None
    definition = TableDefinition(
        name=name,
        columns=_columns(schema),
        partition_keys=partition_keys,
        bucket_columns=bucket_columns,
        num_buckets=num_buckets,
        properties=properties,
        location=location,
        external=external,
        owner=context.warehouse.user,
    )
    try:
        table = metastore.create_table(definition)
    except TableAlreadyExistsError:
        if create.args.get("exists"):
            return StatementResult("create_table", message=f"OK: table {name} already exists")
        raise
    file_io, path = context.warehouse.table_dir(table.location)
    file_io.mkdirs(path)
    return StatementResult(
        "create_table", message=f"OK: created {table.table_type.value} table {table.full_name}"
    )


@register_statement(
    "drop_table", expression_type=exp.Drop, predicate=lambda e: str(e.args.get("kind", "")).upper() == "TABLE"
)
def drop_table(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """DROP TABLE [IF EXISTS]: the metastore entry and, for managed tables only, the data (as Hive).

    A managed table's data is its location and its partitions' locations outside it, each
    validated first (``_managed_data``); an EXTERNAL table keeps every file.
    """
    drop = expression_of(statement)
    metastore = context.warehouse.metastore
    dropped = []
    with locked(context, statement):
        for target in drop.args.get("tables") or [drop.this]:
            name = table_name_of(target)
            try:
                table = metastore.get_table(name)
            except NoSuchTableError:
                if drop.args.get("exists"):
                    continue
                raise
            # Every directory is validated before the metadata goes; the metadata goes before the
            # files, so a crash in between leaves files without a table, never a table without files.
            targets = _managed_data(context, table, _occupants(metastore))
            metastore.drop_table(table.full_name)
            _delete_dirs(context, targets)
            dropped.append(table.full_name)
    return StatementResult("drop_table", message=f"OK: dropped {', '.join(dropped) or 'nothing'}")


@register_statement(
    "create_database",
    expression_type=exp.Create,
    predicate=lambda e: str(e.args.get("kind", "")).upper() in ("DATABASE", "SCHEMA"),
)
def create_database(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """CREATE DATABASE [IF NOT EXISTS] db [COMMENT '..'] [LOCATION '..'] (default ``<warehouse>/db.db``)."""
    create = expression_of(statement)
    name = create.this.name.lower()
    location = description = None
    props = create.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.LocationProperty):
            location = str(prop.this.this)
        elif isinstance(prop, exp.SchemaCommentProperty):
            description = str(prop.this.this)
    metastore = context.warehouse.metastore
    validate_object_name("database", name)
    if name not in metastore.list_databases():
        default = f"{context.warehouse.location.rstrip('/')}/{name}.db"
        checked = _checked_location(context, default if location is None else location, _occupants(metastore))
        location = checked if location is not None else None
    try:
        database = metastore.create_database(name, location, description, context.warehouse.user)
    except DatabaseAlreadyExistsError:
        if create.args.get("exists"):
            return StatementResult("create_database", message=f"OK: database {name} already exists")
        raise
    file_io, path = context.warehouse.table_dir(database.location)
    file_io.mkdirs(path)
    return StatementResult("create_database", message=f"OK: created database {name} at {database.location}")


@register_statement(
    "drop_database",
    expression_type=exp.Drop,
    predicate=lambda e: str(e.args.get("kind", "")).upper() in ("DATABASE", "SCHEMA"),
)
def drop_database(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """DROP DATABASE [IF EXISTS] db [CASCADE]: ``default`` is refused; CASCADE drops the tables.

    As Hive's ``drop_database_core``: managed tables lose their data (validated first, wherever
    it lies), EXTERNAL tables keep it; the database directory goes only once it is empty.
    """
    drop = expression_of(statement)
    metastore = context.warehouse.metastore
    dropped = []
    kept = []
    for target in drop.args.get("tables") or [drop.this]:
        name = (target.name or target.db).lower()  # sqlglot reads DROP SCHEMA x as a db name
        if name == DEFAULT_DATABASE:
            raise DropDefaultDatabaseError(name)  # HiveMetaStore.drop_database, before anything else
        try:
            database = metastore.get_database(name)
        except NoSuchDatabaseError:
            if drop.args.get("exists"):
                continue
            raise
        tables = [metastore.get_table(f"{name}.{t}") for t in metastore.list_tables(name)]
        targets: list[str] = []
        if tables and drop.args.get("cascade"):
            occupants = _occupants(metastore)
            for table in tables:
                targets.extend(_managed_data(context, table, occupants))
        metastore.drop_database(name, cascade=bool(drop.args.get("cascade")))
        _delete_dirs(context, targets)
        if not _remove_if_empty(context, database.location):
            kept.append(database.location)
        dropped.append(name)
    message = f"OK: dropped {', '.join(dropped) or 'nothing'}"
    if kept:
        message += (
            f"; kept {', '.join(kept)}: not empty or not only the database's (EXTERNAL table data or "
            "files acidflow does not own)"
        )
    return StatementResult("drop_database", message=message)


def _remove_if_empty(context: StatementContext, location: str) -> bool:
    """Remove a dropped database's directory if nothing is left in it; whether it is gone.

    Hive deletes the whole directory; acidflow deletes only what it owns (the managed tables'
    directories, removed before), so EXTERNAL tables' files and foreign files inside it stay.
    """
    try:  # the database is gone from the metastore: its directory must overlap nothing left
        location = _checked_location(context, location, _occupants(context.warehouse.metastore))
    except InvalidLocationError:
        return False
    file_io, path = context.warehouse.table_dir(location)
    if file_io.info(path) is None:
        return True
    if file_io.list_dir(path):
        return False
    file_io.delete_dir(path)
    return True


@register_statement("show_databases", pattern=r"SHOW\s+(?:DATABASES|SCHEMAS)")
def show_databases(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """SHOW DATABASES."""
    names = context.warehouse.metastore.list_databases()
    return StatementResult("show_databases", rows=_table_rows(["database_name"], [(n,) for n in names]))


def _table_rows(header: Sequence[str], rows: Sequence[Sequence[object]]) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in header]
    return pa.table(
        {name: pa.array(list(values), pa.string()) for name, values in zip(header, columns, strict=True)}
    )


@register_statement("describe", expression_type=exp.Describe)
def describe(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """DESCRIBE t: col_name, data_type, comment (partition keys after a Hive-style header)."""
    table = context.warehouse.metastore.get_table(
        table_name_of(cast("exp.Table", expression_of(statement).this))
    )
    rows: list[tuple[str, str, str]] = [(c.name, c.type, "") for c in (*table.columns, *table.partition_keys)]
    if table.partition_keys:
        rows += [("", "", ""), ("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        rows += [(c.name, c.type, "") for c in table.partition_keys]
    return StatementResult("describe", rows=_table_rows(["col_name", "data_type", "comment"], rows))


@register_statement(
    "show_tables",
    pattern=r"SHOW\s+TABLES(?:\s+(?:IN|FROM)\s+`?(?P<db>\w+)`?)?(?:\s+(?:LIKE\s+)?'(?P<like>[^']*)')?",
)
def show_tables(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """SHOW TABLES [IN db] [LIKE 'pattern'] (Hive's ``*`` and ``|`` wildcards)."""
    import fnmatch

    assert statement.match is not None  # noqa: S101 - pattern-registered
    database = (statement.match.group("db") or "default").lower()
    names = context.warehouse.metastore.list_tables(database)
    like = statement.match.group("like")
    if like:
        names = [n for n in names if any(fnmatch.fnmatch(n, p.strip().lower()) for p in like.split("|"))]
    return StatementResult("show_tables", rows=_table_rows(["tab_name"], [(n,) for n in names]))


@register_statement("show_partitions", pattern=r"SHOW\s+PARTITIONS\s+(?P<table>[\w.`]+)")
def show_partitions(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """SHOW PARTITIONS t."""
    assert statement.match is not None  # noqa: S101 - pattern-registered
    partitions = context.warehouse.metastore.list_partitions(statement.match.group("table").replace("`", ""))
    return StatementResult(
        "show_partitions", rows=_table_rows(["partition"], [(p.name,) for p in partitions])
    )


@register_statement("show_transactions", pattern=r"SHOW\s+TRANSACTIONS")
def show_transactions(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """SHOW TRANSACTIONS: open and aborted transactions (Hive's columns; times in epoch ms)."""
    infos = context.warehouse.metastore.show_transactions()
    rows = pa.table(
        {
            "txnid": pa.array([i.txn_id for i in infos], pa.int64()),
            "state": pa.array([i.state.value.upper() for i in infos], pa.string()),
            "startedtime": pa.array([round(i.started * 1000) for i in infos], pa.int64()),
            "lastheartbeattime": pa.array([round(i.last_heartbeat * 1000) for i in infos], pa.int64()),
            "user": pa.array([i.user for i in infos], pa.string()),
            "host": pa.array([i.host for i in infos], pa.string()),
        }
    )
    return StatementResult("show_transactions", rows=rows)


@register_statement("abort_transactions", pattern=r"ABORT\s+TRANSACTIONS\s+(?P<ids>\d+(?:[\s,]+\d+)*)")
def abort_transactions(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """ABORT TRANSACTIONS id [id ..]: their writes become invisible for good."""
    assert statement.match is not None  # noqa: S101 - pattern-registered
    ids = [int(t) for t in statement.match.group("ids").replace(",", " ").split()]
    for txn_id in ids:
        context.warehouse.metastore.abort_txn(txn_id)
    return StatementResult(
        "abort_transactions", message=f"OK: aborted transaction(s) {', '.join(map(str, ids))}"
    )


def _partition_specs(text: str) -> list[tuple[list[tuple[str, str | None]], str | None]]:
    """The ``PARTITION (k=v, ..) [LOCATION '..']`` specs of an ALTER TABLE text (Hive tokenizer)."""
    tokens = HIVE_DIALECT.tokenize(text)
    specs: list[tuple[list[tuple[str, str | None]], str | None]] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if (
            token.text.upper() == "PARTITION"
            and index + 1 < len(tokens)
            and tokens[index + 1].token_type is TokenType.L_PAREN
        ):
            index += 2
            spec: list[tuple[str, str | None]] = []
            while index < len(tokens) and tokens[index].token_type is not TokenType.R_PAREN:
                key = tokens[index]
                if index + 2 >= len(tokens) or tokens[index + 1].token_type is not TokenType.EQ:
                    raise SqlSyntaxError(text, f"partition key {key.text!r} without '=value'")
                value = tokens[index + 2]
                spec.append(
                    (key.text.strip("`").lower(), None if value.token_type is TokenType.NULL else value.text)
                )
                index += 3
                if index < len(tokens) and tokens[index].token_type is TokenType.COMMA:
                    index += 1
            location = None
            if index + 1 < len(tokens) and tokens[index + 1].text.upper() == "LOCATION":
                # Hive's ADD PARTITION (..) LOCATION 'path': the partition's data lives there.
                if index + 2 >= len(tokens) or tokens[index + 2].token_type is not TokenType.STRING:
                    raise SqlSyntaxError(text, "LOCATION without a quoted path")
                location = tokens[index + 2].text
                index += 2
            specs.append((spec, location))
        index += 1
    if not specs:
        raise SqlSyntaxError(text, "no PARTITION (k=v, ...) spec")
    return specs


@register_statement(
    "alter_table_partition",
    pattern=r"ALTER\s+TABLE\s+(?P<table>[\w.`]+)\s+(?P<action>ADD|DROP)\s+(?P<cond>IF\s+(?:NOT\s+)?EXISTS\s+)?(?P<specs>PARTITION\b.*)",
)
def alter_table_partition(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """ALTER TABLE t ADD [IF NOT EXISTS] PARTITION (..) [LOCATION '..'] .. / DROP [IF EXISTS] PARTITION (..) ..

    An added partition's location (given, or ``<table>/<k=v>``) is validated like a table's; a
    dropped partition of a managed table loses its directory, validated first, wherever it lies.
    """
    match = statement.match
    assert match is not None  # noqa: S101 - pattern-registered
    metastore = context.warehouse.metastore
    table = metastore.get_table(match.group("table").replace("`", ""))
    adding = match.group("action").upper() == "ADD"
    keys = [k.name for k in table.partition_keys]
    done = []
    specs = _partition_specs(match.group("specs"))
    if not adding and any(location is not None for _, location in specs):
        raise SqlSyntaxError(statement.text, "LOCATION in DROP PARTITION")
    # One lock set for the whole statement (every spec's partition, in the table's key order).
    with locked(context, statement):
        for spec, location in specs:
            given = dict(spec)
            # The table's key order, whatever order the spec is written in (Hive's partition name).
            values = {k: given[k] for k in keys if k in given} | given
            shown = format_partition_name(list(values), list(values.values()))
            try:
                if adding:
                    _add_partition(context, table, values, location)
                else:
                    _drop_partition(context, table, values, shown)
            except (PartitionAlreadyExistsError, NoSuchPartitionError):
                if match.group("cond"):
                    continue
                raise
            done.append(shown)
    verb = "added" if adding else "dropped"
    return StatementResult(
        "alter_table_partition", message=f"OK: {verb} {', '.join(done) or 'nothing'} of {table.full_name}"
    )


def _add_partition(
    context: StatementContext, table: Table, values: dict[str, str | None], location: str | None
) -> None:
    metastore = context.warehouse.metastore
    keys = [k.name for k in table.partition_keys]
    if not keys or sorted(values) != sorted(keys):
        expected = (
            f"exactly the partition keys {keys!r}" if keys else "no partition (the table is unpartitioned)"
        )
        raise InvalidPartitionError(table.full_name, dict(values), expected)
    for value in values.values():
        validate_partition_value(value)
    name = format_partition_name(keys, [values[k] for k in keys])
    if name in {p.name for p in metastore.list_partitions(table.full_name)}:
        raise PartitionAlreadyExistsError(table.full_name, name)
    default = f"{table.location.rstrip('/')}/{name}"
    checked = _checked_location(
        context, default if location is None else location, _occupants(metastore, container=table.full_name)
    )
    if location is not None:
        _check_not_another_partitions_default(table, location, checked, default)
    if not table.external:
        _check_unowned_files(context, default if location is None else location, checked)
    partition = metastore.add_partition(table.full_name, values, checked if location is not None else None)
    file_io, path = context.warehouse.table_dir(partition.location)
    file_io.mkdirs(path)


def _check_not_another_partitions_default(table: Table, candidate: str, checked: str, default: str) -> None:
    # Inside the table, only the partition's own default directory: any other path there may be
    # the default directory of a partition added later (an INSERT's dynamic partition), and two
    # partitions sharing a directory would lose each other's rows on DROP PARTITION.
    cwd = os.getcwd()
    here = parse_location(checked, cwd=cwd, supported_schemes=SUPPORTED_SCHEMES)
    root = parse_location(table.location, cwd=cwd, supported_schemes=SUPPORTED_SCHEMES)
    if is_inside(here, root, strictly=True) and not is_same_location(
        here, parse_location(default, cwd=cwd, supported_schemes=SUPPORTED_SCHEMES)
    ):
        raise InvalidLocationError(
            candidate,
            f"it is inside the location of table {table.full_name} but not the partition's own directory",
            f"{default!r} or a directory outside the table",
        )


@register_statement(
    "alter_table_set_location",
    pattern=r"ALTER\s+TABLE\s+(?P<table>[\w.`]+)(?:\s+(?P<spec>PARTITION\s*\(.*\)))?\s+SET\s+LOCATION\s+(?P<location>\S.*?)\s*;?",
)
def alter_table_set_location(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """ALTER TABLE t [PARTITION (k='v', ..)] SET LOCATION '..': metadata only, no file moves (Hive).

    The new location is validated exactly like CREATE TABLE / ADD PARTITION .. LOCATION (every
    refused case of ``acid_core.locations``, symbolic links, and for a managed table an empty or
    new directory, since its DROP deletes it all), under an exclusive lock on the table or
    partition. The table's partitions keep their own locations, and its files stay where they are.
    """
    match = statement.match
    assert match is not None  # noqa: S101 - pattern-registered
    tokens = HIVE_DIALECT.tokenize(match.group("location"))
    if len(tokens) != 1 or tokens[0].token_type is not TokenType.STRING:
        raise SqlSyntaxError(statement.text, "SET LOCATION without a quoted path")
    location = tokens[0].text
    metastore = context.warehouse.metastore
    table = metastore.get_table(match.group("table").replace("`", ""))
    with locked(context, statement):
        if match.group("spec") is None:
            partition, current = None, table.location
            own = f"{table.full_name}/"
            occupants = [
                o
                for o in _occupants(metastore)
                if not (o.kind == "table" and o.name == table.full_name) and not o.name.startswith(own)
            ]
        else:
            partition = _partition_to_alter(context, table, match.group("spec"))
            current = next(
                p.location for p in metastore.list_partitions(table.full_name) if p.name == partition
            )
            mine = f"{table.full_name}/{partition}"
            occupants = [
                o
                for o in _occupants(metastore, container=table.full_name)
                if o.name != mine or o.kind != "partition"
            ]
        checked = _checked_location(context, location, occupants)
        shown = table.full_name if partition is None else f"{table.full_name} partition {partition}"
        if checked == current:
            return StatementResult(
                "alter_table_set_location", message=f"OK: {shown} is already at {checked!r}"
            )
        if partition is not None:
            default = f"{table.location.rstrip('/')}/{partition}"
            _check_not_another_partitions_default(table, location, checked, default)
        if not table.external:
            _check_unowned_files(context, location, checked)
        metastore.set_location(table.full_name, partition, checked)
    return StatementResult(
        "alter_table_set_location",
        message=f"OK: location of {shown} set to {checked!r} (no files moved: {current!r} keeps them)",
    )


def _property_list(text: str, statement: str, with_values: bool) -> list[tuple[str, str]]:
    """The ``'k'='v', ..`` (``with_values``) or ``'k', ..`` list of a TBLPROPERTIES clause (Hive's grammar)."""
    expected = "'key'='value' pairs" if with_values else "'key' strings"
    tokens = HIVE_DIALECT.tokenize(text)
    step = 4 if with_values else 2  # 'k' = 'v' ,  /  'k' ,
    pairs: list[tuple[str, str]] = []
    for start in range(0, len(tokens), step):
        item = tokens[start : start + step - 1]
        kinds = [token.token_type for token in item]
        wanted = [TokenType.STRING, TokenType.EQ, TokenType.STRING] if with_values else [TokenType.STRING]
        separator = tokens[start + step - 1] if start + step - 1 < len(tokens) else None
        if kinds != wanted or (separator is not None and separator.token_type is not TokenType.COMMA):
            shown = " ".join(token.text for token in tokens[start : start + step])
            raise SqlSyntaxError(statement, f"TBLPROPERTIES item {shown!r} is not one of {expected}")
        if separator is not None and start + step >= len(tokens):
            raise SqlSyntaxError(statement, f"a ',' after the last TBLPROPERTIES item; expected {expected}")
        pairs.append((item[0].text, item[-1].text if with_values else ""))
    if not pairs:
        raise SqlSyntaxError(statement, f"an empty TBLPROPERTIES list; expected {expected}")
    return pairs


@register_statement(
    "alter_table_properties",
    pattern=r"ALTER\s+TABLE\s+(?P<table>[\w.`]+)\s+(?P<action>SET|UNSET)\s+TBLPROPERTIES\s*"
    r"(?P<cond>IF\s+EXISTS\s*)?\((?P<properties>.*)\)\s*;?",
)
def alter_table_properties(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """ALTER TABLE t SET TBLPROPERTIES ('k'='v', ..) / UNSET TBLPROPERTIES [IF EXISTS] ('k', ..).

    Validated before anything changes (``acid_core.table_properties``: the initiator's parsing of
    compactor overrides, Hive's rules for ``transactional``), under the statement's lock; the
    initiator reads the new properties on its next cycle.
    """
    match = statement.match
    assert match is not None  # noqa: S101 - pattern-registered
    unsetting = match.group("action").upper() == "UNSET"
    if match.group("cond") and not unsetting:
        raise SqlSyntaxError(statement.text, "IF EXISTS after SET TBLPROPERTIES (only UNSET takes it)")
    pairs = _property_list(match.group("properties"), statement.text, with_values=not unsetting)
    metastore = context.warehouse.metastore
    name = match.group("table").replace("`", "")
    with locked(context, statement):
        table = metastore.get_table(name)  # under the lock: the properties this change replaces
        if unsetting:
            change = plan_unset_table_properties(
                table.full_name, table.properties, [k for k, _ in pairs], if_exists=bool(match.group("cond"))
            )
        else:
            change = plan_set_table_properties(
                table.full_name, table.properties, dict(pairs), external=table.external
            )
        metastore.alter_table_properties(table.full_name, change.set_properties, change.unset)
    if unsetting:
        done = f"unset {', '.join(change.unset) or 'nothing (no such keys)'}"
    else:
        done = "set " + ", ".join(f"{k}={v!r}" for k, v in change.set_properties.items())
    return StatementResult(
        "alter_table_properties", message=f"OK: TBLPROPERTIES of {table.full_name}: {done}"
    )


def _partition_to_alter(context: StatementContext, table: Table, spec_text: str) -> str:
    """The existing partition a full ``PARTITION (k='v', ..)`` spec names (Hive's partition name).

    Raises:
        InvalidPartitionError: not exactly the table's partition keys.
        NoSuchPartitionError: no such partition.
    """
    specs = _partition_specs(spec_text)
    keys = [k.name for k in table.partition_keys]
    given = dict(specs[0][0])
    if len(specs) != 1 or specs[0][1] is not None or not keys or sorted(given) != sorted(keys):
        expected = f"one spec with exactly the partition keys {keys!r}" if keys else "no partition spec"
        raise InvalidPartitionError(table.full_name, given, expected)
    name = format_partition_name(keys, [given[k] for k in keys])
    if name not in {p.name for p in context.warehouse.metastore.list_partitions(table.full_name)}:
        raise NoSuchPartitionError(table.full_name, name)
    return name


def _drop_partition(
    context: StatementContext, table: Table, values: dict[str, str | None], shown: str
) -> None:
    metastore = context.warehouse.metastore
    found = {p.name: p for p in metastore.list_partitions(table.full_name)}
    targets: list[str] = []
    if shown in found and not table.external:
        occupants = _occupants(metastore, container=table.full_name)
        own = Occupant("partition", f"{table.full_name}/{shown}", found[shown].location)
        rest = [o for o in occupants if o != own]
        targets.append(_checked_delete(context, f"partition {own.name}", own.location, rest))
    metastore.drop_partition(table.full_name, values)
    _delete_dirs(context, targets)


# -- queries -------------------------------------------------------------------------------------
