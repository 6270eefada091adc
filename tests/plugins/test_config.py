"""acidflow.yaml and ACIDFLOW_* variables: defaults that work, overrides, clear errors."""

from __future__ import annotations

import pytest
from acidflow_airflow.config import AcidflowConfig, BacklogLevels, TableGroup, load_config, parse_duration

from acid_core.errors import InvalidPlatformConfigError


def _load(tmp_path, text, environ=None):
    path = tmp_path / "acidflow.yaml"
    path.write_text(text)
    return load_config(path, environ or {})


def test_load_config_without_file_gives_hive_defaults():
    config = load_config(None, {})
    assert config == AcidflowConfig()
    assert (config.delta_num_threshold, config.delta_pct_threshold, config.aborted_threshold) == (
        10,
        0.1,
        1000,
    )
    assert config.aborted_time_threshold_seconds == 43200.0
    assert config.groups == (TableGroup("all", ("*.*",)),)
    assert config.default_channels == ("log",)


def test_load_config_file_and_env_override(tmp_path):
    config = _load(
        tmp_path,
        "warehouse: /data/wh\n"
        "groups: [{name: sales, tables: ['sales.*']}, {name: hr, tables: [hr.employee]}]\n"
        "thresholds: {delta_num: 4, aborted_time: 2h}\n"
        "backlog: {warning_deltas: 3, critical_deltas: 9, critical_cleaning_age: 30m}\n"
        "schedules: {sensor: '@hourly', cleaner: null}\n"
        "compaction: {executor: spark, pool_slots: 4, retries: 0}\n"
        "cleaner: {retries: 1}\n"
        "alerts: {default: [log, 'webhook:http://hooks.local/x'], routes: [{owner: alice, channels: ['email:a@x.org']}]}\n",
        {"ACIDFLOW_WAREHOUSE": "/env/wh", "ACIDFLOW_METASTORE": "postgresql://m/db"},
    )
    assert config.warehouse == "/env/wh"
    assert config.metastore == "postgresql://m/db"
    assert [g.name for g in config.groups] == ["sales", "hr"]
    assert config.group("sales").matches("sales.orders")
    assert not config.group("sales").matches("hr.employee")
    assert config.delta_num_threshold == 4
    assert config.aborted_time_threshold_seconds == 7200.0
    assert config.levels == BacklogLevels(3, 9, 6 * 3600.0, 1800.0)
    assert (config.sensor_schedule, config.cleaner_schedule) == ("@hourly", None)
    assert (config.executor, config.pool_slots, config.compaction_retries) == ("spark", 4, 0)
    assert config.cleaner_retries == 1
    assert config.channels_for("sales.orders", "Alice") == ("email:a@x.org",)
    assert config.channels_for("sales.orders", "bob") == ("log", "webhook:http://hooks.local/x")


def test_table_properties_override_levels_and_routes():
    config = AcidflowConfig()
    props = {"ACIDFLOW.BACKLOG.CRITICAL-DELTAS": "5", "acidflow.alert.channels": "email:o@x.org, log"}
    assert config.levels.for_table(props, "db.t").critical_deltas == 5
    assert config.levels.for_table(props, "db.t").level(6) == "critical"
    assert config.channels_for("db.t", None, props) == ("email:o@x.org", "log")
    initiator = config.initiator_config()
    assert (
        initiator.with_table_properties(
            {"compactorthreshold.hive.compactor.delta.num.threshold": "3"}
        ).delta_num_threshold
        == 3
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "thresholds: {delta_num: -1}",
            "thresholds.delta_num=-1 in .*; expected an integer from 0 to 2147483647",
        ),
        ("thresholds: {delta_nums: 3}", "thresholds.delta_nums=3 in .*expected one of the keys"),
        ("sensor: 1", "sensor=1 in .*expected one of the keys"),
        (
            "backlog: {warning_deltas: 60}",
            "backlog.warning_deltas=60 .*expected at most critical_deltas \\(50\\)",
        ),
        ("schedules: {sensor: 'every minute'}", "schedules.sensor='every minute' .*five-field cron"),
        ("compaction: {executor: yarn}", "compaction.executor='yarn' .*auto or embedded or spark"),
        ("alerts: {default: ['pager:x']}", "alerts.default='pager:x' .*a channel: log, webhook"),
        (
            "groups: [{name: a, tables: [orders]}]",
            "groups\\[0\\].tables='orders' .*db.table, db.\\* or \\*.\\*",
        ),
        ("groups: [{name: a}, {name: a}]", "expected unique group names"),
        ("thresholds: {aborted_time: soon}", "thresholds.aborted_time='soon' .*a duration"),
        ("[1, 2]", "expected a YAML mapping"),
    ],
    ids=lambda value: value if len(value) < 30 else value[:30],
)
def test_load_config_invalid_value_names_key_and_expectation(tmp_path, text, message):
    with pytest.raises(InvalidPlatformConfigError, match=message):
        _load(tmp_path, text)


