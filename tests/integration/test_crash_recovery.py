"""kill -9 of a real ``acidflow`` process at each point; the next ``acidflow compact`` (or ``clean``) recovers.

Each test builds a partitioned, bucketed ACID table with ``acidflow sql``, then runs one
``acidflow compact`` / ``acidflow clean`` / ``ALTER TABLE .. COMPACT .. AND WAIT`` as a child
interpreter that SIGKILLs itself at the chosen point (the fault is injected by wrapping one
function in the child; everything else is the real command). Then it checks:

* the dead process left its compaction 'working' and, once it held the partition's maintenance
  lock, its lock session still holds that lock (read from the lock table directly, without reaping);
* the next plain ``acidflow compact`` exits 0, recovers the entry (failed + queued again, or
  finished), takes the maintenance lock and compacts: nothing stays 'working', no lock stays held,
  no staging directory stays, and ``SELECT`` returns the same rows before, between and after;
* ``acidflow clean`` then removes the obsolete directories.

Backends: the embedded SQLite metastore with the SQL lock manager, PostgreSQL with the SQL lock
manager, and ZooKeeper locks (ephemeral nodes: recovery after the session timeout).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from acid_core.cli import main
from acid_core.metastore import CompactionState, CompactionType, open_metastore

pytestmark = pytest.mark.slow

ROOT = str(Path(__file__).resolve().parents[2])

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import acid_core.compaction.bucket_merge as bucket_merge
    import acid_core.compaction.worker as worker
    import acid_core.fs as fs
    from acid_core.cli import main

    kill_at = sys.argv[1]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def wrap(owner, name, before=None, after=None):
        original = getattr(owner, name)
        calls = []

        def wrapper(*args, **kwargs):
            calls.append(1)
            if before is not None:
                before(len(calls))
            result = original(*args, **kwargs)
            if after is not None:
                after(len(calls))
            return result

        setattr(owner, name, wrapper)

    if kill_at == "before-lock":  # claimed ('working'), lock not yet asked for
        wrap(worker, "plan_statement_locks", before=lambda n: die())
    elif kill_at == "after-lock":  # the maintenance lock is held, nothing written
        wrap(worker, "_execute_compaction", before=lambda n: die())
    elif kill_at == "mid-write":  # the first bucket's file is in staging, the second not
        wrap(bucket_merge, "compact_bucket", after=lambda n: die())  # the embedded loop's call
    elif kill_at == "before-commit":  # outputs renamed into place (_vT), transaction still open
        original = worker._execute_compaction

        def with_step(metastore, compaction, table, options, run_tasks, on_step):
            return original(
                metastore, compaction, table, options, run_tasks,
                lambda step: die() if step == "committing" else None,
            )

        worker._execute_compaction = with_step
    elif kill_at == "during-clean":  # the first obsolete directory deleted, the second not
        wrap(fs.PyArrowFileIO, "delete_dir", before=lambda n: die() if n == 2 else None)
    elif kill_at != "none":
        raise SystemExit(f"unknown kill point {kill_at!r}")
    sys.exit(main(sys.argv[2:]))
    """
)

CREATE = (
    "CREATE TABLE t (a INT, b STRING) PARTITIONED BY (ds STRING) CLUSTERED BY (a) INTO 2 BUCKETS "
    "STORED AS ORC TBLPROPERTIES ('transactional'='true')"
)
INSERTS = [
    "INSERT INTO t PARTITION (ds='d1') VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    "INSERT INTO t PARTITION (ds='d1') VALUES (4, 'four'), (5, 'five')",
    "DELETE FROM t WHERE a = 2",
    "INSERT INTO t PARTITION (ds='d2') VALUES (9, 'nine')",
]
SELECT = "SELECT a, b, ds FROM t ORDER BY a"
MAINTENANCE = "default.t/ds=d1#maintenance"


