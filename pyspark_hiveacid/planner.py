"""The JVM read path's driver-side planner: a JSON-lines server, one process per Spark driver.

::

    JVM driver (pyspark_hiveacid/jvm)            python -m pyspark_hiveacid.planner
      stdin  {"id":1,"op":"schema","options":{..}}  -> {"id":1,"ok":true,"schema":..,"table_schema":..,
                                                        "partition_columns":..,"data_columns":..}
             {"id":2,"op":"plan","options":{..},     -> {"id":2,"ok":true,"lease_id":7,"renew":true,
                    "filters":[..]}                       "lease_ttl":600.0,"write_ids":"..","row_type":"struct<..>",
                                                        "partitions":[{"location","values","bucket",
                                                                       "files":[{"path","kind","length"}],
                                                                       "deletes":[{"path","length"}]}]}
             {"id":3,"op":"renew","options":{..},    -> {"id":3,"ok":true}
                    "lease_id":7,"ttl":600.0}
             {"id":4,"op":"release","options":{..},  -> {"id":4,"ok":true}   (an unknown lease too)
                    "lease_id":7}
      any failure                                   -> {"id":n,"ok":false,"error":"<one line>","kind":"<class>"}

``options`` are the data source options as Spark passes them (``parse_source_options``). A plan is
``source.load_read_plan``, the Python reader's own planning: one snapshot, partitions pruned by
option ``partitions`` and by ``filters`` (always, whatever option ``pushdown`` says), one entry per
bucket with exactly the files ``plan_scan(...).for_bucket(bucket)`` lists. Partition ``values`` are
Spark's internal form: strings, numbers, booleans, dates as days since 1970-01-01, timestamps as
microseconds since the epoch (the naive value read as UTC), decimals as strings, binary as base64.
``filters`` are Spark ``Filter``s as JSON (``{"op":"EqualTo","column":"p","value":..}``, ``In``
with ``values``, ``IsNull``/``IsNotNull``, ``Not`` with ``child``); one that is not on a partition
column, has an unknown op or a value that does not convert is ignored: Spark applies every filter
again after the scan, so ignoring one only reads more.

Invariants: exactly one response line per request line, in order, each with the request's ``id``;
stdout carries nothing else (logs go to stderr); a failing request never ends the server, EOF does
(exit 0). One metastore stays open per (metastore, warehouse) pair for the life of the process.
Concurrency: one request at a time (the JVM side serializes); ``release`` is idempotent.
Not here: the rules of planning (``source.load_read_plan``), reading files (the JVM).
Errors: an ``AcidError`` is the line ``acidflow`` prints for it (``acid_core.cli.app``) with its
class as ``kind``; anything else ``"<ClassName>: <message>"`` (traceback at DEBUG on stderr).
A line that is not a JSON object, an unknown op or a bad field is ``InvalidMetastoreRequestError``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import logging
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from acid_core.errors import (
    AcidError,
    InvalidMetastoreRequestError,
    NoSuchLeaseError,
    UnsupportedStatementError,
)
from pyspark_hiveacid.options import parse_source_options

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import IO

    from pyspark.sql.datasource import Filter

    from acid_core.metastore.port import Metastore, Table
    from pyspark_hiveacid.options import SourceOptions

__all__ = ["PlannerServer", "filter_from_json", "main", "row_type_of", "spark_value"]

_LOG = logging.getLogger(__name__)
DEBUG_ENV = "ACIDFLOW_DEBUG"
_EPOCH_DAY = dt.date(1970, 1, 1)
_COMPARISON_OPS = (
    "EqualTo",
    "EqualNullSafe",
    "GreaterThan",
    "GreaterThanOrEqual",
    "LessThan",
    "LessThanOrEqual",
)
_PLAIN_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

Json = Any  # one decoded JSON value


def _one_line(error: BaseException) -> str:
    """An error as one line: what ``acidflow`` prints for an ``AcidError``, else ``Class: message``."""
    text = " ".join(str(error).splitlines())
    if isinstance(error, AcidError):
        return f"acidflow: error: {text}"  # exactly acid_core.cli.app._print_error's line
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _bad_request(field: str, value: object, expected: str) -> InvalidMetastoreRequestError:
    return InvalidMetastoreRequestError(f"hiveacid planner request {field}", value, expected)


# -- Hive type strings -----------------------------------------------------------------------------


def _quoted(name: str) -> str:
    return name if name and set(name) <= _PLAIN_NAME_CHARS else "`" + name.replace("`", "``") + "`"


def row_type_of(table: Table) -> str:
    """The table's data columns as an ORC/Hive type string, ``struct<name:type,...>``.

    Types are the metastore's, canonical and lower-case; a name with characters other than
    ``[A-Za-z0-9_]`` is quoted with backquotes.
    """
    from acid_core.orc.schema import format_hive_type, parse_hive_type

    fields = ",".join(f"{_quoted(c.name)}:{format_hive_type(parse_hive_type(c.type))}" for c in table.columns)
    return f"struct<{fields}>"


# -- partition values: typed Python values <-> Spark's internal form as JSON -----------------------


def _type_family(hive_type: str) -> str:
    """The kind of value a Hive type holds, as the planner converts it.

    ``string``, ``integer``, ``boolean``, ``floating``, ``date``, ``timestamp``, ``decimal``,
    ``binary``, or the Arrow type's name for anything else.
    """
    import pyarrow as pa

    from pyspark_hiveacid.source import _arrow_type

    arrow_type = _arrow_type(hive_type)
    checks: tuple[tuple[str, Callable[[Any], bool]], ...] = (
        ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
        ("boolean", pa.types.is_boolean),
        ("integer", pa.types.is_integer),
        ("floating", pa.types.is_floating),
        ("date", pa.types.is_date),
        ("timestamp", pa.types.is_timestamp),
        ("decimal", pa.types.is_decimal),
        ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t)),
    )
    for family, check in checks:
        if check(arrow_type):
            return family
    return str(arrow_type)


def _micros(value: dt.datetime) -> int:
    """Microseconds since the epoch of a timestamp; a naive one is read as UTC (Spark's cast does)."""
    import pyarrow as pa

    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    micros = pa.array([value], pa.timestamp("us", tz="UTC")).cast(pa.int64())[0].as_py()
    return int(micros)


def spark_value(value: object, hive_type: str, column: str = "?") -> Json:
    """A typed partition value (``_partition_values``) in Spark's internal form, as JSON.

    Raises:
        UnsupportedStatementError: a type the JVM reader does not take as a partition column.
    """
    if value is None:
        return None
    family = _type_family(hive_type)
    if family in ("string", "boolean") or (family == "integer" and isinstance(value, int)):
        return value
    if family == "floating" and isinstance(value, float):
        return value
    if family == "date" and isinstance(value, dt.date):
        return (value - _EPOCH_DAY).days
    if family == "timestamp" and isinstance(value, dt.datetime):
        return _micros(value)
    if family == "decimal" and isinstance(value, decimal.Decimal):
        return str(value)
    if family == "binary" and isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise UnsupportedStatementError(
        f"plan partition column {column} of type {hive_type} for the JVM reader",
        f"its value {value!r} has no encoding",
        "a partition column of a string, integer, boolean, floating, date, timestamp, decimal or "
        "binary type (or option engine='python')",
    )


class _NotConvertible(ValueError):
    """A filter value that is not a value of its column's type (the filter is then ignored)."""


def _python_value(value: Json, family: str) -> object:
    """A JSON filter value as the Python type ``_partition_values`` gives the column."""
    if value is None:
        return None
    if family == "string" and isinstance(value, str):
        return value
    if family == "boolean" and isinstance(value, bool):
        return value
    if isinstance(value, bool):
        raise _NotConvertible(value)
    if family == "integer" and isinstance(value, int):
        return value
    if family == "floating" and isinstance(value, int | float | str):
        return float(value)  # "NaN" / "Infinity" arrive as strings
    if family == "date" and isinstance(value, str):
        return dt.date.fromisoformat(value)
    if family == "timestamp" and isinstance(value, str):
        parsed = dt.datetime.fromisoformat(value)
        return parsed if parsed.tzinfo is None else parsed.astimezone(dt.UTC).replace(tzinfo=None)
    if family == "timestamp" and isinstance(value, int):
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)  # naive, read as UTC
    if family == "decimal" and isinstance(value, str | int):
        converted = decimal.Decimal(str(value))
        if not converted.is_finite():
            raise _NotConvertible(value)
        return converted
    if family == "binary" and isinstance(value, str):
        return base64.b64decode(value, validate=True)
    raise _NotConvertible(value)