def test_load_config_missing_file_and_bad_env():
    with pytest.raises(InvalidPlatformConfigError, match=r"ACIDFLOW_CONFIG.*expected an existing YAML file"):
        load_config(None, {"ACIDFLOW_CONFIG": "/nonexistent/acidflow.yaml"})
    with pytest.raises(InvalidPlatformConfigError, match="ACIDFLOW_SPARK_THRESHOLD_BYTES='lots'"):
        load_config(None, {"ACIDFLOW_SPARK_THRESHOLD_BYTES": "lots"})


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(30, 30.0), ("45", 45.0), ("30s", 30.0), ("15m", 900.0), ("12h", 43200.0), ("7d", 604800.0)],
)
def test_parse_duration(value, seconds):
    assert parse_duration("test", "k", value) == seconds


GARBAGE_CONFIG_CASES = [
    # issue 11 part 6: values that str() or float() used to wave through
    ("warehouse: [1, 2]", r"warehouse=\[1, 2\] in .*expected a directory or URI string"),
    ("warehouse: !!binary aGVsbG8=", r"warehouse=b'hello' in .*expected a directory or URI string"),
    ("warehouse: ''", r"warehouse='' in .*expected a directory or URI string"),
    ("metastore: 5", r"metastore=5 in .*expected a SQLAlchemy URL"),
    ("thresholds: {delta_pct: .inf}", r"thresholds.delta_pct=inf in .*expected a finite non-negative number"),
    ("thresholds: {delta_pct: .nan}", r"thresholds.delta_pct=nan in .*expected a finite non-negative number"),
    (
        "thresholds: {delta_num: 99999999999999999999}",
        r"thresholds.delta_num=99999999999999999999 in .*expected an integer from 0 to 2147483647",
    ),
    (
        "backlog: {critical_enqueue_age: 1e400}",
        r"critical_enqueue_age='1e400' .*finite non-negative duration",
    ),
    ("schedules: {cleaner: '99 * * * *'}", r"schedules.cleaner='99 \* \* \* \*' .*five-field cron"),
    (
        "compaction: {pool_slots: 99999999999999999999}",
        r"compaction.pool_slots=99999999999999999999 .*an integer from 0 to 2147483647",
    ),
    ("compaction: {retries: -1}", r"compaction.retries=-1 .*an integer from 0 to 100"),
    ("cleaner: {retries: 101}", r"cleaner.retries=101 .*an integer from 0 to 100"),
    (
        "compaction: {spark_threshold_bytes: 99999999999999999999}",
        r"spark_threshold_bytes=99999999999999999999 .*an integer from 0 to 9223372036854775807",
    ),
    ("alerts: {routes: [{owner: 5, channels: [log]}]}", r"alerts.routes\[0\].owner=5 .*an owner name string"),
]


@pytest.mark.parametrize(
    ("text", "message"), GARBAGE_CONFIG_CASES, ids=[c[0][:40] for c in GARBAGE_CONFIG_CASES]
)
def test_load_config_garbage_names_key_and_type(tmp_path, text, message):
    with pytest.raises(InvalidPlatformConfigError, match=message) as info:
        _load(tmp_path, text)
    assert "\n" not in str(info.value)


def test_load_config_for_task_fails_the_task_in_one_line(tmp_path, monkeypatch):
    from acidflow_airflow.config import load_config_for_task
    from airflow.sdk.exceptions import AirflowFailException

    path = tmp_path / "acidflow.yaml"
    path.write_text("thresholds: {delta_num: many}")
    monkeypatch.setenv("ACIDFLOW_CONFIG", str(path))
    with pytest.raises(AirflowFailException) as info:
        load_config_for_task()
    assert str(info.value) == (
        f"acidflow configuration: Invalid acidflow setting thresholds.delta_num='many' in {path}; "
        "expected an integer from 0 to 2147483647; hint: see acidflow.yaml.example for every setting "
        "and its default"
    )
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_load_config_for_dag_invalid_setting_raises_one_line(tmp_path, monkeypatch):
    """Issue 24: the DAG file shows the bad setting as its import error (it used to fall back)."""
    from acidflow_airflow.config import load_config_for_dag

    path = tmp_path / "acidflow.yaml"
    path.write_text("schedules: {cleaner: 'whenever'}")
    monkeypatch.setenv("ACIDFLOW_CONFIG", str(path))
    with pytest.raises(InvalidPlatformConfigError) as info:
        load_config_for_dag()
    assert str(info.value) == (
        f"Invalid acidflow setting schedules.cleaner='whenever' in {path}; expected a five-field cron "
        "expression such as '*/30 * * * *'; hint: see acidflow.yaml.example for every setting and its default"
    )
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


