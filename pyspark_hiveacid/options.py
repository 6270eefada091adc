"""The options of the ``hiveacid`` Spark data source, parsed into one value (pure: no Spark, no I/O).

::

    spark.read.format("hiveacid")
        .option("metastore", "postgresql+psycopg://...")   default $ACIDFLOW_METASTORE, else the
                                                            warehouse's embedded SQLite file
        .option("warehouse", "/data/warehouse")             default $ACIDFLOW_WAREHOUSE, else ./warehouse
        .option("snapshot", "latest")                       latest | <lease id> | a ValidWriteIdList
        .option("txns", "<ValidTxnList>")                   with an explicit write-ID list only
        .option("columns", "a,b")                           data columns to read (column pruning)
        .option("lease_ttl", "600")                         seconds a latest snapshot's lease outlives
                                                            the last renewal (tasks renew it)
        .option("partitions", "p=a;p=b/q=1")                read only these partitions (name prefixes)
        .option("pushdown", "true")                         prune partitions from pushed filters too
        .option("engine", "auto")                           auto | jvm | python: which read path
        .load("db.table")                                   or .option("table", "db.table")

Why a ``columns`` option: Spark 4's Python data source API gives ``reader(schema)`` the whole
schema and never the columns a query uses, so the source cannot prune by itself. ``columns`` (or a
user schema given with ``.schema(...)`` naming a subset of the columns) makes ``schema()`` smaller,
and the reader then decodes only those ORC columns plus the ACID key.

Why ``pushdown`` is off by default: Spark 4.2.0 keeps the partitions and read function planned by
a filtered query on the DataFrame's data source object and reuses them for a later query on the same
DataFrame that has no pushable filter (``PythonDataSourceV2.readInfo``; Spark's master moved it into
the scan, "a pushdown-specific read function stored there would leak into an unrelated scan and
make it read too few rows"). Partitions pruned for ``WHERE p = 'a'`` would then be all that
``df.count()`` reads. ``partitions`` is part of the DataFrame's definition, so it is always safe;
``pushdown`` is safe when every filtered query starts from a fresh ``load()``.

Why ``engine``: the JVM reader (``pyspark_hiveacid/jvm``, planning through
``pyspark_hiveacid.planner``) reads without the cost of a Python data source, when its jar is on
the session's class path (``pyspark_hiveacid.jvm``). ``auto``: the JVM reader if its jar is there,
else this Python source; ``python``: this Python source (the JVM reader hands it the read); ``jvm``:
the JVM reader or an error naming the option (this Python source refuses to read it, so a session
without the jar fails instead of silently reading slower). Writes always go through this Python
source and ignore the option.

Invariants: ``parse_source_options`` is deterministic in its input and the environment variables;
relative warehouse paths become absolute (executors may run elsewhere).
Not here: taking the snapshot (``snapshot``), reading (``source``).
Errors: ``InvalidDataSourceOptionError`` naming the option, its value and what is expected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from acid_core.errors import AcidError, InvalidDataSourceOptionError
from acid_core.fs import resolve_warehouse
from acid_core.writeids import parse_valid_txn_list, parse_valid_write_id_list

if TYPE_CHECKING:
    from collections.abc import Mapping

    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_LEASE_TTL_SECONDS",
    "Engine",
    "METASTORE_ENV",
    "SNAPSHOT_LATEST",
    "WAREHOUSE_ENV",
    "SourceOptions",
    "parse_source_options",
]

METASTORE_ENV = "ACIDFLOW_METASTORE"
WAREHOUSE_ENV = "ACIDFLOW_WAREHOUSE"
SNAPSHOT_LATEST = "latest"
DEFAULT_LEASE_TTL_SECONDS = 600.0
DEFAULT_BATCH_ROWS = 65536
_DEFAULT_WAREHOUSE = "./warehouse"
_KNOWN = frozenset(
    {
        "path",
        "table",
        "metastore",
        "warehouse",
        "snapshot",
        "txns",
        "columns",
        "lease_ttl",
        "batch_rows",
        "partitions",
        "pushdown",
        "engine",
    }
)


class Engine(StrEnum):
    """The read path option ``engine`` asks the JVM source for (see the module docstring)."""

    AUTO = "auto"
    JVM = "jvm"
    PYTHON = "python"


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Everything the data source was told, validated.

    Attributes:
        table: ``db.table`` (or ``table`` in ``default``).
        metastore: the metastore URL, or None for the warehouse's embedded SQLite file.
        warehouse: the warehouse root, absolute.
        snapshot: ``latest``, or a lease ID (digits), or None when ``write_ids`` is explicit.
        write_ids: an explicit ValidWriteIdList, or None.
        txns: an explicit ValidTxnList (decides ``_vT`` visibility), or None.
        columns: the data columns to read, or None for all.
        lease_ttl: seconds a ``latest`` snapshot's lease lives after its last renewal (every task
            renews it; see ``pyspark_hiveacid.snapshot``); the cleaner keeps its files meanwhile.
        batch_rows: rows decoded per Arrow batch.
        partitions: partition-name prefixes (``p=a``, ``p=a/q=1``) to read, or None for all.
        pushdown: prune partitions from the filters Spark pushes (see the module docstring).
        engine: ``auto``, ``jvm`` or ``python``: the read path (see the module docstring).
    """

    table: str
    metastore: str | None
    warehouse: str
    snapshot: str | None
    write_ids: ValidWriteIdList | None
    txns: ValidTxnList | None
    columns: tuple[str, ...] | None
    lease_ttl: float
    batch_rows: int
    partitions: tuple[str, ...] | None = None
    pushdown: bool = False
    engine: Engine = Engine.AUTO

    @property
    def lease_id(self) -> int | None:
        """The lease named by ``snapshot``, or None."""
        return int(self.snapshot) if self.snapshot is not None and self.snapshot.isdigit() else None