def filter_from_json(spec: Json, families: Mapping[str, str]) -> Filter | None:
    """A pushed Spark filter rebuilt as a ``pyspark.sql.datasource`` Filter, or None to ignore it.

    Args:
        spec: the filter as JSON (see the module docstring).
        families: lower-case partition column name -> ``_type_family`` of its Hive type.

    Returns:
        The Filter with values of the column's Python type, or None when the filter is not on a
        partition column, has an unknown op or a value that does not convert.
    """
    from pyspark.sql import datasource as ds

    if not isinstance(spec, dict):
        return None
    op = spec.get("op")
    if op == "Not":
        child = filter_from_json(spec.get("child"), families)
        return None if child is None else ds.Not(child)
    column = spec.get("column")
    if not isinstance(column, str) or column.lower() not in families:
        return None
    family, attribute = families[column.lower()], (column.lower(),)
    try:
        if op in _COMPARISON_OPS and "value" in spec:
            value = _python_value(spec["value"], family)
            if isinstance(value, float) and math.isnan(value):
                return None  # Spark orders NaN above every number; Python compares it to nothing
            comparisons: dict[str, type[Filter]] = {
                "EqualTo": ds.EqualTo,
                "EqualNullSafe": ds.EqualNullSafe,
                "GreaterThan": ds.GreaterThan,
                "GreaterThanOrEqual": ds.GreaterThanOrEqual,
                "LessThan": ds.LessThan,
                "LessThanOrEqual": ds.LessThanOrEqual,
            }
            return comparisons[op](attribute, value)  # type: ignore[call-arg]
        if op == "In" and isinstance(spec.get("values"), list):
            return ds.In(attribute, tuple(_python_value(v, family) for v in spec["values"]))
        if op == "IsNull":
            return ds.IsNull(attribute)
        if op == "IsNotNull":
            return ds.IsNotNull(attribute)
    except (ValueError, TypeError, ArithmeticError):  # _NotConvertible, a bad date, bad base64
        return None
    return None


