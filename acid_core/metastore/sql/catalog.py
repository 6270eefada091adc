"""``SqlMetastore``'s catalog: databases, tables and partitions (Hive's DBS, TBLS, PARTITIONS).

Not here: transactions (``sql.txns``). Errors: ``NoSuch*Error`` for misses, ``*AlreadyExistsError``
for duplicates, ``InvalidTableDefinitionError`` / ``InvalidPartitionError`` for bad input.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from acid_core.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    InvalidPartitionError,
    InvalidTableDefinitionError,
    NoSuchPartitionError,
    PartitionAlreadyExistsError,
)
from acid_core.locations import (
    validate_column_name,
    validate_object_name,
    validate_partition_value,
)
from acid_core.metastore.sql.models import (
    CompactionQueueEntry,
    CompletedCompaction,
    CompletedTxnComponent,
    DatabaseRow,
    InitiatorMarkRow,
    NextWriteId,
    PartitionRow,
    ReaderLease,
    TableRow,
    TxnComponent,
    TxnToWriteId,
    WriteSetEntry,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from sqlalchemy.orm import Session


from acid_core.metastore.port import (
    DEFAULT_DATABASE,
    Database,
    Partition,
    Table,
    TableDefinition,
    format_partition_name,
    split_table_name,
    table_type_from_properties,
)
from acid_core.metastore.sql.base import (
    SqlMetastoreBase,
    _normalize_database_name,
    _table_exists_error,
    _table_from_row,
)


def _validate_definition(definition: TableDefinition, full_name: str) -> None:
    if not definition.columns:
        raise InvalidTableDefinitionError(full_name, "no columns", "at least one column")
    names = [c.name.lower() for c in (*definition.columns, *definition.partition_keys)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidTableDefinitionError(
            full_name, f"column {duplicates[0]!r} is declared twice", "unique names across columns and keys"
        )
    for column in (*definition.columns, *definition.partition_keys):
        validate_column_name(column.name)
        if not column.name or not column.type:
            raise InvalidTableDefinitionError(full_name, f"column {column!r}", "a non-empty name and type")
    column_names = {c.name.lower() for c in definition.columns}
    for bucket_column in definition.bucket_columns:
        if bucket_column.lower() not in column_names:
            raise InvalidTableDefinitionError(
                full_name,
                f"bucket column {bucket_column!r} is not a column",
                f"one of {sorted(column_names)}",
            )
    if definition.bucket_columns and definition.num_buckets < 1:
        raise InvalidTableDefinitionError(
            full_name,
            f"num_buckets {definition.num_buckets!r}",
            "CLUSTERED BY ... INTO n BUCKETS with n >= 1",
        )
    if not definition.bucket_columns and definition.num_buckets not in (-1, 0):
        raise InvalidTableDefinitionError(
            full_name,
            f"num_buckets {definition.num_buckets!r} without bucket columns",
            "-1 when not bucketed",
        )


class SqlCatalogPart(SqlMetastoreBase):
    """``SqlMetastore``'s catalog."""

    def create_database(
        self, name: str, location: str | None = None, description: str | None = None, owner: str | None = None
    ) -> Database:
        """See ``Metastore.create_database``."""
        db_name = validate_object_name("database", _normalize_database_name(name))
        where = location or f"{self._warehouse}/{db_name}.db"
        with self._transaction("create_database", lambda: DatabaseAlreadyExistsError(db_name)) as s:
            if s.scalar(select(DatabaseRow.db_id).where(DatabaseRow.name == db_name)) is not None:
                raise DatabaseAlreadyExistsError(db_name)
            s.add(
                DatabaseRow(
                    name=db_name,
                    description=description,
                    location=where,
                    owner=owner,
                    create_time=self._now_ms(None),
                )
            )
        return Database(db_name, where, description, owner)

    def get_database(self, name: str) -> Database:
        """See ``Metastore.get_database``."""
        with self._transaction("get_database") as s:
            row = self._database_row(s, _normalize_database_name(name))
            return Database(row.name, row.location, row.description, row.owner)

    def list_databases(self) -> list[str]:
        """See ``Metastore.list_databases``."""
        with self._transaction("list_databases") as s:
            return list(s.scalars(select(DatabaseRow.name).order_by(DatabaseRow.name)))

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """See ``Metastore.drop_database``."""
        db_name = _normalize_database_name(name)
        with self._transaction("drop_database") as s:
            row = self._database_row(s, db_name)
            tables = list(
                s.scalars(select(TableRow.name).where(TableRow.db_id == row.db_id).order_by(TableRow.name))
            )
            if tables and not cascade:
                raise DatabaseNotEmptyError(db_name, tables)
            for table in tables:
                self._drop_table_records(s, db_name, table)
            s.execute(
                delete(PartitionRow).where(
                    PartitionRow.tbl_id.in_(select(TableRow.tbl_id).where(TableRow.db_id == row.db_id))
                )
            )
            s.execute(delete(TableRow).where(TableRow.db_id == row.db_id))
            s.execute(delete(DatabaseRow).where(DatabaseRow.db_id == row.db_id))

    def create_table(self, definition: TableDefinition) -> Table:
        """See ``Metastore.create_table``."""
        database, name = split_table_name(definition.name)
        full_name = f"{database}.{name}"
        validate_object_name("table", name)  # MetaStoreUtils.validateName, as create_table_core
        _validate_definition(definition, full_name)
        already = functools.partial(_table_exists_error, full_name)
        with self._transaction("create_table", already) as s:
            db_row = self._database_row(s, database)
            exists = s.scalar(
                select(TableRow.tbl_id).where(TableRow.db_id == db_row.db_id, TableRow.name == name)
            )
            if exists is not None:
                raise already()
            row = TableRow(
                db_id=db_row.db_id,
                name=name,
                tbl_type="EXTERNAL_TABLE" if definition.external else "MANAGED_TABLE",
                transactional_type=table_type_from_properties(definition.properties).value,
                location=definition.location or f"{db_row.location.rstrip('/')}/{name}",
                columns=[{"name": c.name.lower(), "type": c.type} for c in definition.columns],
                partition_keys=[{"name": c.name.lower(), "type": c.type} for c in definition.partition_keys],
                bucket_columns=[c.lower() for c in definition.bucket_columns],
                num_buckets=definition.num_buckets if definition.bucket_columns else -1,
                properties={str(k): str(v) for k, v in definition.properties.items()},
                owner=definition.owner,
                create_time=self._now_ms(None),
            )
            s.add(row)
            # Hive creates NEXT_WRITE_ID lazily; creating it here lets allocation always lock a row.
            s.execute(delete(NextWriteId).where(NextWriteId.database == database, NextWriteId.table == name))
            s.add(NextWriteId(database=database, table=name, next_write_id=1))
            s.flush()
            return _table_from_row(database, row)

    def get_table(self, name: str) -> Table:
        """See ``Metastore.get_table``."""
        database, table = split_table_name(name)
        with self._transaction("get_table") as s:
            return _table_from_row(database, self._table_row(s, database, table))

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """See ``Metastore.list_tables``."""
        with self._transaction("list_tables") as s:
            row = self._database_row(s, _normalize_database_name(database))
            return list(
                s.scalars(select(TableRow.name).where(TableRow.db_id == row.db_id).order_by(TableRow.name))
            )

    def drop_table(self, name: str) -> None:
        """See ``Metastore.drop_table``."""
        database, table = split_table_name(name)
        with self._transaction("drop_table") as s:
            row = self._table_row(s, database, table)
            s.execute(delete(PartitionRow).where(PartitionRow.tbl_id == row.tbl_id))
            s.execute(delete(TableRow).where(TableRow.tbl_id == row.tbl_id))
            self._drop_table_records(s, database, table)

    @staticmethod
    def _drop_table_records(s: Session, database: str, table: str) -> None:
        # TxnHandler.cleanupRecords: forget every transactional record of the dropped table.
        for model, db_col, tbl_col in (
            (TxnComponent, TxnComponent.database, TxnComponent.table),
            (CompletedTxnComponent, CompletedTxnComponent.database, CompletedTxnComponent.table),
            (CompactionQueueEntry, CompactionQueueEntry.database, CompactionQueueEntry.table),
            (CompletedCompaction, CompletedCompaction.database, CompletedCompaction.table),
            (TxnToWriteId, TxnToWriteId.database, TxnToWriteId.table),
            (NextWriteId, NextWriteId.database, NextWriteId.table),
            (WriteSetEntry, WriteSetEntry.database, WriteSetEntry.table),
            (ReaderLease, ReaderLease.database, ReaderLease.table),
            (InitiatorMarkRow, InitiatorMarkRow.database, InitiatorMarkRow.table),
        ):
            s.execute(delete(model).where(db_col == database, tbl_col == table))

    def _partition_name(self, table: Table, values: Mapping[str, str | None]) -> tuple[str, tuple[str, ...]]:
        keys = [k.name for k in table.partition_keys]
        given = {str(k).lower(): v for k, v in values.items()}
        if not keys or sorted(given) != sorted(keys):
            expected = (
                f"exactly the partition keys {keys!r}"
                if keys
                else "no partition (the table is unpartitioned)"
            )
            raise InvalidPartitionError(table.full_name, dict(values), expected)
        ordered = [validate_partition_value(given[k]) for k in keys]
        return format_partition_name(keys, ordered), tuple("" if v is None else str(v) for v in ordered)

    def add_partition(
        self, table: str, values: Mapping[str, str | None], location: str | None = None
    ) -> Partition:
        """See ``Metastore.add_partition``."""
        database, name = split_table_name(table)
        with self._transaction(
            "add_partition", lambda: PartitionAlreadyExistsError(f"{database}.{name}", repr(dict(values)))
        ) as s:
            row = self._table_row(s, database, name)
            value = _table_from_row(database, row)
            part_name, part_values = self._partition_name(value, values)
            exists = s.scalar(
                select(PartitionRow.part_id).where(
                    PartitionRow.tbl_id == row.tbl_id, PartitionRow.name == part_name
                )
            )
            if exists is not None:
                raise PartitionAlreadyExistsError(value.full_name, part_name)
            where = location or f"{row.location.rstrip('/')}/{part_name}"
            created = self._now_ms(None)
            s.add(
                PartitionRow(
                    tbl_id=row.tbl_id,
                    name=part_name,
                    values=list(part_values),
                    location=where,
                    create_time=created,
                )
            )
        return Partition(value.full_name, part_name, part_values, where, created / 1000)

    def drop_partition(self, table: str, values: Mapping[str, str | None]) -> None:
        """See ``Metastore.drop_partition``."""
        database, name = split_table_name(table)
        with self._transaction("drop_partition") as s:
            row = self._table_row(s, database, name)
            part_name, _ = self._partition_name(_table_from_row(database, row), values)
            result = s.execute(
                delete(PartitionRow).where(PartitionRow.tbl_id == row.tbl_id, PartitionRow.name == part_name)
            )
            if result.rowcount == 0:  # type: ignore[attr-defined]
                raise NoSuchPartitionError(f"{database}.{name}", part_name)

    def set_location(self, table: str, partition: str | None, location: str) -> None:
        """See ``Metastore.set_location``."""
        database, name = split_table_name(table)
        with self._transaction("set_location") as s:
            row = self._table_row(s, database, name)
            if partition is None:
                row.location = location
                return
            part = s.scalars(
                select(PartitionRow).where(PartitionRow.tbl_id == row.tbl_id, PartitionRow.name == partition)
            ).one_or_none()
            if part is None:
                raise NoSuchPartitionError(f"{database}.{name}", partition)
            part.location = location

    def alter_table_properties(
        self, table: str, set_properties: Mapping[str, str], unset: Iterable[str] = ()
    ) -> Table:
        """See ``Metastore.alter_table_properties``: one database transaction."""
        database, name = split_table_name(table)
        removed = set(unset)
        with self._transaction("alter_table_properties") as s:
            row = self._table_row(s, database, name)
            properties = {k: v for k, v in row.properties.items() if k not in removed}
            properties.update({str(k): str(v) for k, v in set_properties.items()})
            row.properties = properties
            row.transactional_type = table_type_from_properties(properties).value
            s.flush()
            return _table_from_row(database, row)

    def list_partitions(self, table: str) -> list[Partition]:
        """See ``Metastore.list_partitions``."""
        database, name = split_table_name(table)
        with self._transaction("list_partitions") as s:
            row = self._table_row(s, database, name)
            # Columns, not ORM objects: a table of 100,000 partitions skips the identity map.
            parts = s.execute(
                select(
                    PartitionRow.name, PartitionRow.values, PartitionRow.location, PartitionRow.create_time
                )
                .where(PartitionRow.tbl_id == row.tbl_id)
                .order_by(PartitionRow.name)
            )
            full_name = f"{database}.{name}"
            return [
                Partition(full_name, part_name, tuple(values), location, create_time / 1000)
                for part_name, values, location, create_time in parts
            ]
