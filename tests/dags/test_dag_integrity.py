"""The DAG files: zero import errors, tags, retries >= 2, active at creation, no I/O at parse time.

The DagBag is filled in a subprocess (Airflow reads its configuration at import) whose sockets,
Variables and Connections raise (and record the attempt), with the metastore pointing at a closed
port (a SQL database, and a Hive Metastore over Thrift) and the warehouse at a directory that must
not appear: any I/O at parse time fails the parse or leaves a trace.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from demo.run_platform import airflow_env

ROOT = Path(__file__).resolve().parents[2]
DAG_IDS = {"acidflow_sensor", "acidflow_compaction", "acidflow_cleaner"}
HEAVY = ("pyarrow", "pyspark", "sqlalchemy", "kazoo", "pandas")

_PARSE = r"""
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[1:] or args)[:200])  # caught or not, the attempt is reported
    raise RuntimeError("I/O at DAG parse time")
socket.socket.connect = refuse
socket.create_connection = refuse
before = set(sys.modules)
from airflow.sdk import Variable, BaseHook
Variable.get = staticmethod(refuse)
BaseHook.get_connection = classmethod(refuse)
from airflow.dag_processing.dagbag import DagBag
airflow_loaded = set(sys.modules)
bag = DagBag(dag_folder=sys.argv[1])
new = sorted({m.split(".")[0] for m in set(sys.modules) - airflow_loaded})
print("RESULT" + json.dumps({
    "errors": {k: v[-800:] for k, v in bag.import_errors.items()},
    "dags": {
        d.dag_id: {
            "tags": sorted(d.tags),
            "retries": {t.task_id: t.retries for t in d.tasks},
            "fileloc": d.fileloc,
            "paused": d.is_paused_upon_creation,
        }
        for d in bag.dags.values()
    },
    "new_modules": new,
    "io_attempts": attempts,
}))
"""


# Unreachable metastores of both kinds: a SQL database and a Hive Metastore (Thrift), on closed ports.
UNREACHABLE_METASTORES = {
    "sql": "postgresql+psycopg2://nobody@127.0.0.1:1/none",
    "hive": "thrift://127.0.0.1:1",
}


def _parse_dags(env):
    """Parse ``dags/`` with a DagBag in a fresh interpreter under ``env``; its RESULT record."""
    result = subprocess.run(
        [sys.executable, "-c", _PARSE, str(ROOT / "dags")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = next((x for x in result.stdout.splitlines() if x.startswith("RESULT")), None)
    assert line is not None, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(line[len("RESULT") :])


@pytest.fixture(scope="module", params=sorted(UNREACHABLE_METASTORES))
def dagbag(request, tmp_path_factory):
    home = tmp_path_factory.mktemp("dagbag_home")
    warehouse = home / "must-not-exist"
    env = airflow_env(str(home), str(warehouse), UNREACHABLE_METASTORES[request.param])
    data = _parse_dags(env)
    data["warehouse_created"] = warehouse.exists()
    return data


@pytest.mark.integration("airflow")
def test_dagbag_has_no_import_errors(dagbag):
    assert dagbag["errors"] == {}
    assert set(dagbag["dags"]) == DAG_IDS


@pytest.mark.integration("airflow")
def test_dag_id_is_file_stem_with_tags_and_retries(dagbag):
    for dag_id, dag in dagbag["dags"].items():
        assert Path(dag["fileloc"]).stem == dag_id
        assert "acidflow" in dag["tags"]
        assert len(dag["tags"]) >= 2
        assert dag["retries"]
        assert all(retries >= 2 for retries in dag["retries"].values()), dag["retries"]
        assert dag["paused"] is False  # the platform is on when started (schedules.paused_at_creation)


@pytest.mark.integration("airflow")
def test_compaction_dag_maps_over_tables_and_uses_spark_submit(dagbag):
    tasks = set(dagbag["dags"]["acidflow_compaction"]["retries"])
    assert tasks == {
        "plan",
        "embedded_targets",
        "compact_embedded",
        "spark_jobs",
        "compact_on_spark",
        "check",
    }


@pytest.mark.integration("airflow")
def test_parsing_does_no_io_and_no_heavy_imports(dagbag):
    """Airflow's top-level-code rule: parsing touches neither the metastore nor the warehouse."""
    assert dagbag["io_attempts"] == []
    assert not dagbag["warehouse_created"]
    assert not set(dagbag["new_modules"]) & set(HEAVY), dagbag["new_modules"]


@pytest.mark.integration("airflow")
def test_malformed_setting_is_each_dag_files_import_error_in_one_line(tmp_path):
    """Issue 24: a malformed metastore URL (or watch-list pattern) was accepted silently at parse time."""
    config = tmp_path / "acidflow.yaml"
    config.write_text("metastore: 'postgresql//nobody@127.0.0.1:1/none'\n")
    warehouse = tmp_path / "must-not-exist"
    env = {**airflow_env(str(tmp_path / "home"), str(warehouse), UNREACHABLE_METASTORES["sql"])}
    env.pop("ACIDFLOW_METASTORE", None)
    env["ACIDFLOW_CONFIG"] = str(config)
    data = _parse_dags(env)
    assert {Path(path).stem for path in data["errors"]} == DAG_IDS
    for error in data["errors"].values():
        assert error.strip().splitlines()[-1] == (
            "acid_core.errors.InvalidPlatformConfigError: Invalid acidflow setting "
            f"metastore='postgresql//nobody@127.0.0.1:1/none' in {config}; expected a SQLAlchemy URL "
            "(dialect[+driver]://[user[:password]@][host][:port][/database]) or "
            "thrift://host[:port][,thrift://host2[:port]], or null for the embedded one; hint: see "
            "acidflow.yaml.example for every setting and its default"
        )
    assert data["dags"] == {}
    assert data["io_attempts"] == []
    assert not warehouse.exists()


def _module_level_imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        nodes = [node]
        if isinstance(node, ast.If):  # TYPE_CHECKING blocks are not run
            continue
        for item in nodes:
            if isinstance(item, ast.Import):
                yield from (alias.name for alias in item.names)
            elif isinstance(item, ast.ImportFrom) and item.module:
                yield item.module


@pytest.mark.parametrize(
    "path",
    sorted([*ROOT.joinpath("dags").rglob("*.py"), *ROOT.joinpath("plugins").rglob("*.py")]),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_dags_and_plugins_import_nothing_heavy_at_module_level(path):
    for module in _module_level_imports(path):
        assert module.split(".")[0] not in HEAVY, f"{path.name} imports {module} at module level"
        if module.startswith("acid_core"):
            assert module == "acid_core.errors", f"{path.name} imports {module} at module level (pyarrow)"