# -- the server ------------------------------------------------------------------------------------


class PlannerServer:
    """Answers requests; keeps one open metastore per (metastore, warehouse) until ``close``."""

    def __init__(self) -> None:
        self._stores: dict[tuple[str | None, str], Metastore] = {}
        self._handlers: dict[str, Callable[[Mapping[str, Json], SourceOptions], dict[str, Json]]] = {
            "schema": self._schema,
            "plan": self._plan,
            "renew": self._renew,
            "release": self._release,
        }

    def close(self) -> None:
        """Close every metastore (best effort: one failing to close does not keep the others open)."""
        stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            try:
                store.close()
            except Exception:  # best-effort cleanup at exit; logged, nothing to retry
                _LOG.warning("hiveacid planner: closing a metastore failed", exc_info=True)

    def _store(self, options: SourceOptions) -> Metastore:
        key = (options.metastore, options.warehouse)
        store = self._stores.get(key)
        if store is None:
            from acid_core.metastore.factory import open_metastore

            store = self._stores[key] = open_metastore(options.metastore, options.warehouse)
        return store

    def _discard(self, options: SourceOptions) -> None:
        """Drop a metastore after an unexpected failure: the next request opens a fresh one."""
        store = self._stores.pop((options.metastore, options.warehouse), None)
        if store is not None:
            try:
                store.close()
            except Exception:  # best-effort cleanup of a store that already failed
                _LOG.debug("hiveacid planner: closing a failed metastore failed", exc_info=True)

    def handle_line(self, line: str) -> str:
        """One request line in, one response line out (no newline); never raises for bad input."""
        request_id: Json = None
        try:
            try:
                request = json.loads(line)
            except ValueError:
                raise _bad_request("line", line.strip()[:200], "one JSON object per line") from None
            if not isinstance(request, dict):
                raise _bad_request("line", line.strip()[:200], "one JSON object per line")
            request_id = request.get("id")
            response = {"id": request_id, "ok": True, **self.handle(request)}
            return json.dumps(response, allow_nan=False, separators=(",", ":"))
        except Exception as e:  # every failure becomes a response; the server goes on
            if not isinstance(e, AcidError):
                _LOG.debug("hiveacid planner: request %r failed", request_id, exc_info=True)
            response = {"id": request_id, "ok": False, "error": _one_line(e), "kind": type(e).__name__}
            try:
                return json.dumps(response, separators=(",", ":"))
            except (TypeError, ValueError):  # an id that is not JSON-serializable cannot come from JSON
                response["id"] = None
                return json.dumps(response, separators=(",", ":"))

    def handle(self, request: Mapping[str, Json]) -> dict[str, Json]:
        """The response fields (besides ``id`` and ``ok``) for one decoded request.

        Raises:
            InvalidMetastoreRequestError: an unknown op, or an id or options that are not valid.
            AcidError: whatever planning raises.
        """
        request_id = request.get("id")
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            raise _bad_request("id", request_id, "an integer")
        op = request.get("op")
        handler = self._handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            raise _bad_request("op", op, f"one of {sorted(self._handlers)}")
        raw_options = request.get("options")
        if not isinstance(raw_options, dict):
            raise _bad_request("options", raw_options, "an object of data source options")
        options = parse_source_options({str(k): str(v) for k, v in raw_options.items() if v is not None})
        try:
            return handler(request, options)
        except AcidError:
            raise
        except Exception:
            self._discard(options)
            raise

    def _table(self, options: SourceOptions) -> Table:
        from pyspark_hiveacid.source import _load_acid_table

        return _load_acid_table(self._store(options), options.table, "read")

    def _schema(self, request: Mapping[str, Json], options: SourceOptions) -> dict[str, Json]:
        from pyspark_hiveacid.source import spark_schema_of

        table = self._table(options)
        return {
            "schema": spark_schema_of(table, options.columns).jsonValue(),
            "table_schema": spark_schema_of(table).jsonValue(),
            "partition_columns": [k.name for k in table.partition_keys],
            "data_columns": [c.name for c in table.columns],
        }

    def _plan(self, request: Mapping[str, Json], options: SourceOptions) -> dict[str, Json]:
        from pyspark_hiveacid.source import load_read_plan

        filters_json = request.get("filters", [])
        if not isinstance(filters_json, list):
            raise _bad_request("filters", filters_json, "a list of filters")
        table = self._table(options)
        families = {k.name.lower(): _type_family(k.type) for k in table.partition_keys}
        # filter_from_json keeps only filters on partition columns, as pushFilters does (_filter_columns).
        filters = [f for f in (filter_from_json(spec, families) for spec in filters_json) if f is not None]
        read_plan = load_read_plan(self._store(options), table, options, filters)
        key_types = [(k.name, k.type) for k in table.partition_keys]
        return {
            "lease_id": read_plan.snapshot.lease_id,
            "renew": read_plan.renewed_lease is not None,
            "lease_ttl": options.lease_ttl,
            "write_ids": read_plan.snapshot.write_ids.to_string(),
            "row_type": row_type_of(table),
            "partitions": [
                {
                    "location": bucket.location,
                    "values": [
                        spark_value(value, hive_type, name)
                        for value, (name, hive_type) in zip(bucket.partition_values, key_types, strict=True)
                    ],
                    "bucket": bucket.bucket_id,
                    "files": [
                        {"path": _jvm_path(bucket.location, f.path), "kind": f.kind.value, "length": f.length}
                        for f in bucket.plan.data_files
                    ],
                    "deletes": [
                        {"path": _jvm_path(bucket.location, f.path), "length": f.length}
                        for f in bucket.plan.delete_files
                    ],
                }
                for bucket in read_plan.buckets
            ],
        }

    def _renew(self, request: Mapping[str, Json], options: SourceOptions) -> dict[str, Json]:
        from pyspark_hiveacid.snapshot import renew_snapshot

        ttl = request.get("ttl", options.lease_ttl)
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise _bad_request("ttl", ttl, "a positive number of seconds")
        renew_snapshot(self._store(options), _lease_id(request), float(ttl))
        return {}

    def _release(self, request: Mapping[str, Json], options: SourceOptions) -> dict[str, Json]:
        lease_id = _lease_id(request)
        try:
            self._store(options).release_lease(lease_id)
        except NoSuchLeaseError:
            _LOG.debug("hiveacid planner: lease %d already gone", lease_id)  # released or expired
        return {}

    def serve(self, lines: Iterable[str], out: IO[str]) -> None:
        """Answer every line of ``lines`` on ``out`` (one line each, flushed) until they end."""
        for line in lines:
            if not line.strip():
                continue
            out.write(self.handle_line(line) + "\n")
            out.flush()