METASTORE_EXPECTED = (
    "a SQLAlchemy URL (dialect[+driver]://[user[:password]@][host][:port][/database]) or "
    "thrift://host[:port][,thrift://host2[:port]], or null for the embedded one"
)
PATTERN_EXPECTED = (
    "db.table, db.* or *.* (letters, digits, '_' and the wildcards * ? [abc] [!abc] on each side of one '.')"
)
HINT = "; hint: see acidflow.yaml.example for every setting and its default"

MALFORMED_SYNTAX_CASES = [
    # issue 24: accepted silently before; each would fail only when a task connects, or match nothing
    ("metastore: garbage", "metastore='garbage'", METASTORE_EXPECTED),
    ("metastore: 'postgresql//m/db'", "metastore='postgresql//m/db'", METASTORE_EXPECTED),
    ("metastore: 'postgresql://m:port/db'", "metastore='postgresql://m:port/db'", METASTORE_EXPECTED),
    ("metastore: 'postgresql://m:99999/db'", "metastore='postgresql://m:99999/db'", METASTORE_EXPECTED),
    ("metastore: 'thrift://:9083'", "metastore='thrift://:9083'", METASTORE_EXPECTED),
    ("metastore: 'thrift://h:9083,http://h2'", "metastore='thrift://h:9083,http://h2'", METASTORE_EXPECTED),
    ("groups: [{name: a, tables: ['sales..orders']}]", "groups[0].tables='sales..orders'", PATTERN_EXPECTED),
    ("groups: [{name: a, tables: ['sales.[orders']}]", "groups[0].tables='sales.[orders'", PATTERN_EXPECTED),
    ("groups: [{name: a, tables: ['sales.ord ers']}]", "groups[0].tables='sales.ord ers'", PATTERN_EXPECTED),
    ("groups: [{name: a, tables: ['db.t.x']}]", "groups[0].tables='db.t.x'", PATTERN_EXPECTED),
    ("groups: [{name: a, tables: ['sales/x.t']}]", "groups[0].tables='sales/x.t'", PATTERN_EXPECTED),
    (
        "alerts: {routes: [{tables: ['hr.em-ployee'], channels: [log]}]}",
        "alerts.routes[0].tables='hr.em-ployee'",
        PATTERN_EXPECTED,
    ),
]


@pytest.mark.parametrize(
    ("text", "setting", "expected"), MALFORMED_SYNTAX_CASES, ids=[c[1] for c in MALFORMED_SYNTAX_CASES]
)
def test_load_config_malformed_metastore_or_pattern_names_key_and_value(tmp_path, text, setting, expected):
    path = tmp_path / "acidflow.yaml"
    with pytest.raises(InvalidPlatformConfigError) as info:
        _load(tmp_path, text)
    assert str(info.value) == f"Invalid acidflow setting {setting} in {path}; expected {expected}{HINT}"


@pytest.mark.parametrize("url", ["garbage", "sqlite:/x.db", "postgresql://h:abc/db", "thrift://h:0"])
def test_load_config_malformed_metastore_env_names_the_variable(url):
    with pytest.raises(InvalidPlatformConfigError) as info:
        load_config(None, {"ACIDFLOW_METASTORE": url})
    assert str(info.value) == (
        f"Invalid acidflow setting ACIDFLOW_METASTORE={url!r} in ACIDFLOW_METASTORE; expected "
        f"{METASTORE_EXPECTED}{HINT}"
    )


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://m/db",
        "postgresql+psycopg2://nobody@127.0.0.1:1/none",
        "postgresql://[::1]:5432/db?sslmode=require",
        "sqlite:////tmp/metastore.sqlite",
        "mysql+pymysql://u:p@h/db",
        "thrift://127.0.0.1:1",
        "thrift://hms1:9083, thrift://hms2",
    ],
)
def test_load_config_wellformed_metastore_is_kept_without_connecting(url):
    assert load_config(None, {"ACIDFLOW_METASTORE": url}).metastore == url


