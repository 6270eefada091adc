"""The platform's configuration: ``acidflow.yaml`` plus ``ACIDFLOW_*`` environment variables.

::

    defaults (work on a laptop) < acidflow.yaml ($ACIDFLOW_CONFIG) < ACIDFLOW_* variables
        < per table: TBLPROPERTIES (compactorthreshold.hive.compactor.*, acidflow.backlog.*)

The file (every key optional; see ``acidflow.yaml.example``)::

    warehouse: ./warehouse                  # $ACIDFLOW_WAREHOUSE
    metastore: null                         # $ACIDFLOW_METASTORE (SQLAlchemy URL; null: embedded SQLite)
    groups:                                 # one sensor per group; tables "db.t" or whole databases "db.*"
      - {name: all, tables: ["*.*"]}
    thresholds: {delta_num: 10, delta_pct: 0.1, aborted: 1000, aborted_time: 12h}
    backlog:    {warning_deltas: 20, critical_deltas: 50, critical_enqueue_age: 6h,
                 critical_working_age: 6h, critical_cleaning_age: 24h, failure_streak: 3}
    history:    {retention: 14d, sample_interval: 5m, window: 7d}   # the backlog page's trends
    schedules:  {sensor: "*/30 * * * *", cleaner: "@hourly", paused_at_creation: false}
    compaction: {pool: acidflow_compaction, pool_slots: 2, executor: auto,
                 spark_threshold_bytes: 1073741824, spark_conn_id: spark_default,
                 retries: 2}                # of the compaction DAG's tasks (0: fail, and alert, at once)
    cleaner:    {retention: 0, quarantine: false,
                 retries: 2}                # of the cleaner DAG's task (0: fail, and alert, at once)
    alerts:
      default: [log]                        # channels: log, webhook:<url>, email:<address>,
                                            # notifier:<module.Class>?arg=value (an Airflow notifier)
      routes:  [{owner: alice, channels: ["email:alice@example.com"]},
                {tables: ["sales.*"], channels: ["webhook:https://hooks.example.com/x"]}]

Invariants: ``load_config`` returns a fully validated frozen value; durations accept ``43200``,
``30s``, ``15m``, ``12h``, ``7d``.
Not here: reading tables (``hooks``), deciding (``acid_core.compaction.initiator``).
Errors: ``InvalidPlatformConfigError`` naming the file or variable, the key, the value and what
was expected.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from acid_core.errors import InvalidPlatformConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CONFIG_ENV",
    "AcidflowConfig",
    "AlertRoute",
    "BacklogLevels",
    "TableGroup",
    "load_config",
    "load_config_for_dag",
    "load_config_for_task",
    "parse_duration",
]

CONFIG_ENV: Final = "ACIDFLOW_CONFIG"
_INT_MAX: Final = 2**31 - 1  # counts and thresholds are Java ints in Hive (HiveConf IntVar)
_LONG_MAX: Final = 2**63 - 1
WAREHOUSE_ENV: Final = "ACIDFLOW_WAREHOUSE"
METASTORE_ENV: Final = "ACIDFLOW_METASTORE"
EXECUTOR_ENV: Final = "ACIDFLOW_COMPACTION_EXECUTOR"
SPARK_THRESHOLD_ENV: Final = "ACIDFLOW_SPARK_THRESHOLD_BYTES"
ALERTS_ENV: Final = "ACIDFLOW_ALERT_CHANNELS"
# Table-level overrides of the backlog levels (TBLPROPERTIES, any case).
CRITICAL_DELTAS_PROPERTY: Final = "acidflow.backlog.critical-deltas"
WARNING_DELTAS_PROPERTY: Final = "acidflow.backlog.warning-deltas"
ALERT_CHANNELS_PROPERTY: Final = "acidflow.alert.channels"

_UNITS: Final = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_EXECUTORS: Final = ("auto", "embedded", "spark")
_TOP_KEYS: Final = frozenset(
    {
        "history",
        "warehouse",
        "metastore",
        "groups",
        "thresholds",
        "backlog",
        "schedules",
        "compaction",
        "cleaner",
        "alerts",
    }
)


def parse_duration(source: str, key: str, value: object) -> float:
    """Seconds from ``43200``, ``30s``, ``15m``, ``12h`` or ``7d``.

    Raises:
        InvalidPlatformConfigError: anything else, or a negative duration.
    """
    if isinstance(value, bool):
        raise InvalidPlatformConfigError(source, key, value, "a duration such as 3600, 15m, 12h or 7d")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip().lower()
        unit = text[-1:] if text[-1:].isalpha() else ""
        try:
            seconds = float(text[: len(text) - len(unit)]) * _UNITS[unit]
        except (KeyError, ValueError):
            raise InvalidPlatformConfigError(
                source, key, value, "a duration such as 3600, 15m, 12h or 7d"
            ) from None
    if not 0 <= seconds < math.inf:  # NaN and inf are no durations either
        raise InvalidPlatformConfigError(source, key, value, "a finite non-negative duration")
    return seconds


def _channel(source: str, key: str, value: object) -> str:
    text = str(value).strip()
    kind, _, target = text.partition(":")
    if kind == "log" and not target:
        return text
    if kind == "webhook" and target.startswith(("http://", "https://")):
        return text
    if kind == "email" and "@" in target:
        return text
    if kind == "notifier" and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(\?.*)?", target):
        return text
    raise InvalidPlatformConfigError(
        source,
        key,
        value,
        "a channel: log, webhook:<http(s) URL>, email:<address> or "
        "notifier:<module.NotifierClass>[?arg=value&...]",
    )


@dataclass(frozen=True, slots=True)
class TableGroup:
    """Tables watched by one sensor: ``db.table`` names or patterns (``db.*``, ``*.*``)."""

    name: str
    tables: tuple[str, ...] = ("*.*",)

    def matches(self, table: str) -> bool:
        """Whether ``db.table`` belongs to this group."""
        return any(fnmatch.fnmatchcase(table.lower(), pattern.lower()) for pattern in self.tables)


@dataclass(frozen=True, slots=True)
class BacklogLevels:
    """When a table's backlog is a warning or critical (alerts fire at critical)."""

    warning_deltas: int = 20
    critical_deltas: int = 50
    critical_enqueue_age_seconds: float = 6 * 3600.0
    critical_cleaning_age_seconds: float = 24 * 3600.0
    critical_working_age_seconds: float = 6 * 3600.0
    failure_streak: int = 3

    def for_table(self, properties: Mapping[str, str], table: str) -> BacklogLevels:
        """These levels with the table's ``acidflow.backlog.*`` TBLPROPERTIES applied."""
        lowered = {key.lower(): value for key, value in properties.items()}
        changes: dict[str, int] = {}
        for key, attribute in (
            (WARNING_DELTAS_PROPERTY, "warning_deltas"),
            (CRITICAL_DELTAS_PROPERTY, "critical_deltas"),
        ):
            if key in lowered:
                changes[attribute] = _non_negative_int(f"TBLPROPERTIES of {table}", key, lowered[key])
        return replace(self, **changes) if changes else self  # type: ignore[arg-type]

    def level(self, delta_count: int) -> str:
        """``ok``, ``warning`` or ``critical`` for this many deltas."""
        if delta_count > self.critical_deltas:
            return "critical"
        if delta_count > self.warning_deltas:
            return "warning"
        return "ok"