def _lease_id(request: Mapping[str, Json]) -> int:
    lease_id = request.get("lease_id")
    if not isinstance(lease_id, int) or isinstance(lease_id, bool) or lease_id < 1:
        raise _bad_request("lease_id", lease_id, "a lease ID (an integer >= 1)")
    return lease_id


def main() -> int:
    """Serve stdin to stdout until EOF; returns the exit code (0).

    Logs go to stderr at WARNING (DEBUG, with tracebacks, when ``ACIDFLOW_DEBUG`` is set).
    """
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if debug else logging.WARNING,
        format="hiveacid planner: %(levelname)s: %(name)s: %(message)s",
    )
    # Responses own stdout: whatever else prints (a library, a warning) goes to stderr instead.
    out, sys.stdout = sys.stdout, sys.stderr
    server = PlannerServer()
    try:
        server.serve(sys.stdin, out)
    finally:
        server.close()
        sys.stdout = out
    return 0


def _jvm_path(location: str, path: str) -> str:
    """A file's path as the JVM reader opens it: with its name node on HDFS.

    The plan's paths are store-local (``/wh/t/delta_1_1/bucket_00000`` on HDFS); Hadoop resolves a
    bare path on its default file system (the local disk), so HDFS files get the location's
    ``scheme://authority`` back.
    """
    scheme, separator, rest = location.partition("://")
    if separator and scheme.lower() in ("hdfs", "viewfs"):
        return f"{scheme.lower()}://{rest.partition('/')[0]}{path}"
    return path


if __name__ == "__main__":
    sys.exit(main())
