"""The ``hiveacid`` PySpark data source: Spark reads and writes Hive full-ACID tables through acidflow.

With the JVM reader's jar on the class path (``pyspark_hiveacid.jvm``), Spark finds the Java
``hiveacid`` first; it reads by itself (planning through ``pyspark_hiveacid.planner``, which calls
``load_read_plan`` here) and hands this source every write and the reads with ``engine='python'``.

Reading, ``spark.read.format("hiveacid").load("db.t")``::

    driver (planning)                                       executors (one task per input partition)
      schema()      metastore table -> data columns,          read(AcidInputPartition)
                    then partition columns (+ row__id         scan(plan=<that bucket's files>,
                    when asked: option columns / .schema())        write_ids, txns, columns)
      pushFilters() (option pushdown) keeps filters on            -> Arrow batches of batch_rows
                    partition columns (pruning); others go       + partition values as constants
                    back to Spark                                (memory: the bucket's delete set
      partitions()  ONE snapshot (a lease), then for each         plus one batch)
                    pruned partition (option partitions,
                    pushed filters): plan_scan ->
                    one input partition per bucket with
                    its base / delta / delete-delta files

Writing, ``df.write.format("hiveacid").mode("append" | "overwrite").save("db.t")``::

    driver  writer()  open_txn, the table locks Hive's writer takes (append SHARED, overwrite
                      EXCLUSIVE; held for the transaction by ``write_locks``' holder process),
                      allocate_write_id (once), existing partitions
    task k  write()   rows -> partition -> bucket (Hive's hash when bucketed), insert events as
                      Hive's OrcRecordUpdater writes them, heartbeats the transaction:
                        append    unbucketed  <part>/delta_w_w_0000/bucket_<k>     (writer ID k)
                                  bucketed    <part>/delta_w_w_<k>/bucket_<b>      (statement k)
                        overwrite unbucketed  <part>/base_w/bucket_<k>
                                  bucketed    <part>/base_w/bucket_<b>             (one task only)
    driver  commit()  _orc_acid_version, empty base_w in partitions an overwrite did not write,
                      add_partition, add_write_component, commit_txn
            abort()   abort_txn: the write ID stays invalid in every snapshot, nothing is visible
            both      wait until the holder has released the locks (it does when the txn ends)

Invariants: all input partitions of one read use the same snapshot and exactly the files the driver
planned (executors never list); a failed or killed job leaves an aborted (or, until the reaper
runs, open) transaction and nothing visible.
Not here: the merge rules (``acid_core.orc.reader``), the event format (``acid_core.orc.writer``).
Errors: ``InvalidDataSourceOptionError``, ``UnsupportedDataSourceWriteError``,
``UnsupportedStatementError`` (not a full-ACID table), ``NoSuchColumnError`` and whatever the
metastore and reader raise; Spark shows them in its Python worker error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import operator
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
    WriterCommitMessage,
)
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from acid_core.errors import (
    InvalidDataSourceOptionError,
    NoSuchColumnError,
    UnsupportedDataSourceWriteError,
    UnsupportedStatementError,
)
from acid_core.writes.rows import is_null_partition_value
from pyspark_hiveacid.options import Engine, parse_source_options
from pyspark_hiveacid.snapshot import Snapshot, current_user, lease_snapshot, take_snapshot
from pyspark_hiveacid.write_locks import hold_write_locks, wait_for_release

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    from acid_core.metastore.port import Metastore, Table
    from acid_core.orc.reader import ScanPlan
    from acid_core.paths import BaseDir, DeltaDir
    from pyspark_hiveacid.options import SourceOptions

__all__ = [
    "ROW_ID_COLUMN",
    "AcidInputPartition",
    "HiveAcidDataSource",
    "HiveAcidPruningReader",
    "HiveAcidReader",
    "HiveAcidWriter",
    "PlannedBucket",
    "ReadPlan",
    "load_read_plan",
    "spark_schema_of",
]

_LOG = logging.getLogger(__name__)
ROW_ID_COLUMN = "row__id"
HEARTBEAT_SECONDS = 30.0


def _open_store(options: SourceOptions) -> Metastore:
    from acid_core.metastore.factory import open_metastore

    return open_metastore(options.metastore, options.warehouse)


def _load_acid_table(store: Metastore, name: str, what: str) -> Table:
    from acid_core.metastore.port import TableType

    table = store.get_table(name)
    if table.table_type is not TableType.ACID:
        raise UnsupportedStatementError(
            f"{what} {table.full_name} through hiveacid",
            f"the table is {table.table_type.value.replace('_', '-')}, not full ACID",
            "a table with TBLPROPERTIES ('transactional'='true')",
        )
    return table


def _arrow_type(hive_type: str) -> pa.DataType:
    from acid_core.orc.schema import hive_to_arrow, parse_hive_type

    return hive_to_arrow(parse_hive_type(hive_type))


def spark_schema_of(table: Table, columns: Sequence[str] | None = None) -> StructType:
    """The Spark schema of a table: data columns, then partition columns (Hive's order).

    ``columns`` keeps only the named columns (data or partition, or ``row__id``), in table order
    with ``row__id`` first, as ``.schema(...)`` can also do.

    Raises:
        NoSuchColumnError: a name that is not a column of the table.
    """
    from pyspark.sql.pandas.types import from_arrow_type

    fields = [
        StructField(c.name, from_arrow_type(_arrow_type(c.type)), True)
        for c in (*table.columns, *table.partition_keys)
    ]
    if columns is None:
        return StructType(fields)
    wanted = [name.lower() for name in columns]
    known = [f.name.lower() for f in fields]
    for name in wanted:
        if name not in known and name != ROW_ID_COLUMN:
            raise NoSuchColumnError(name, tuple(known))
    chosen = [f for f in fields if f.name.lower() in wanted]
    if ROW_ID_COLUMN in wanted:
        chosen.insert(0, StructField(ROW_ID_COLUMN, _ROW_ID_SPARK_TYPE, True))
    return StructType(chosen)


_ROW_ID_SPARK_TYPE = StructType(
    [
        StructField("writeid", LongType(), True),
        StructField("bucketid", IntegerType(), True),
        StructField("rowid", LongType(), True),
    ]
)


# -- partition pruning ---------------------------------------------------------------------------

_COMPARISONS: dict[type[Filter], Callable[[Any, Any], object]] = {
    EqualTo: operator.eq,
    GreaterThan: operator.gt,
    GreaterThanOrEqual: operator.ge,
    LessThan: operator.lt,
    LessThanOrEqual: operator.le,
}


def _filter_columns(f: Any) -> set[str] | None:  # noqa: ANN401 - each Filter class has its own fields
    """The columns a filter reads, or None when acidflow cannot evaluate it."""
    if isinstance(f, Not):
        return _filter_columns(f.child)
    if isinstance(f, (*_COMPARISONS, EqualNullSafe, In, IsNull, IsNotNull)):
        attribute: tuple[str, ...] = getattr(f, "attribute", ())
        return {attribute[0].lower()} if len(attribute) == 1 else None
    return None


def _evaluate(f: Any, values: Mapping[str, object]) -> bool | None:  # noqa: ANN401 - as above
    """SQL three-valued logic on one partition's typed values (None: unknown, which prunes)."""
    if isinstance(f, Not):
        inner = _evaluate(f.child, values)
        return None if inner is None else not inner
    value = values[f.attribute[0].lower()]
    if isinstance(f, IsNull):
        return value is None
    if isinstance(f, IsNotNull):
        return value is not None
    if isinstance(f, EqualNullSafe):
        return bool(value == f.value)
    if isinstance(f, In):
        if value is None:
            return None
        if value in f.value:
            return True
        return None if any(v is None for v in f.value) else False
    if value is None or f.value is None:
        return None
    return bool(_COMPARISONS[type(f)](value, f.value))


def _partition_values(table: Table, values: Sequence[str]) -> dict[str, object]:
    """A partition's path values as typed Python values (``__HIVE_DEFAULT_PARTITION__`` is null)."""
    typed: dict[str, object] = {}
    for key, text in zip(table.partition_keys, values, strict=True):
        if is_null_partition_value(text):
            typed[key.name.lower()] = None
            continue
        try:
            typed[key.name.lower()] = pa.array([text], pa.string()).cast(_arrow_type(key.type))[0].as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            typed[key.name.lower()] = None  # Hive reads a value that does not parse as null
    return typed


# -- row filters on data columns ------------------------------------------------------------------

_MAX_IN_VALUES = 64
_STRING_MATCHES: dict[type[Filter], Callable[..., pc.Expression]] = {
    StringStartsWith: pc.starts_with,
    StringEndsWith: pc.ends_with,
    StringContains: pc.match_substring,
}


def _is_exact_type(arrow_type: pa.DataType) -> bool:
    """Types whose comparisons in pyarrow are exactly Spark's (not float: NaN orders differently)."""
    return bool(
        pa.types.is_integer(arrow_type)
        or pa.types.is_string(arrow_type)
        or pa.types.is_boolean(arrow_type)
        or pa.types.is_date32(arrow_type)
    )


def _equal(column: pc.Expression, value: object) -> pc.Expression:
    return cast("pc.Expression", operator.eq(column, value))


def _fits(arrow_type: pa.DataType, value: object) -> bool:
    if pa.types.is_boolean(arrow_type):
        return isinstance(value, bool)
    if pa.types.is_integer(arrow_type):
        return isinstance(value, int) and not isinstance(value, bool)
    if pa.types.is_string(arrow_type):
        return isinstance(value, str)
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


def _row_filter(f: Any, types: Mapping[str, tuple[str, pa.DataType]]) -> pc.Expression | None:  # noqa: ANN401
    """An exact pyarrow translation of a Spark filter on data columns, or None (Spark keeps it).

    Exact means SQL's three-valued logic: the expression is null where Spark's is null, so ``NOT``
    of it drops the same rows (``x IN (1, 2)`` becomes ``x = 1 OR x = 2``, not ``is_in``, whose
    result is never null). ``types`` maps lower-case data column names to (name, Arrow type).
    """
    if isinstance(f, Not):
        inner = _row_filter(f.child, types)
        return None if inner is None else ~inner
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if len(attribute) != 1 or attribute[0].lower() not in types:
        return None
    name, arrow_type = types[attribute[0].lower()]
    if not _is_exact_type(arrow_type):
        return None
    column = pc.field(name)
    if isinstance(f, IsNull):
        return pc.is_null(column)
    if isinstance(f, IsNotNull):
        return pc.is_valid(column)
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return pc.is_null(column)
        return pc.is_valid(column) & _equal(column, f.value) if _fits(arrow_type, f.value) else None
    if isinstance(f, In):
        values = list(f.value)
        if not values or len(values) > _MAX_IN_VALUES or not all(_fits(arrow_type, v) for v in values):
            return None
        expression = _equal(column, values[0])
        for value in values[1:]:
            expression = expression | _equal(column, value)
        return expression
    if type(f) in _STRING_MATCHES:
        if not pa.types.is_string(arrow_type) or not isinstance(f.value, str):
            return None
        return _STRING_MATCHES[type(f)](column, pattern=f.value)
    if type(f) in _COMPARISONS and _fits(arrow_type, f.value):
        compare = _COMPARISONS[type(f)]
        return cast("pc.Expression", compare(column, f.value))
    return None


def _row_filter_of(
    filters: Sequence[Filter], types: Mapping[str, tuple[str, pa.DataType]]
) -> pc.Expression | None:
    """The conjunction of ``filters`` (each one translatable by ``_row_filter``), or None."""
    expression: pc.Expression | None = None
    for f in filters:
        one = _row_filter(f, types)
        if one is None:  # pushFilters kept only translatable filters
            raise UnsupportedStatementError(
                f"push filter {f!r}", "it has no exact row filter", "a data filter"
            )
        expression = one if expression is None else expression & one
    return expression


# -- reading -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlannedBucket:
    """One bucket of one table partition, with exactly the files a reader of it reads.

    Attributes:
        location: the partition (or unpartitioned table) directory.
        partition_values: typed values (``_partition_values``) in partition-key order; () unpartitioned.
        bucket_id: the bucket.
        plan: ``plan_scan(...).for_bucket(bucket_id)`` of that directory at the read's snapshot.
    """

    location: str
    partition_values: tuple[object, ...]
    bucket_id: int
    plan: ScanPlan


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """A read's driver-side plan: its one snapshot and its buckets (Python and JVM readers share it).

    Attributes:
        snapshot: the snapshot every bucket is read at.
        buckets: one entry per bucket of each pruned, written partition, in listing order.
        renewed_lease: the lease the tasks renew: one this read took (``latest``); a user's lease
            (option ``snapshot=<lease id>``) is theirs to renew, and an explicit snapshot has none.
    """

    snapshot: Snapshot
    buckets: tuple[PlannedBucket, ...]
    renewed_lease: int | None


def _read_snapshot(store: Metastore, table: str, options: SourceOptions) -> Snapshot:
    if options.write_ids is not None:
        return Snapshot(None, options.write_ids, options.txns)
    if options.lease_id is not None:
        return lease_snapshot(store, table, options.lease_id)
    return take_snapshot(store, table, options.lease_ttl)


def _pruned_locations(
    store: Metastore, table: Table, prefixes: Sequence[str] | None, filters: Sequence[Filter]
) -> list[tuple[tuple[object, ...], str]]:
    """Partition (typed values, location) pairs kept by ``prefixes`` and every filter being True."""
    if not table.partition_keys:
        return [((), table.location)]
    chosen = []
    for partition in store.list_partitions(table.full_name):
        if prefixes is not None and not any(
            partition.name == p or partition.name.startswith(p + "/") for p in prefixes
        ):
            continue
        typed = _partition_values(table, partition.values)
        if all(_evaluate(f, typed) is True for f in filters):
            chosen.append((tuple(typed.values()), partition.location))
    return chosen


def load_read_plan(
    store: Metastore, table: Table, options: SourceOptions, partition_filters: Sequence[Filter] = ()
) -> ReadPlan:
    """Take a read's snapshot (once), prune its partitions and list the files of each bucket.

    The snapshot follows option ``snapshot``: ``latest`` takes a new lease (``take_snapshot``), a
    lease ID reads that lease's snapshot, an explicit ValidWriteIdList takes no lease. Partitions
    are kept by option ``partitions`` and by ``partition_filters`` (a partition stays only when
    every filter is True on its typed values); a partition registered but never written is skipped.

    Args:
        store: an open metastore (left open).
        table: the full-ACID table (``_load_acid_table``).
        options: the read's options.
        partition_filters: filters on partition columns only (``_filter_columns``).

    Returns:
        The snapshot and one ``PlannedBucket`` per bucket holding data files.

    Raises:
        NoSuchLeaseError: option ``snapshot`` names a lease that is not live.
        InvalidDataSourceOptionError: ``latest`` on a metastore without reader leases.
    """
    from acid_core.fs import file_io_for
    from acid_core.orc.reader import plan_scan

    snapshot = _read_snapshot(store, table.full_name, options)
    locations = _pruned_locations(store, table, options.partitions, partition_filters)
    buckets: list[PlannedBucket] = []
    for values, location in locations:
        file_io, path = file_io_for(location)
        if file_io.info(path) is None:
            continue  # a partition registered but never written
        plan = plan_scan(file_io, path, snapshot.write_ids, snapshot.txns)
        buckets.extend(
            PlannedBucket(location, values, bucket, plan.for_bucket(bucket)) for bucket in plan.bucket_ids
        )
    renewed = snapshot.lease_id if options.lease_id is None else None
    return ReadPlan(snapshot, tuple(buckets), renewed)


@dataclass
class AcidInputPartition(InputPartition):
    """One Spark task: one bucket of one table partition, with exactly the files it reads."""

    location: str
    partition_values: tuple[object, ...]
    bucket_id: int
    plan: ScanPlan
    write_ids: str
    txns: str | None
    value: Any = field(default=None)
    lease_id: int | None = None


class HiveAcidReader(DataSourceReader):
    """Plans on the driver (snapshot, pruning, one task per bucket) and merges on the executors."""

    def __init__(self, options: SourceOptions, table: Table, schema: StructType) -> None:
        self.options, self.table, self.schema = options, table, schema
        names = [f.name.lower() for f in schema.fields]
        data = {c.name.lower(): c for c in table.columns}
        keys = {k.name.lower(): k for k in table.partition_keys}
        for name in names:
            if name not in data and name not in keys and name != ROW_ID_COLUMN:
                raise NoSuchColumnError(name, (*data, *keys))
        self.data_columns = [c.name for c in table.columns if c.name.lower() in names]
        self.with_row_id = ROW_ID_COLUMN in names
        self.output_names = names
        self.partition_filters: list[Filter] = []
        self.row_filters: list[Filter] = []
        self.snapshot: Snapshot | None = None

    def _data_types(self) -> dict[str, tuple[str, pa.DataType]]:
        return {c.name.lower(): (c.name, _arrow_type(c.type)) for c in self.table.columns}

    def partitions(self) -> list[InputPartition]:
        """Take the snapshot (once), prune partitions, and plan one input partition per bucket."""
        store = _open_store(self.options)
        try:
            read_plan = load_read_plan(store, self.table, self.options, self.partition_filters)
        finally:
            store.close()
        self.snapshot = snapshot = read_plan.snapshot
        write_ids = snapshot.write_ids.to_string()
        txns = None if snapshot.txns is None else snapshot.txns.to_string()
        planned: list[InputPartition] = [
            AcidInputPartition(
                bucket.location,
                bucket.partition_values,
                bucket.bucket_id,
                bucket.plan,
                write_ids,
                txns,
                lease_id=read_plan.renewed_lease,
            )
            for bucket in read_plan.buckets
        ]
        _LOG.info("hiveacid: %s at %s: %d input partitions", self.table.full_name, write_ids, len(planned))
        return planned

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Merge-on-read of one bucket, streamed as Arrow batches in Spark's schema."""
        if not isinstance(partition, AcidInputPartition):
            return  # Spark's placeholder when planning found no files
        from pyspark.sql.pandas.types import to_arrow_schema

        from acid_core.fs import file_io_for
        from acid_core.orc.reader import scan
        from acid_core.orc.schema import row_schema
        from acid_core.writeids import parse_valid_txn_list, parse_valid_write_id_list

        target = to_arrow_schema(self.schema, timezone="UTC")
        data_schema = row_schema((c.name, c.type) for c in self.table.columns)
        file_io, path = file_io_for(partition.location)
        keys = [k.name.lower() for k in self.table.partition_keys]
        constants = dict(zip(keys, partition.partition_values, strict=True))
        # Renewed before any file is opened: a lease that already expired fails the task here.
        with _LeaseRenewal(self.options, partition.lease_id) as renewal:
            reader = scan(
                file_io,
                path,
                parse_valid_write_id_list(partition.write_ids),
                None if partition.txns is None else parse_valid_txn_list(partition.txns),
                columns=self.data_columns,
                with_row_id=self.with_row_id,
                schema=data_schema,
                plan=partition.plan,
                batch_rows=self.options.batch_rows,
                # After the delete merge, inside scan: a deleted row never reaches the filter.
                filter=_row_filter_of(self.row_filters, self._data_types()),
            )
            for batch in reader:
                renewal.maybe_renew()
                yield _to_target(batch, target, constants)


def _to_target(batch: pa.RecordBatch, target: pa.Schema, constants: Mapping[str, object]) -> pa.RecordBatch:
    """A merged batch in Spark's schema: partition values as constants, types cast to Spark's."""
    rows = batch.num_rows
    by_name = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
    arrays = []
    for target_field in target:
        name = target_field.name.lower()
        array = by_name.get(name)
        if array is None:  # a partition column: one value for the whole task
            array = pa.array([constants[name]] * rows, target_field.type)
        if array.type != target_field.type:
            array = array.cast(target_field.type, safe=False)
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


class _LeaseRenewal:
    """Renew the read's lease when a task starts and every third of its TTL while it reads."""

    def __init__(self, options: SourceOptions, lease_id: int | None) -> None:
        self.options, self.lease_id = options, lease_id
        self.store: Metastore | None = None
        self.renewed_at = 0.0

    def __enter__(self) -> _LeaseRenewal:
        if self.lease_id is not None:
            self.store = _open_store(self.options)
            self.renew()
        return self

    def renew(self) -> None:
        from pyspark_hiveacid.snapshot import renew_snapshot

        if self.store is not None and self.lease_id is not None:
            renew_snapshot(self.store, self.lease_id, self.options.lease_ttl)
            self.renewed_at = time.monotonic()

    def maybe_renew(self) -> None:
        if self.store is not None and time.monotonic() - self.renewed_at > self.options.lease_ttl / 3:
            self.renew()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def __exit__(self, *exc: object) -> None:
        self.close()


class HiveAcidPruningReader(HiveAcidReader):
    """``HiveAcidReader`` plus partition pruning from Spark's pushed filters (option ``pushdown``).

    Spark calls ``pushFilters`` only with ``spark.sql.python.filterPushdown.enabled=true`` and
    refuses the read otherwise; see ``pyspark_hiveacid.options`` for why this is opt-in.
    """

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep what acidflow evaluates exactly; give the rest back to Spark.

        Filters on partition columns prune partitions on the driver. Filters on one data column of
        an exact type (integers, strings, booleans, dates) become a row filter that the executors
        apply after the delete merge (``scan(filter=...)``), so a deleted row cannot come back.
        """
        keys = {k.name.lower() for k in self.table.partition_keys}
        types = self._data_types()
        for f in filters:
            columns = _filter_columns(f)
            if columns and columns <= keys:
                self.partition_filters.append(f)
            elif _row_filter(f, types) is not None:
                self.row_filters.append(f)
            else:
                yield f


# -- writing -------------------------------------------------------------------------------------


@dataclass
class _WriteMessage(WriterCommitMessage):
    """What one task wrote: ``(partition values or None, location, directory name)`` and its row count."""

    directories: list[tuple[tuple[str | None, ...] | None, str, str]]
    rows: int


class HiveAcidWriter(DataSourceArrowWriter):
    """One metastore transaction for the whole Spark job; see the module docstring."""

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        from acid_core.metastore.port import format_partition_name

        self.options, self.schema, self.overwrite = options, schema, overwrite
        store = _open_store(options)
        try:
            self.table = _load_acid_table(store, options.table, "write")
            self._check_schema()
            self.txn_id = int(store.open_txn(current_user(), socket.gethostname()))
            try:
                hold_write_locks(options, self.table.full_name, overwrite, self.txn_id)
                self.write_id = int(store.allocate_write_id(self.txn_id, self.table.full_name))
                keys = [k.name for k in self.table.partition_keys]
                self.partitions = {
                    format_partition_name(keys, list(p.values)): p.location
                    for p in store.list_partitions(self.table.full_name)
                }
            except BaseException:
                store.abort_txn(self.txn_id)
                raise
        finally:
            store.close()

    def _check_schema(self) -> None:
        table = self.table
        expected = [c.name.lower() for c in (*table.columns, *table.partition_keys)]
        given = [f.name.lower() for f in self.schema.fields]
        if sorted(given) != sorted(expected):
            raise UnsupportedDataSourceWriteError(
                table.full_name,
                f"the DataFrame has columns {given!r}",
                f"exactly the table's columns {expected!r} (data columns, then partition columns)",
            )

    @property
    def bucketed(self) -> bool:
        """Whether rows go to buckets by Hive's hash (``CLUSTERED BY .. INTO n BUCKETS``)."""
        return self.table.num_buckets > 0 and bool(self.table.bucket_columns)

    def _directory(self, writer_id: int) -> BaseDir | DeltaDir:
        from acid_core.paths import BaseDir, DeltaDir

        if self.overwrite:
            return BaseDir(self.write_id)
        return DeltaDir(self.write_id, self.write_id, writer_id if self.bucketed else 0)

    def _location(self, values: tuple[str | None, ...] | None) -> str:
        from acid_core.metastore.port import format_partition_name

        if values is None:
            return self.table.location
        name = format_partition_name([k.name for k in self.table.partition_keys], list(values))
        return self.partitions.get(name) or f"{self.table.location.rstrip('/')}/{name}"

    def _conform(self, batch: pa.RecordBatch) -> pa.Table:
        by_name = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
        columns = [*self.table.columns, *self.table.partition_keys]
        arrays = [by_name[c.name.lower()].cast(_arrow_type(c.type), safe=False) for c in columns]
        return pa.Table.from_arrays(arrays, names=[c.name for c in columns])

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _WriteMessage:  # type: ignore[override]
        """Write this task's rows as insert events; heartbeat the transaction while doing it."""
        from pyspark import TaskContext

        from acid_core.bucket_codec import MAX_BUCKET_ID
        from acid_core.writes.rows import assign_buckets, partition_values_of

        context = TaskContext.get()
        writer_id = 0 if context is None else context.partitionId()
        if writer_id > MAX_BUCKET_ID:
            raise UnsupportedDataSourceWriteError(
                self.table.full_name,
                f"write task {writer_id} (Hive numbers writers 0..{MAX_BUCKET_ID})",
                f"at most {MAX_BUCKET_ID + 1} partitions: df.coalesce(n) before writing",
            )
        store = _open_store(self.options)
        try:
            store.heartbeat(self.txn_id)
            beat = time.monotonic()
            groups: dict[tuple[tuple[str | None, ...] | None, int], list[pa.Table]] = {}
            rows = 0
            for batch in iterator:
                if time.monotonic() - beat > HEARTBEAT_SECONDS:
                    store.heartbeat(self.txn_id)
                    beat = time.monotonic()
                if batch.num_rows == 0:
                    continue
                data = self._conform(batch)
                rows += data.num_rows
                parts: list[tuple[str | None, ...] | None]
                parts = list(partition_values_of(self.table, data)) if self.table.partition_keys else []
                buckets = assign_buckets(self.table, data) if self.bucketed else None
                keys = [
                    (parts[i] if parts else None, buckets[i] if buckets is not None else writer_id)
                    for i in range(data.num_rows)
                ]
                indices: dict[tuple[tuple[str | None, ...] | None, int], list[int]] = {}
                for i, key in enumerate(keys):
                    indices.setdefault(key, []).append(i)
                for key, picked in indices.items():
                    groups.setdefault(key, []).append(data.take(pa.array(picked, pa.int64())))
            if self.overwrite and self.bucketed and groups and writer_id > 0:
                raise UnsupportedDataSourceWriteError(
                    self.table.full_name,
                    f"an overwrite of a bucketed table with rows in write task {writer_id}",
                    "one write task for an overwrite of a bucketed table (each bucket is one file of "
                    "base_w): df.coalesce(1).write...",
                )
            message = self._write_groups(groups, writer_id)
            message.rows = rows
            store.heartbeat(self.txn_id)
            return message
        finally:
            store.close()

    def _write_groups(
        self, groups: Mapping[tuple[tuple[str | None, ...] | None, int], list[pa.Table]], writer_id: int
    ) -> _WriteMessage:
        from acid_core.fs import file_io_for
        from acid_core.orc.writer import insert_events, write_acid_version_file, write_event_file
        from acid_core.paths import format_bucket_file
        from acid_core.writes.rows import row_type_of

        row_type = row_type_of(self.table)
        data_names = [c.name for c in self.table.columns]
        directory = self._directory(writer_id)
        statement = getattr(directory, "statement_id", None) or 0
        written: list[tuple[tuple[str | None, ...] | None, str, str]] = []
        for (values, bucket), tables in sorted(groups.items(), key=lambda item: repr(item[0])):
            location = self._location(values)
            file_io, path = file_io_for(location)
            target = file_io.join(path, directory.to_name())
            file_io.mkdirs(target)
            write_acid_version_file(file_io, target)

            def events(parts: list[pa.Table] = tables, bucket_id: int = bucket) -> Iterator[pa.RecordBatch]:
                first = 0
                for part in parts:
                    for batch in part.select(data_names).to_batches():
                        if batch.num_rows:
                            yield insert_events(
                                batch,
                                write_id=self.write_id,
                                bucket_id=bucket_id,
                                statement_id=statement,
                                first_row_id=first,
                                row_type=row_type,
                            )
                            first += batch.num_rows

            write_event_file(
                file_io,
                file_io.join(target, format_bucket_file(bucket)),
                events(),
                row_type,
                bucket_id=bucket,
            )
            if (values, location, directory.to_name()) not in written:
                written.append((values, location, directory.to_name()))
        return _WriteMessage(written, 0)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Make the write visible: partitions, write components, then ``commit_txn`` (or abort)."""
        from acid_core.errors import PartitionAlreadyExistsError
        from acid_core.fs import file_io_for
        from acid_core.metastore.port import WriteOperation, format_partition_name
        from acid_core.orc.writer import write_acid_version_file

        table = self.table
        keys = [k.name for k in table.partition_keys]
        operation = WriteOperation.UPDATE if self.overwrite else WriteOperation.INSERT
        store = _open_store(self.options)
        try:
            try:
                touched: dict[str | None, tuple[str | None, ...] | None] = {}
                for message in messages:
                    if not isinstance(message, _WriteMessage):
                        continue
                    for values, location, name in message.directories:
                        file_io, path = file_io_for(location)
                        write_acid_version_file(file_io, file_io.join(path, name))
                        touched[None if values is None else format_partition_name(keys, list(values))] = (
                            values
                        )
                if self.overwrite:
                    self._empty_bases(store, touched)
                for part_name, values in touched.items():
                    if values is not None and part_name not in self.partitions:
                        # A concurrent writer may have registered it since writer() listed them.
                        with contextlib.suppress(PartitionAlreadyExistsError):
                            store.add_partition(
                                table.full_name, dict(zip(keys, values, strict=True)), self._location(values)
                            )
                    store.add_write_component(self.txn_id, table.full_name, part_name, operation)
                store.commit_txn(self.txn_id)
            except BaseException:
                _LOG.exception("hiveacid: commit of txn %d failed; aborting it", self.txn_id)
                store.abort_txn(self.txn_id)
                raise
            finally:
                self._locks_released()
        finally:
            store.close()

    def _locks_released(self) -> None:
        """Wait for the lock holder to see the transaction end and release (``write_locks``)."""
        if not wait_for_release(self.options, self.table.full_name, self.txn_id):
            _LOG.warning("hiveacid: locks of txn %d still held after its end", self.txn_id)

    def _empty_bases(
        self, store: Metastore, touched: dict[str | None, tuple[str | None, ...] | None]
    ) -> None:
        """An overwrite empties what it did not write: an empty ``base_w`` (Hive's IOW of no rows)."""
        from acid_core.fs import file_io_for
        from acid_core.orc.writer import write_acid_version_file

        name = self._directory(0).to_name()
        if not self.table.partition_keys:
            targets: list[tuple[str | None, str, tuple[str | None, ...] | None]] = [
                (None, self.table.location, None)
            ]
        else:
            targets = [
                (p_name, location, tuple(p.values))
                for p in store.list_partitions(self.table.full_name)
                for p_name, location in [(p.name, p.location)]
            ]
        for part_name, location, values in targets:
            if part_name in touched:
                continue
            file_io, path = file_io_for(location)
            directory = file_io.join(path, name)
            file_io.mkdirs(directory)
            write_acid_version_file(file_io, directory)
            touched[part_name] = values

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Abort the transaction: its write ID stays invalid, so nothing written is ever read."""
        store = _open_store(self.options)
        try:
            store.abort_txn(self.txn_id)
        finally:
            store.close()
            self._locks_released()


# -- the data source -----------------------------------------------------------------------------


class HiveAcidDataSource(DataSource):
    """``format("hiveacid")``: see the module docstring and ``pyspark_hiveacid.options``."""

    @classmethod
    def name(cls) -> str:
        """The short name users type."""
        return "hiveacid"

    def _options(self) -> SourceOptions:
        return parse_source_options(dict(self.options))

    def schema(self) -> StructType:
        """The table's columns from the metastore (restricted by the ``columns`` option)."""
        options = self._options()
        store = _open_store(options)
        try:
            table = _load_acid_table(store, options.table, "read")
        finally:
            store.close()
        return spark_schema_of(table, options.columns)

    def reader(self, schema: StructType) -> HiveAcidReader:
        """A reader of the columns in ``schema`` (the table's, or the user's subset).

        Raises:
            InvalidDataSourceOptionError: option ``engine='jvm'``: the JVM reader would read, so its
                jar is not on the session's class path.
        """
        options = self._options()
        if options.engine is Engine.JVM:
            raise InvalidDataSourceOptionError(
                "engine",
                "jvm",
                "the JVM reader's jar on the session's class path (spark.jars, or "
                '--jars "$(python -m pyspark_hiveacid.jvm)"; hiveacid_session() adds it), or engine '
                "'auto' / 'python'",
            )
        store = _open_store(options)
        try:
            table = _load_acid_table(store, options.table, "read")
        finally:
            store.close()
        if options.pushdown:
            return HiveAcidPruningReader(options, table, schema)
        return HiveAcidReader(options, table, schema)

    def writer(self, schema: StructType, overwrite: bool) -> HiveAcidWriter:
        """A writer for one transaction (append, or overwrite of the whole table)."""
        return HiveAcidWriter(self._options(), schema, overwrite)
