"""``make run`` and ``make up``: the demo warehouse run through the real Airflow DAGs.

::

    python -m demo.run_platform run [--warehouse DIR | s3://bucket/prefix | hdfs://namenode:port/dir]
        1. build the demo warehouse (acid_core.sql): default.employee (the seed story: INSERT,
           UPDATE, MERGE) and default.web_events (3 partitions, dozens of deltas, deletes, an update)
        2. print the directory trees and the backlog (the initiator's decisions), and the rows
        3. a throwaway AIRFLOW_HOME on SQLite: ``airflow db migrate``, the compaction pool, then
           ``airflow dags test`` of acidflow_sensor, acidflow_compaction (the sensor's tables,
           embedded), acidflow_compaction again by hand (ALTER TABLE default.employee COMPACT
           'major' on Spark local) and acidflow_cleaner
        4. print the trees and the backlog again; exit 0 only if every table reads the same rows
    python -m demo.run_platform up [--warehouse DIR] [--port 8080]
        the same demo warehouse, then ``airflow standalone`` with the DAGs and the plugin

This module never imports airflow: it runs the ``airflow`` command next to this interpreter.
Embedded defaults: SQLite metastore in the warehouse, SQL locks, Spark ``local[2]``. With an S3 or
HDFS warehouse (``run`` only), the metastore is ``$ACIDFLOW_METASTORE`` or a SQLite file on the local
disk, ``./.acidflow-demo/metastore.sqlite``; S3 is reached with the AWS variables, HDFS with the
URI's name node (and ``HADOOP_CONF_DIR``, as Hadoop's own clients).
Errors: a failing step prints its command and output tail and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from acid_core.fs import file_io_for, is_local_location, resolve_warehouse, store_key

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from acid_core.locks import LockManager

__all__ = ["DEMO_TABLES", "airflow_env", "build_demo_warehouse", "main", "read_rows"]

REPO_ROOT = Path(__file__).resolve().parents[1]
DEMO_TABLES = ("default.employee", "default.web_events")
DEMO_MARKER = ".acidflow/demo-warehouse"
"""Written into a demo warehouse when it is built: only such a directory is wiped by ``make run``."""
_PARTITIONS = ("2024-01-01", "2024-01-02", "2024-01-03")
_INSERTS_PER_PARTITION = 12
_ADMIN = ("admin", "admin")

_SEED_STORY = (
    "CREATE TABLE employee (id int, name string, salary int) STORED AS ORC "
    "TBLPROPERTIES ('transactional' = 'true')",
    "INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000), (3, 'Kate', 6000)",
    "UPDATE employee SET salary = 7000 WHERE id = 2",
    "CREATE TABLE employee_update (id int, name string, salary int) STORED AS ORC "
    "TBLPROPERTIES ('transactional' = 'true')",
    "INSERT INTO employee_update VALUES (2, 'Tom', 7000), (4, 'Mary', 9000)",
    "MERGE INTO employee AS a USING employee_update AS b ON a.id = b.id "
    "WHEN MATCHED THEN UPDATE SET salary = b.salary "
    "WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, b.salary)",
)


def build_demo_warehouse(
    warehouse: str, metastore_url: str | None = None, lock_manager: LockManager | None = None
) -> list[str]:
    """Create the demo tables with their histories (through ``acid_core.sql``); returns their names.

    The warehouse directory is expected to be empty (or absent) and the metastore new.
    """
    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Warehouse

    with Warehouse.open(warehouse, metastore_url, lock_manager) as store:
        session = SqlSession(store)
        for statement in _SEED_STORY:
            session.execute(statement)
        session.execute(
            "CREATE TABLE web_events (id int, event string, amount int) PARTITIONED BY (ds string) "
            "STORED AS ORC TBLPROPERTIES ('transactional' = 'true')"
        )
        next_id = 1
        for round_number in range(_INSERTS_PER_PARTITION):
            for ds in _PARTITIONS:
                values = ", ".join(
                    f"({next_id + i}, '{('click', 'view', 'buy')[(next_id + i) % 3]}', {(next_id + i) * 7 % 100})"
                    for i in range(3)
                )
                session.execute(f"INSERT INTO web_events PARTITION (ds='{ds}') VALUES {values}")
                next_id += 3
            if round_number == 5:
                session.execute("DELETE FROM web_events WHERE amount < 10")
        session.execute("UPDATE web_events SET amount = amount + 1 WHERE event = 'buy'")
        # Written last: only a finished demo warehouse may be wiped by the next ``make run``.
        text = "built by acidflow's make run / make up; safe to delete\n"
        if is_local_location(warehouse):
            marker = Path(warehouse) / DEMO_MARKER
            marker.parent.mkdir(parents=True, exist_ok=True)  # absent when the metastore is not embedded
            marker.write_text(text)
        else:
            file_io, path = file_io_for(warehouse)
            file_io.write_bytes_atomic(posixpath.join(path, DEMO_MARKER), text.encode())
    return list(DEMO_TABLES)


def refuse_to_reset(warehouse: str) -> str | None:
    """Why ``warehouse`` must not be wiped and rebuilt, or None when it may be.

    ``make run`` starts from a fresh demo warehouse, so it deletes the old one, but only a
    directory that is absent, empty, or marked as a demo warehouse that acidflow built
    (``.acidflow/demo-warehouse``): ``make run WAREHOUSE=$HOME`` or ``WAREHOUSE=/`` must delete
    nothing.
    """
    if not is_local_location(warehouse):
        return _refuse_to_reset_remote(warehouse)
    path = Path(warehouse)
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return None
    if path.is_dir() and (path / DEMO_MARKER).is_file():
        return None
    demo_names = {".acidflow", ".airflow", *(table.split(".")[1] for table in DEMO_TABLES)}
    if path.is_dir() and (path / ".acidflow").is_dir() and {p.name for p in path.iterdir()} <= demo_names:
        return None  # a demo warehouse built before the marker existed
    return (
        f"Refusing to rebuild the demo warehouse in {warehouse!r}: it exists and is not a demo warehouse "
        f"built by acidflow (no {DEMO_MARKER}); expected a new, empty or demo directory; "
        "hint: make run WAREHOUSE=<new directory>"
    )


def _refuse_to_reset_remote(warehouse: str) -> str | None:
    # On S3 a "directory" is a key prefix; on HDFS a directory: absent or empty, or marked as a demo.
    file_io, path = file_io_for(warehouse)
    if file_io.info(path) is None or not file_io.list_dir(path):
        return None
    if file_io.info(posixpath.join(path, DEMO_MARKER)) is not None:
        return None
    scheme, _, rest = warehouse.partition("://")
    if store_key(warehouse).startswith(("hdfs://", "viewfs://")):
        what, hint = "directory", f"{scheme}://{rest.partition('/')[0]}/<new directory>"
    else:
        what, hint = "prefix", f"{scheme}://<bucket>/<new prefix>"
    return (
        f"Refusing to rebuild the demo warehouse in {warehouse!r}: it exists and is not a demo warehouse "
        f"built by acidflow (no {DEMO_MARKER}); expected a new, empty or demo {what}; "
        f"hint: make run WAREHOUSE={hint}"
    )


def _reset(warehouse: str) -> None:
    if is_local_location(warehouse):
        shutil.rmtree(warehouse, ignore_errors=True)
        return
    file_io, path = file_io_for(warehouse)
    file_io.delete_dir(path)  # S3: per object; never a bucket or HDFS root (UnsafeFileOperationError)


def demo_metastore_url(warehouse: str) -> str | None:
    """The demo's metastore URL: None (the embedded SQLite file) for a local warehouse.

    For S3 or HDFS: ``$ACIDFLOW_METASTORE``, else a SQLite file on the local disk,
    ``./.acidflow-demo/metastore.sqlite`` (SQLite cannot live on an object store or HDFS; a demo
    needs no database server).
    """
    if is_local_location(warehouse):
        return None
    return os.environ.get("ACIDFLOW_METASTORE") or f"sqlite:///{_LOCAL_METASTORE.resolve()}"


_LOCAL_METASTORE = Path(".acidflow-demo") / "metastore.sqlite"


def read_rows(warehouse: str, table: str, metastore_url: str | None = None) -> list[tuple[object, ...]]:
    """Every row of ``table`` at the current snapshot, sorted (for before/after comparisons)."""
    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Warehouse

    with Warehouse.open(warehouse, metastore_url) as store:
        result = SqlSession(store).execute(f"SELECT * FROM {table}")[-1]
        rows = result.rows.to_pylist() if result.rows is not None else []
    return sorted((tuple(row.values()) for row in rows), key=repr)


def print_tree(root: str) -> None:
    """The warehouse's directories and files (the metastore directory left out)."""
    if not is_local_location(root):
        file_io, top = file_io_for(root)
        for info in sorted(file_io.list_tree(top), key=lambda i: i.path):
            parts = info.path[len(top) + 1 :].split("/")
            if parts[0] == ".acidflow":
                continue
            size = "" if info.is_dir else f"  ({info.size} B)"
            print(f"  {'    ' * (len(parts) - 1)}{parts[-1]}{'/' if info.is_dir else ''}{size}")
        return
    base = Path(root)
    for path in sorted(base.rglob("*")):
        relative = path.relative_to(base)
        if relative.parts[0] == ".acidflow":
            continue
        depth = len(relative.parts) - 1
        size = "" if path.is_dir() else f"  ({path.stat().st_size} B)"
        print(f"  {'    ' * depth}{relative.name}{'/' if path.is_dir() else ''}{size}")