@dataclass(frozen=True, slots=True)
class AlertRoute:
    """Where alerts of matching tables go: by table owner and/or table pattern."""

    channels: tuple[str, ...]
    owner: str | None = None
    tables: tuple[str, ...] = ()

    def matches(self, table: str, owner: str | None) -> bool:
        """Whether an alert about ``table`` (owned by ``owner``) takes this route."""
        if self.owner is not None and (owner or "").lower() != self.owner.lower():
            return False
        return not self.tables or any(fnmatch.fnmatchcase(table.lower(), p.lower()) for p in self.tables)


@dataclass(frozen=True, slots=True)
class AcidflowConfig:
    """The validated configuration (see the module docstring for the file format)."""

    warehouse: str = "./warehouse"
    metastore: str | None = None
    groups: tuple[TableGroup, ...] = (TableGroup("all"),)
    delta_num_threshold: int = 10
    delta_pct_threshold: float = 0.1
    aborted_threshold: int = 1000
    aborted_time_threshold_seconds: float = 12 * 3600.0
    levels: BacklogLevels = field(default_factory=BacklogLevels)
    sensor_schedule: str | None = "*/30 * * * *"
    cleaner_schedule: str | None = "@hourly"
    paused_at_creation: bool = False
    sensor_poke_seconds: float = 60.0
    sensor_timeout_seconds: float = 25 * 60.0
    pool: str = "acidflow_compaction"
    pool_slots: int = 2
    executor: str = "auto"
    spark_threshold_bytes: int = 1 << 30
    spark_conn_id: str = "spark_default"
    compaction_retries: int = 2
    cleaner_retries: int = 2
    cleaner_retention_seconds: float = 0.0
    cleaner_quarantine: bool = False
    default_channels: tuple[str, ...] = ("log",)
    routes: tuple[AlertRoute, ...] = ()
    history_retention_seconds: float = 14 * 86400.0
    history_sample_seconds: float = 300.0
    history_window_seconds: float = 7 * 86400.0
    source: str = "defaults"

    def initiator_config(self) -> Any:  # noqa: ANN401 - acid_core.compaction.initiator.InitiatorConfig
        """The initiator's thresholds (imported lazily: DAG files stay light)."""
        from acid_core.compaction.initiator import InitiatorConfig

        return InitiatorConfig(
            delta_num_threshold=self.delta_num_threshold,
            delta_pct_threshold=self.delta_pct_threshold,
            aborted_threshold=self.aborted_threshold,
            aborted_time_threshold_seconds=self.aborted_time_threshold_seconds,
        )

    def group(self, name: str) -> TableGroup:
        """The group called ``name``."""
        for group in self.groups:
            if group.name == name:
                return group
        raise InvalidPlatformConfigError(
            self.source, "groups", name, f"one of {[g.name for g in self.groups]}"
        )

    def channels_for(
        self, table: str, owner: str | None, properties: Mapping[str, str] | None = None
    ) -> tuple[str, ...]:
        """Alert channels of a table: its TBLPROPERTIES, else matching routes, else the default."""
        lowered = {key.lower(): value for key, value in (properties or {}).items()}
        if ALERT_CHANNELS_PROPERTY in lowered:
            source = f"TBLPROPERTIES of {table}"
            return tuple(
                _channel(source, ALERT_CHANNELS_PROPERTY, c)
                for c in lowered[ALERT_CHANNELS_PROPERTY].split(",")
                if c.strip()
            )
        routed = [c for route in self.routes if route.matches(table, owner) for c in route.channels]
        return tuple(dict.fromkeys(routed)) or self.default_channels