def _positive(name: str, text: str, kind: type[int] | type[float]) -> float:
    try:
        value = kind(text)
    except ValueError:
        value = -1
    if not value > 0:
        raise InvalidDataSourceOptionError(name, text, "a positive number")
    return value


def parse_source_options(
    options: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> SourceOptions:
    """Validate the options Spark passes to the data source (keys are case-insensitive).

    Args:
        options: ``.option(...)`` values plus ``path`` from ``load(path)`` / ``save(path)``.
        environ: the environment for the defaults (default: ``os.environ``).

    Returns:
        The parsed options.

    Raises:
        InvalidWarehouseError: the warehouse (option or ``$ACIDFLOW_WAREHOUSE``) is empty, has an unknown
            scheme, ... (``acid_core.fs.resolve_warehouse``).
        InvalidDataSourceOptionError: an unknown option, a missing table, a bad snapshot or number.

    >>> parse_source_options({"path": "db.t", "warehouse": "/wh"}, {}).snapshot
    'latest'
    >>> parse_source_options({"table": "db.t", "warehouse": "/wh", "snapshot": "7"}, {}).lease_id
    7
    """
    env = os.environ if environ is None else environ
    given = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    unknown = sorted(set(given) - _KNOWN)
    if unknown:
        raise InvalidDataSourceOptionError(unknown[0], given[unknown[0]], f"one of {sorted(_KNOWN)}")
    table = (given.get("table") or given.get("path") or "").strip()
    if not table:
        raise InvalidDataSourceOptionError(
            "table", table, "a table name: load('db.table') or option('table', ..)"
        )
    # A URI stays one (abspath made s3://b/wh the local directory ./s3:/b/wh); a path becomes absolute.
    source = "option warehouse" if given.get("warehouse") else f"${WAREHOUSE_ENV}"
    warehouse = resolve_warehouse(
        given.get("warehouse") or env.get(WAREHOUSE_ENV) or _DEFAULT_WAREHOUSE, source=source
    )
    metastore = given.get("metastore") or env.get(METASTORE_ENV) or None
    snapshot: str | None = (given.get("snapshot") or SNAPSHOT_LATEST).strip()
    write_ids: ValidWriteIdList | None = None
    txns: ValidTxnList | None = None
    expected_snapshot = (
        "'latest', a lease ID (acidflow lease take) or a ValidWriteIdList 'db.t:hwm:min_open:open:aborted'"
    )
    if snapshot is not None and snapshot != SNAPSHOT_LATEST and not snapshot.isdigit():
        if ":" not in snapshot:
            raise InvalidDataSourceOptionError("snapshot", snapshot, expected_snapshot)
        try:
            write_ids = parse_valid_write_id_list(snapshot)
        except AcidError as e:
            raise InvalidDataSourceOptionError("snapshot", snapshot, expected_snapshot) from e
        snapshot = None
    if snapshot is not None and snapshot.isdigit() and int(snapshot) < 1:
        raise InvalidDataSourceOptionError("snapshot", snapshot, expected_snapshot)
    if "txns" in given:
        if write_ids is None:
            raise InvalidDataSourceOptionError(
                "txns", given["txns"], "txns only with an explicit write-ID snapshot"
            )
        try:
            txns = parse_valid_txn_list(given["txns"])
        except AcidError as e:
            raise InvalidDataSourceOptionError(
                "txns", given["txns"], "a ValidTxnList 'hwm:min_open:open:aborted'"
            ) from e
    columns: tuple[str, ...] | None = None
    if "columns" in given:
        names = tuple(part.strip().lower() for part in given["columns"].split(","))
        if not all(names):
            raise InvalidDataSourceOptionError("columns", given["columns"], "column names separated by ','")
        columns = names
    lease_ttl = _positive("lease_ttl", given.get("lease_ttl", str(DEFAULT_LEASE_TTL_SECONDS)), float)
    batch_rows = int(_positive("batch_rows", given.get("batch_rows", str(DEFAULT_BATCH_ROWS)), int))
    partitions: tuple[str, ...] | None = None
    if "partitions" in given:
        prefixes = tuple(part.strip().strip("/") for part in given["partitions"].split(";"))
        if not all(prefixes) or not all("=" in p for p in prefixes):
            raise InvalidDataSourceOptionError(
                "partitions", given["partitions"], "partition names like 'p=a' or 'p=a/q=1' separated by ';'"
            )
        partitions = prefixes
    pushdown_text = given.get("pushdown", "false").strip().lower()
    if pushdown_text not in ("true", "false"):
        raise InvalidDataSourceOptionError("pushdown", given["pushdown"], "true or false")
    engine_text = given.get("engine", Engine.AUTO.value).strip().lower()
    if engine_text not in {e.value for e in Engine}:
        raise InvalidDataSourceOptionError("engine", given["engine"], "auto, jvm or python")
    return SourceOptions(
        table,
        metastore,
        warehouse,
        snapshot,
        write_ids,
        txns,
        columns,
        lease_ttl,
        batch_rows,
        partitions,
        pushdown_text == "true",
        Engine(engine_text),
    )