def print_backlog(warehouse: str, metastore_url: str | None = None) -> None:
    """The initiator's decision for every table and partition (nothing queued)."""
    from acid_core.compaction.backlog import run_initiator
    from acid_core.metastore import open_metastore

    with open_metastore(metastore_url, warehouse) as metastore:
        for entry in run_initiator(metastore, dry_run=True):
            decision = entry.decision
            what = decision.compaction_type.value if decision.compaction_type else "none"
            print(f"  {what:6} {decision.reason.value:40} {decision.message}")
        queue = metastore.show_compactions()
    for compaction in queue:
        where = compaction.partition or "-"
        print(
            f"  compaction {compaction.id}: {compaction.table} {where} {compaction.compaction_type.value} "
            f"{compaction.state.value} {compaction.error_message or ''}".rstrip()
        )


def airflow_env(
    airflow_home: str,
    warehouse: str,
    metastore_url: str | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of every Airflow process of the platform (DAGs, plugin, embedded defaults)."""
    env = dict(os.environ if base is None else base)
    bin_dir = str(Path(sys.executable).parent)
    env.update(
        {
            "AIRFLOW_HOME": airflow_home,
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            # The platform is on when started; acidflow's DAGs also say so themselves
            # (is_paused_upon_creation from acidflow.yaml's schedules.paused_at_creation).
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__PARALLELISM": str(max(2, (os.cpu_count() or 2))),
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "2",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{_ADMIN[0]}:admin",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": env.get("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING"),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            "ACIDFLOW_WAREHOUSE": str(Path(warehouse).resolve())
            if is_local_location(warehouse)
            else warehouse,
            "ACIDFLOW_LOCK_MANAGER": env.get("ACIDFLOW_LOCK_MANAGER", "sql"),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(
                p
                for p in (
                    str(REPO_ROOT / "dags"),
                    str(REPO_ROOT / "plugins"),
                    str(REPO_ROOT),
                    env.get("PYTHONPATH"),
                )
                if p
            ),
            "PATH": os.pathsep.join(p for p in (bin_dir, env.get("PATH")) if p),
        }
    )
    if metastore_url:
        env["ACIDFLOW_METASTORE"] = metastore_url
    return env


def airflow_command() -> str:
    """The ``airflow`` script next to this interpreter (else the one on PATH)."""
    candidate = Path(sys.executable).parent / "airflow"
    return str(candidate) if candidate.exists() else "airflow"


def _run(command: Sequence[str], env: Mapping[str, str], title: str) -> str:
    print(f"\n$ {' '.join(command)}    # {title}", flush=True)
    started = time.monotonic()
    result = subprocess.run(list(command), env=dict(env), capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    if result.returncode != 0:
        print(output[-6000:])
        raise SystemExit(f"step failed ({title}): exit code {result.returncode}")
    print(f"  ok ({time.monotonic() - started:.1f} s)")
    return output


def prepare_airflow(env: Mapping[str, str]) -> None:
    """``airflow db migrate`` and the compaction pool (idempotent)."""
    airflow = airflow_command()
    _run([airflow, "db", "migrate"], env, "Airflow's database (SQLite)")
    _run(
        [airflow, "pools", "set", "acidflow_compaction", "2", "acidflow compactions"],
        env,
        "the compaction pool",
    )


def _dag_test(env: Mapping[str, str], dag_id: str, conf: Mapping[str, object] | None = None) -> str:
    command = [airflow_command(), "dags", "test", dag_id]
    if conf is not None:
        command += ["-c", json.dumps(conf)]
    output = _run(command, env, f"{dag_id} through real Airflow")
    shown = (
        "ACIDFLOW ALERT",
        "to compact:",
        "acidflow: compaction",
        ": compacted:",
        "compaction request refused",
    )
    for line in output.splitlines():
        if any(marker in line for marker in shown):
            # structlog lines: "<time> [info     ] <event> [<logger>] loc=..."; print the event only.
            event = re.search(r"\[\w+\s*\]\s(.*?)\s+\[[\w.]+\]\s+loc=", line)
            print(f"  | {(event.group(1) if event else line.strip())[:240]}")
    return output


def _rows(warehouse: str, metastore_url: str | None = None) -> dict[str, list[tuple[object, ...]]]:
    return {table: read_rows(warehouse, table, metastore_url) for table in DEMO_TABLES}


def run(warehouse: str) -> int:
    """``make run``: see the module docstring."""
    from acid_core.errors import AcidError

    try:
        warehouse = resolve_warehouse(warehouse, source="--warehouse")
    except AcidError as error:
        print(f"acidflow: error: {error}", file=sys.stderr)
        return 2
    if is_local_location(warehouse):
        warehouse = str(Path(warehouse).resolve())
    refusal = refuse_to_reset(warehouse)
    if refusal is not None:
        print(f"acidflow: error: {refusal}", file=sys.stderr)
        return 2
    _reset(warehouse)
    metastore_url = demo_metastore_url(warehouse)
    if metastore_url is not None and not os.environ.get("ACIDFLOW_METASTORE"):
        _LOCAL_METASTORE.unlink(missing_ok=True)  # the previous demo's, like the warehouse
        _LOCAL_METASTORE.parent.mkdir(exist_ok=True)
    print(f"== building the demo warehouse in {warehouse}")
    if metastore_url is not None:
        print(f"   metastore: {metastore_url} (the warehouse is not on the local disk)")
    build_demo_warehouse(warehouse, metastore_url)
    before = _rows(warehouse, metastore_url)
    print("\n== before: directory tree")
    print_tree(warehouse)
    print("\n== before: backlog (Hive's initiator rules)")
    print_backlog(warehouse, metastore_url)
    with tempfile.TemporaryDirectory(prefix="acidflow-airflow-") as home:
        env = airflow_env(home, warehouse, metastore_url)
        env["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "INFO"  # the sensor's decisions, the operators' outcomes
        prepare_airflow(env)
        _dag_test(env, "acidflow_sensor")
        _dag_test(env, "acidflow_compaction", {"executor": "embedded"})
        _dag_test(
            env,
            "acidflow_compaction",
            {"statement": "ALTER TABLE default.employee COMPACT 'major'", "executor": "spark"},
        )
        _dag_test(env, "acidflow_cleaner")
    after = _rows(warehouse, metastore_url)
    print("\n== after: directory tree")
    print_tree(warehouse)
    print("\n== after: backlog and compaction history")
    print_backlog(warehouse, metastore_url)
    for table in DEMO_TABLES:
        same = before[table] == after[table]
        print(
            f"\n{table}: {len(after[table])} rows, {'unchanged' if same else 'CHANGED'} by compaction and cleaning"
        )
        if not same:
            return 1
    return 0


def up(warehouse: str, port: int) -> int:
    """``make up``: the demo warehouse and ``airflow standalone`` on localhost:``port``."""
    if not is_local_location(warehouse):
        print(
            f"acidflow: error: make up needs a local warehouse directory, not {warehouse!r}; "
            "hint: make run WAREHOUSE=s3://... or hdfs://... runs the DAGs on S3 or HDFS",
            file=sys.stderr,
        )
        return 2
    warehouse = str(Path(warehouse).resolve())
    if not (Path(warehouse) / ".acidflow").exists():
        refusal = refuse_to_reset(warehouse)
        if refusal is not None:
            print(f"acidflow: error: {refusal}", file=sys.stderr)
            return 2
        shutil.rmtree(warehouse, ignore_errors=True)
        build_demo_warehouse(warehouse)
    home = str(Path(warehouse) / ".airflow")  # hidden: not a table; removed with the warehouse
    env = airflow_env(home, warehouse)
    env["AIRFLOW__API__PORT"] = str(port)
    env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] = f"http://localhost:{port}/execution/"
    env["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "INFO"
    prepare_airflow(env)
    passwords = Path(home) / "simple_auth_manager_passwords.json.generated"
    print(
        f"\nAirflow: http://localhost:{port}  (log in as {_ADMIN[0]}; the password is in {passwords}"
        f" once the server has started)\nBacklog page: http://localhost:{port}/acidflow/ and in the UI"
        " under Browse > Hive ACID backlog.\nThe DAGs acidflow_sensor, acidflow_compaction and"
        " acidflow_cleaner start active. Ctrl-C stops everything.\n",
        flush=True,
    )
    return subprocess.call([airflow_command(), "standalone"], env=env)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m demo.run_platform``."""
    parser = argparse.ArgumentParser(prog="python -m demo.run_platform", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("run", "up"))
    parser.add_argument("--warehouse", default="./warehouse")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.warehouse)
    return up(args.warehouse, args.port)


if __name__ == "__main__":
    raise SystemExit(main())