@pytest.mark.parametrize("pattern", ["*.*", "sales.*", "hr.employee", "Sales.[oO]rders_20?", "db.t_[!x]*"])
def test_load_config_wellformed_patterns_are_kept(tmp_path, pattern):
    config = _load(tmp_path, f"groups: [{{name: a, tables: ['{pattern}']}}]")
    assert config.group("a").tables == (pattern,)


def test_metastore_hook_without_configured_metastore_uses_the_hive_metastore_connection(monkeypatch):
    from acidflow_airflow.hooks import AcidMetastoreHook

    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    for variable in ("ACIDFLOW_HMS_DB", "ACIDFLOW_LEASE_STORE", "ACIDFLOW_HMS_SASL"):
        monkeypatch.setenv(variable, "")  # recorded, so the hook's export is undone after the test
        monkeypatch.delenv(variable)
    monkeypatch.setenv(
        "AIRFLOW_CONN_ACID_METASTORE_DEFAULT",
        '{"conn_type": "hive_metastore", "host": "hms1,hms2:9084", "port": 9083, '
        '"extra": {"hms_db": "postgresql://hive@db/metastore", "lease_store": "postgresql://af@db/acidflow", '
        '"sasl": "GSSAPI"}}',
    )
    hook = AcidMetastoreHook()
    assert hook.config.metastore == "thrift://hms1:9083,thrift://hms2:9084"
    import os

    assert os.environ["ACIDFLOW_HMS_DB"] == "postgresql://hive@db/metastore"
    assert os.environ["ACIDFLOW_LEASE_STORE"] == "postgresql://af@db/acidflow"
    assert os.environ["ACIDFLOW_HMS_SASL"] == "GSSAPI"


def test_metastore_hook_configured_metastore_wins_over_the_connection(monkeypatch):
    from acidflow_airflow.hooks import AcidMetastoreHook

    monkeypatch.setenv("ACIDFLOW_METASTORE", "thrift://configured:9083")
    monkeypatch.setenv(
        "AIRFLOW_CONN_ACID_METASTORE_DEFAULT", '{"conn_type": "hive_metastore", "host": "other"}'
    )
    assert AcidMetastoreHook().config.metastore == "thrift://configured:9083"


def test_metastore_hook_without_connection_is_embedded(monkeypatch):
    from acidflow_airflow.hooks import AcidMetastoreHook

    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_ACID_METASTORE_DEFAULT", raising=False)
    assert AcidMetastoreHook().config.metastore is None


@pytest.mark.parametrize(
    ("file_value", "env", "source", "value", "problem"),
    [
        ("bogus://x/y", {}, "FILE", "bogus://x/y", "scheme 'bogus' is not supported"),
        ("s3:///wh", {}, "FILE", "s3:///wh", "it names no bucket"),
        (None, {"ACIDFLOW_WAREHOUSE": "bogus://x/y"}, "ACIDFLOW_WAREHOUSE", "bogus://x/y", "scheme 'bogus'"),
        (None, {"ACIDFLOW_WAREHOUSE": ""}, "ACIDFLOW_WAREHOUSE", "", "it is empty"),
        (None, {"ACIDFLOW_WAREHOUSE": "  "}, "ACIDFLOW_WAREHOUSE", "  ", "it is empty"),
    ],
    ids=["file-unknown-scheme", "file-no-bucket", "env-unknown-scheme", "env-empty", "env-blank"],
)
def test_load_config_invalid_warehouse_refused_at_load(tmp_path, file_value, env, source, value, problem):
    text = (
        f"warehouse: '{file_value}'\n"
        if file_value is not None
        else "groups: [{name: all, tables: ['*.*']}]\n"
    )
    with pytest.raises(InvalidPlatformConfigError) as raised:
        _load(tmp_path, text, env)
    message = str(raised.value)
    expected_source = str(tmp_path / "acidflow.yaml") if source == "FILE" else source
    assert message.startswith(f"Invalid acidflow setting warehouse={value!r} in {expected_source}; expected ")
    assert problem in message
    assert not (tmp_path / "warehouse").exists()


@pytest.mark.parametrize(
    ("value", "stored"),
    [("s3://bucket/wh", "s3://bucket/wh"), ("hdfs://nn:8020/wh", "hdfs://nn:8020/wh"), ("./wh", "./wh")],
)
def test_load_config_warehouse_uri_kept_offline(tmp_path, value, stored):
    assert (
        _load(tmp_path, "groups: [{name: all, tables: ['*.*']}]\n", {"ACIDFLOW_WAREHOUSE": value}).warehouse
        == stored
    )