class Env:
    """The environment of one test's ``acidflow`` runs (metastore, warehouse, lock manager).

    ``killed`` runs a child process; ``ok`` runs the same ``acidflow`` command in this process
    (quicker on a loaded machine; recovery does not care which live process runs it).
    """

    def __init__(self, warehouse: Path, metastore: str | None, locks: dict[str, str], monkeypatch) -> None:
        self.warehouse, self.metastore = str(warehouse), metastore
        settings = {
            "ACIDFLOW_WAREHOUSE": self.warehouse,
            **({"ACIDFLOW_METASTORE": metastore} if metastore else {}),
            **locks,
        }
        for key in [k for k in os.environ if k.startswith("ACIDFLOW_")]:
            monkeypatch.delenv(key)
        for key, value in settings.items():
            monkeypatch.setenv(key, value)
        self.vars = {**os.environ, "PYTHONPATH": ROOT}

    def run(self, *args: str, kill_at: str = "none") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", CHILD, kill_at, *args],
            env=self.vars,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def killed(self, *args: str, kill_at: str) -> None:
        child = self.run(*args, kill_at=kill_at)
        assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]

    def main(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return code, out.getvalue(), err.getvalue()

    def ok(self, *args: str) -> str:
        code, out, err = self.main(*args)
        assert code == 0, out[-2000:] + err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        return out

    def rows(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.ok("sql", "--format", "jsonl", SELECT).splitlines()]

    def compactions(self):
        with open_metastore(self.metastore, self.warehouse) as metastore:
            return metastore.show_compactions()

    def partition_dir(self) -> Path:
        return Path(self.warehouse) / "t" / "ds=d1"


def _sql_locks_held(env: Env) -> list[str]:
    """Lock rows as stored, expired-by-time ones purged but nobody's dead owner reaped."""
    from acid_core.metastore import default_metastore_url
    from acid_core.metastore.sql.lock_store import SqlLockStore

    store = SqlLockStore(env.metastore or default_metastore_url(env.warehouse))
    try:
        return [s.object_name for s in store.list_locks(int(time.time() * 1000))]
    finally:
        store.close()


def _zk_locks_held(hosts: str) -> list[str]:
    from acid_core.locks.zookeeper import KazooLockManager

    manager = KazooLockManager(hosts)
    try:
        return [str(info.object) for info in manager.show()]
    finally:
        manager.close()


@pytest.fixture(params=["sqlite", "postgres"])
def env(request, tmp_path, monkeypatch):
    metastore = None
    if request.param == "postgres":
        request.applymarker(pytest.mark.integration("postgres"))
        # As users write it: SQLAlchemy 2.1 alone would pick psycopg (3) for this form.
        metastore = request.getfixturevalue("postgres_schema_url").replace(
            "postgresql+psycopg2://", "postgresql://"
        )
    environment = Env(tmp_path / "wh", metastore, {"ACIDFLOW_LOCK_MANAGER": "sql"}, monkeypatch)
    environment.ok("sql", CREATE, *INSERTS)
    return environment


@pytest.fixture
def zk_env(tmp_path, zookeeper_server, monkeypatch):
    from kazoo.client import KazooClient

    chroot = f"/acidflow-crash-{uuid.uuid4().hex}"
    client = KazooClient(hosts=zookeeper_server.hosts)
    client.start(timeout=15)
    client.ensure_path(chroot)
    client.stop()
    client.close()
    hosts = f"{zookeeper_server.hosts}{chroot}"
    environment = Env(
        tmp_path / "wh",
        None,
        {"ACIDFLOW_LOCK_MANAGER": "zookeeper", "ACIDFLOW_ZOOKEEPER": hosts},
        monkeypatch,
    )
    environment.ok("sql", CREATE, *INSERTS)
    environment.hosts = hosts  # type: ignore[attr-defined]
    return environment


def _assert_recovered(env: Env, expected, locks_held) -> None:
    out = env.ok("compact")
    assert "recovered: worker" in out, out
    assert "compacted" in out, out
    states = [c.state for c in env.compactions()]
    assert CompactionState.WORKING not in states, states
    assert CompactionState.INITIATED not in states, states
    assert states.count(CompactionState.READY_FOR_CLEANING) == 1, states
    assert locks_held() == []
    names = os.listdir(env.partition_dir())
    assert not [n for n in names if n.startswith(".acidflow-staging-")], names
    assert env.rows() == expected
    env.ok("clean")
    visible = sorted(n for n in os.listdir(env.partition_dir()) if not n.startswith(("_", ".")))
    assert len(visible) == 1, visible
    assert visible[0].startswith("base_"), visible
    assert env.rows() == expected


COMPACT = ("compact", "--table", "default.t", "--partition", "ds=d1", "--type", "major")


@pytest.mark.parametrize("kill_at", ["before-lock", "after-lock", "mid-write", "before-commit"])
def test_compact_killed_at_point_next_compact_recovers_entry_and_lock(env, kill_at):
    expected = env.rows()
    env.killed(*COMPACT, kill_at=kill_at)

    [entry] = env.compactions()
    assert entry.state is CompactionState.WORKING
    assert (MAINTENANCE in _sql_locks_held(env)) == (kill_at != "before-lock")
    assert env.rows() == expected

    _assert_recovered(env, expected, lambda: _sql_locks_held(env))


@pytest.mark.parametrize("kill_at", ["after-lock", "mid-write"])
def test_compact_killed_zookeeper_lock_recovered_after_session_timeout(zk_env, kill_at):
    expected = zk_env.rows()
    zk_env.killed(*COMPACT, kill_at=kill_at)
    [entry] = zk_env.compactions()
    assert entry.state is CompactionState.WORKING

    # The dead session's ephemeral lock nodes go when ZooKeeper expires the session.
    deadline = time.monotonic() + 60
    while _zk_locks_held(zk_env.hosts) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _zk_locks_held(zk_env.hosts) == []

    _assert_recovered(zk_env, expected, lambda: _zk_locks_held(zk_env.hosts))


def test_clean_killed_during_delete_next_clean_finishes(env):
    expected = env.rows()
    env.ok(*COMPACT)
    env.killed("clean", kill_at="during-clean")
    assert env.rows() == expected
    [entry] = env.compactions()
    assert entry.state is CompactionState.READY_FOR_CLEANING
    env.ok("clean")
    [entry] = env.compactions()
    assert entry.state is CompactionState.SUCCEEDED
    visible = [n for n in os.listdir(env.partition_dir()) if not n.startswith(("_", "."))]
    assert len(visible) == 1, visible
    assert visible[0].startswith("base_"), visible
    assert env.rows() == expected


@pytest.mark.parametrize("kill_at", ["after-lock", "mid-write"])
def test_alter_table_compact_and_wait_killed_next_compact_recovers(env, kill_at):
    expected = env.rows()
    env.killed("sql", "ALTER TABLE t PARTITION (ds='d1') COMPACT 'major' AND WAIT", kill_at=kill_at)
    [entry] = env.compactions()
    assert entry.state is CompactionState.WORKING
    assert MAINTENANCE in _sql_locks_held(env)
    _assert_recovered(env, expected, lambda: _sql_locks_held(env))


@pytest.mark.parametrize(
    "partition", ["../..", "ds=nope", "ds=d1/x=1"], ids=["escape", "missing", "too-deep"]
)
def test_compact_partition_naming_no_partition_refused_before_queueing(env, partition):
    code, _out, err = env.main("compact", "--table", "default.t", "--partition", partition)
    assert code == 1
    assert err.strip().splitlines() == [
        f"acidflow: error: No such partition {partition!r} in table 'default.t'; hint: list_partitions"
    ]
    assert env.compactions() == []


def test_compact_worker_timeout_recovers_working_entry_of_live_worker(env):
    expected = env.rows()
    with open_metastore(env.metastore, env.warehouse) as metastore:
        compaction_id = metastore.enqueue_compaction("default.t", "ds=d1", CompactionType.MAJOR)
        # A worker on another host that stopped answering: only the timeout can tell.
        metastore.find_next_to_compact("elsewhere-4242")
    time.sleep(1.2)
    out = env.ok("compact", "--worker-timeout", "1")
    assert "compacted" in out
    entries = {c.id: c for c in env.compactions()}
    assert entries[compaction_id].state is CompactionState.FAILED
    assert "ran longer than the worker timeout (1 s)" in (entries[compaction_id].error_message or "")
    assert env.rows() == expected