_MAX_RETRIES = 100


def _non_negative_int(source: str, key: str, value: object, maximum: int = _INT_MAX) -> int:
    expected = f"an integer from 0 to {maximum}"
    if isinstance(value, bool):
        raise InvalidPlatformConfigError(source, key, value, expected)
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidPlatformConfigError(source, key, value, expected) from None
    if not 0 <= number <= maximum:
        raise InvalidPlatformConfigError(source, key, value, expected)
    return number


def _text(source: str, key: str, value: object, expected: str) -> str:
    # A YAML list, number or !!binary where a path or URL belongs is a mistake, not a str() away.
    if not isinstance(value, str) or not value.strip():
        raise InvalidPlatformConfigError(source, key, value, expected)
    return value.strip()


def _non_negative_float(source: str, key: str, value: object) -> float:
    if isinstance(value, bool):
        raise InvalidPlatformConfigError(source, key, value, "a non-negative number")
    try:
        number = float(str(value).strip())
    except ValueError:
        raise InvalidPlatformConfigError(source, key, value, "a non-negative number") from None
    if not 0 <= number < math.inf:
        raise InvalidPlatformConfigError(source, key, value, "a finite non-negative number")
    return number


def _section(source: str, data: Mapping[str, Any], key: str, allowed: set[str]) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise InvalidPlatformConfigError(source, key, value, f"a mapping with keys {sorted(allowed)}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise InvalidPlatformConfigError(
            source, f"{key}.{unknown[0]}", value[unknown[0]], f"one of the keys {sorted(allowed)}"
        )
    return value


def _string_list(source: str, key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidPlatformConfigError(source, key, value, "a list of non-empty strings")
    return tuple(v.strip() for v in value)


# One part of a watch-list pattern: Hive name characters ([A-Za-z0-9_], MetaStoreUtils.validateName)
# and fnmatch's wildcards * ? [set] [!set]; anything else (a space, '/', a second '.', an unclosed
# '[') can match no table, so the group would watch nothing without a word.
_PATTERN_PART: Final = re.compile(r"(?:[A-Za-z0-9_*?]|\[!?[A-Za-z0-9_-]+\])+")
_PATTERN_EXPECTED: Final = (
    "db.table, db.* or *.* (letters, digits, '_' and the wildcards * ? [abc] [!abc] on each side of one '.')"
)


def _table_patterns(source: str, key: str, value: object) -> tuple[str, ...]:
    patterns = _string_list(source, key, value)
    for pattern in patterns:
        database, dot, table = pattern.partition(".")
        if not dot or not all(_PATTERN_PART.fullmatch(part) for part in (database, table)):
            raise InvalidPlatformConfigError(source, key, pattern, _PATTERN_EXPECTED)
    return patterns


# SQLAlchemy's URL syntax (sqlalchemy.engine.url._parse_url), checked without importing SQLAlchemy:
# DAG parsing stays light and offline. Connecting is the tasks' business.
_SQLALCHEMY_URL: Final = re.compile(
    r"(?P<name>[A-Za-z][\w+]*)://"
    r"(?:(?P<user>[^:/]*)(?::(?P<password>[^@]*))?@)?"
    r"(?:(?:\[(?P<ipv6host>[^/?]+)\]|(?P<host>[^/:?]+))?(?::(?P<port>[^/?]*))?)?"
    r"(?:/(?P<database>[^?]*))?(?:\?(?P<query>.*))?",
    re.DOTALL,
)
_METASTORE_EXPECTED: Final = (
    "a SQLAlchemy URL (dialect[+driver]://[user[:password]@][host][:port][/database]) or "
    "thrift://host[:port][,thrift://host2[:port]], or null for the embedded one"
)


def _metastore(source: str, key: str, value: object) -> str:
    text = _text(source, key, value, _METASTORE_EXPECTED)
    if text.lower().startswith("thrift://"):
        # Hive's hive.metastore.uris, as acid_core.metastore.hive.thrift.parse_metastore_uris reads it.
        for part in (p.strip() for p in text.split(",")):
            split = urlsplit(part)
            try:
                port = split.port
            except ValueError:
                port = -1
            if split.scheme.lower() != "thrift" or not split.hostname or port == -1 or port == 0:
                raise InvalidPlatformConfigError(source, key, text, _METASTORE_EXPECTED)
            if split.path not in ("", "/"):
                raise InvalidPlatformConfigError(source, key, text, _METASTORE_EXPECTED)
        return text
    match = _SQLALCHEMY_URL.fullmatch(text)
    port = match and match.group("port")
    if match is None or (port is not None and not (port.isdigit() and 0 < int(port) < 65536)):
        raise InvalidPlatformConfigError(source, key, text, _METASTORE_EXPECTED)
    return text


def _schedule(source: str, key: str, value: object) -> str | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in {"", "none", "null"}):
        return None
    if not isinstance(value, str):
        raise InvalidPlatformConfigError(
            source, key, value, "a cron expression, a preset like @hourly, or null"
        )
    text = value.strip()
    if text.startswith("@"):
        if text not in {"@once", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@continuous"}:
            raise InvalidPlatformConfigError(source, key, value, "a cron preset such as @hourly or @daily")
        return text
    from croniter import croniter  # Airflow's own dependency

    if len(text.split()) != 5 or not croniter.is_valid(text):
        raise InvalidPlatformConfigError(
            source, key, value, "a five-field cron expression such as '*/30 * * * *'"
        )
    return text


def _parse(data: Mapping[str, Any], source: str) -> AcidflowConfig:
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise InvalidPlatformConfigError(
            source, unknown[0], data[unknown[0]], f"one of the keys {sorted(_TOP_KEYS)}"
        )
    changes: dict[str, Any] = {"source": source}
    if data.get("warehouse") is not None:
        changes["warehouse"] = _warehouse(
            source, _text(source, "warehouse", data["warehouse"], "a directory or URI string")
        )
    if data.get("metastore") is not None:
        changes["metastore"] = _metastore(source, "metastore", data["metastore"])
    if "groups" in data:
        raw = data["groups"]
        if not isinstance(raw, list) or not raw:
            raise InvalidPlatformConfigError(source, "groups", raw, "a non-empty list of {name, tables}")
        groups = []
        for index, item in enumerate(raw):
            key = f"groups[{index}]"
            if not isinstance(item, dict) or set(item) - {"name", "tables"} or not item.get("name"):
                raise InvalidPlatformConfigError(
                    source, key, item, "a mapping {name: str, tables: [db.t|db.*]}"
                )
            name = str(item["name"])
            if not name.replace("_", "").replace("-", "").isalnum():
                raise InvalidPlatformConfigError(source, f"{key}.name", name, "letters, digits, '_' or '-'")
            groups.append(
                TableGroup(name, _table_patterns(source, f"{key}.tables", item.get("tables", ["*.*"])))
            )
        if len({g.name for g in groups}) != len(groups):
            raise InvalidPlatformConfigError(source, "groups", [g.name for g in groups], "unique group names")
        changes["groups"] = tuple(groups)
    thresholds = _section(source, data, "thresholds", {"delta_num", "delta_pct", "aborted", "aborted_time"})
    if "delta_num" in thresholds:
        changes["delta_num_threshold"] = _non_negative_int(
            source, "thresholds.delta_num", thresholds["delta_num"]
        )
    if "delta_pct" in thresholds:
        changes["delta_pct_threshold"] = _non_negative_float(
            source, "thresholds.delta_pct", thresholds["delta_pct"]
        )
    if "aborted" in thresholds:
        changes["aborted_threshold"] = _non_negative_int(source, "thresholds.aborted", thresholds["aborted"])
    if "aborted_time" in thresholds:
        changes["aborted_time_threshold_seconds"] = parse_duration(
            source, "thresholds.aborted_time", thresholds["aborted_time"]
        )
    backlog = _section(
        source,
        data,
        "backlog",
        {
            "warning_deltas",
            "critical_deltas",
            "critical_enqueue_age",
            "critical_working_age",
            "critical_cleaning_age",
            "failure_streak",
        },
    )
    levels = BacklogLevels()
    if "warning_deltas" in backlog:
        levels = replace(
            levels,
            warning_deltas=_non_negative_int(source, "backlog.warning_deltas", backlog["warning_deltas"]),
        )
    if "critical_deltas" in backlog:
        levels = replace(
            levels,
            critical_deltas=_non_negative_int(source, "backlog.critical_deltas", backlog["critical_deltas"]),
        )
    if "critical_enqueue_age" in backlog:
        levels = replace(
            levels,
            critical_enqueue_age_seconds=parse_duration(
                source, "backlog.critical_enqueue_age", backlog["critical_enqueue_age"]
            ),
        )
    if "critical_cleaning_age" in backlog:
        levels = replace(
            levels,
            critical_cleaning_age_seconds=parse_duration(
                source, "backlog.critical_cleaning_age", backlog["critical_cleaning_age"]
            ),
        )
    if "critical_working_age" in backlog:
        levels = replace(
            levels,
            critical_working_age_seconds=parse_duration(
                source, "backlog.critical_working_age", backlog["critical_working_age"]
            ),
        )
    if "failure_streak" in backlog:
        streak = _non_negative_int(source, "backlog.failure_streak", backlog["failure_streak"])
        if streak < 1:
            raise InvalidPlatformConfigError(source, "backlog.failure_streak", streak, "at least 1")
        levels = replace(levels, failure_streak=streak)
    if levels.warning_deltas > levels.critical_deltas:
        raise InvalidPlatformConfigError(
            source,
            "backlog.warning_deltas",
            levels.warning_deltas,
            f"at most critical_deltas ({levels.critical_deltas})",
        )
    changes["levels"] = levels
    history = _section(source, data, "history", {"retention", "sample_interval", "window"})
    for key, attribute in (
        ("retention", "history_retention_seconds"),
        ("sample_interval", "history_sample_seconds"),
        ("window", "history_window_seconds"),
    ):
        if key in history:
            changes[attribute] = parse_duration(source, f"history.{key}", history[key])
    schedules = _section(
        source,
        data,
        "schedules",
        {"sensor", "cleaner", "sensor_poke", "sensor_timeout", "paused_at_creation"},
    )
    if "paused_at_creation" in schedules:
        if not isinstance(schedules["paused_at_creation"], bool):
            raise InvalidPlatformConfigError(
                source, "schedules.paused_at_creation", schedules["paused_at_creation"], "true or false"
            )
        changes["paused_at_creation"] = schedules["paused_at_creation"]
    if "sensor" in schedules:
        changes["sensor_schedule"] = _schedule(source, "schedules.sensor", schedules["sensor"])
    if "cleaner" in schedules:
        changes["cleaner_schedule"] = _schedule(source, "schedules.cleaner", schedules["cleaner"])
    if "sensor_poke" in schedules:
        changes["sensor_poke_seconds"] = parse_duration(
            source, "schedules.sensor_poke", schedules["sensor_poke"]
        )
    if "sensor_timeout" in schedules:
        changes["sensor_timeout_seconds"] = parse_duration(
            source, "schedules.sensor_timeout", schedules["sensor_timeout"]
        )
    compaction = _section(
        source,
        data,
        "compaction",
        {"pool", "pool_slots", "executor", "spark_threshold_bytes", "spark_conn_id", "retries"},
    )
    if "pool" in compaction:
        changes["pool"] = _string_list(source, "compaction.pool", compaction["pool"])[0]
    if "pool_slots" in compaction:
        slots = _non_negative_int(source, "compaction.pool_slots", compaction["pool_slots"])
        if slots < 1:
            raise InvalidPlatformConfigError(source, "compaction.pool_slots", slots, "at least 1")
        changes["pool_slots"] = slots
    if "executor" in compaction:
        changes["executor"] = _executor(source, "compaction.executor", compaction["executor"])
    if "spark_threshold_bytes" in compaction:
        changes["spark_threshold_bytes"] = _non_negative_int(
            source, "compaction.spark_threshold_bytes", compaction["spark_threshold_bytes"], _LONG_MAX
        )
    if "retries" in compaction:
        changes["compaction_retries"] = _non_negative_int(
            source, "compaction.retries", compaction["retries"], _MAX_RETRIES
        )
    if "spark_conn_id" in compaction:
        changes["spark_conn_id"] = _string_list(
            source, "compaction.spark_conn_id", compaction["spark_conn_id"]
        )[0]
    cleaner = _section(source, data, "cleaner", {"retention", "quarantine", "retries"})
    if "retries" in cleaner:
        changes["cleaner_retries"] = _non_negative_int(
            source, "cleaner.retries", cleaner["retries"], _MAX_RETRIES
        )
    if "retention" in cleaner:
        changes["cleaner_retention_seconds"] = parse_duration(
            source, "cleaner.retention", cleaner["retention"]
        )
    if "quarantine" in cleaner:
        if not isinstance(cleaner["quarantine"], bool):
            raise InvalidPlatformConfigError(
                source, "cleaner.quarantine", cleaner["quarantine"], "true or false"
            )
        changes["cleaner_quarantine"] = cleaner["quarantine"]
    alerts = _section(source, data, "alerts", {"default", "routes"})
    if "default" in alerts:
        changes["default_channels"] = tuple(
            _channel(source, "alerts.default", c)
            for c in _string_list(source, "alerts.default", alerts["default"])
        )
    if "routes" in alerts:
        raw_routes = alerts["routes"]
        if not isinstance(raw_routes, list):
            raise InvalidPlatformConfigError(
                source, "alerts.routes", raw_routes, "a list of {owner, tables, channels}"
            )
        routes = []
        for index, item in enumerate(raw_routes):
            key = f"alerts.routes[{index}]"
            if (
                not isinstance(item, dict)
                or set(item) - {"owner", "tables", "channels"}
                or "channels" not in item
            ):
                raise InvalidPlatformConfigError(
                    source, key, item, "a mapping {owner?, tables?, channels: [...]}"
                )
            channels = tuple(
                _channel(source, f"{key}.channels", c)
                for c in _string_list(source, f"{key}.channels", item["channels"])
            )
            tables = _table_patterns(source, f"{key}.tables", item["tables"]) if "tables" in item else ()
            owner = (
                None
                if item.get("owner") is None
                else _text(source, f"{key}.owner", item["owner"], "an owner name string")
            )
            routes.append(AlertRoute(channels, owner, tables))
        changes["routes"] = tuple(routes)
    return replace(AcidflowConfig(), **changes)


def _warehouse(source: str, value: str) -> str:
    """The warehouse URI, syntax only (offline: nothing is listed or created).

    Stored as given (a relative directory stays relative to the worker's directory); an empty
    value, an unknown scheme or a URI without bucket or host is refused here, at load time.
    """
    from acid_core.errors import InvalidWarehouseError
    from acid_core.fs import resolve_warehouse

    try:
        resolve_warehouse(value, source=source)
    except InvalidWarehouseError as error:
        raise InvalidPlatformConfigError(
            source, "warehouse", value, f"{error.expected} ({error.problem})"
        ) from error
    return value.strip()


def _executor(source: str, key: str, value: object) -> str:
    text = str(value).strip().lower()
    if text not in _EXECUTORS:
        raise InvalidPlatformConfigError(source, key, value, " or ".join(_EXECUTORS))
    return text


def load_config(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> AcidflowConfig:
    """Load ``path`` (default ``$ACIDFLOW_CONFIG``; none: the defaults) and apply ``ACIDFLOW_*`` variables.

    Raises:
        InvalidPlatformConfigError: a missing file, bad YAML, an unknown key or an invalid value.
    """
    env = os.environ if environ is None else environ
    path = path or env.get(CONFIG_ENV) or None
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        import yaml  # Airflow's own dependency

        source = str(path)
        file = Path(path)
        if not file.is_file():
            raise InvalidPlatformConfigError(CONFIG_ENV, "path", str(path), "an existing YAML file")
        try:
            loaded = yaml.safe_load(file.read_text()) or {}
        except yaml.YAMLError as error:
            raise InvalidPlatformConfigError(
                source, "<file>", str(error).splitlines()[0], "valid YAML"
            ) from error
        if not isinstance(loaded, dict):
            raise InvalidPlatformConfigError(source, "<file>", loaded, "a YAML mapping of settings")
        data = loaded
    config = _parse(data, source)
    overrides: dict[str, Any] = {}
    if WAREHOUSE_ENV in env:  # set but empty is refused, not read as "unset"
        overrides["warehouse"] = _warehouse(WAREHOUSE_ENV, env[WAREHOUSE_ENV])
    if env.get(METASTORE_ENV, "").strip():
        overrides["metastore"] = _metastore(METASTORE_ENV, METASTORE_ENV, env[METASTORE_ENV])
    if env.get(EXECUTOR_ENV, "").strip():
        overrides["executor"] = _executor(EXECUTOR_ENV, EXECUTOR_ENV, env[EXECUTOR_ENV])
    if env.get(SPARK_THRESHOLD_ENV, "").strip():
        overrides["spark_threshold_bytes"] = _non_negative_int(
            SPARK_THRESHOLD_ENV, SPARK_THRESHOLD_ENV, env[SPARK_THRESHOLD_ENV], _LONG_MAX
        )
    if env.get(ALERTS_ENV, "").strip():
        overrides["default_channels"] = tuple(
            _channel(ALERTS_ENV, ALERTS_ENV, c) for c in env[ALERTS_ENV].split(",") if c.strip()
        )
    return replace(config, **overrides) if overrides else config


def load_config_for_dag() -> AcidflowConfig:
    """``load_config()`` for a DAG file at parse time: an invalid setting is the DAG's import error.

    Only syntax is checked (no connection, no heavy import: parsing stays offline), and the error
    is one line naming the key and the value, which Airflow shows as the DAG file's import error
    (issue 24: a malformed metastore URL or watch-list pattern used to be accepted silently).

    Raises:
        InvalidPlatformConfigError: the configuration is invalid.
    """
    try:
        return load_config()
    except InvalidPlatformConfigError as error:
        raise InvalidPlatformConfigError(error.source, error.key, error.value, error.expected) from None


def load_config_for_task() -> AcidflowConfig:
    """``load_config()`` in a task: an invalid setting fails the task, without retries, in one line.

    Raises:
        AirflowFailException: the configuration is invalid (the message names the key and value).
    """
    try:
        return load_config()
    except InvalidPlatformConfigError as error:
        from airflow.sdk.exceptions import AirflowFailException

        raise AirflowFailException(f"acidflow configuration: {error}") from None
