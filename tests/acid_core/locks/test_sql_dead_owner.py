"""Dead-owner reaping of SQL lock sessions: a killed local holder's locks go at once, nothing else does.

Hive frees a dead session's locks only after ``hive.txn.timeout`` (``TxnHandler.timeOutLocks``); a
session whose owner is a dead process of this host is certainly gone, so the SQL lock manager
frees it on the next acquire/show without waiting. A live owner, or an owner on another host,
keeps its locks until its heartbeat times out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acid_core.errors import LockRefusedError
from acid_core.locks import LockMode, LockRequest, default_host, is_dead_local_process, parse_lock_object
from acid_core.locks.sql import SqlLockManager
from acid_core.metastore.sql.lock_store import LockRow, SqlLockStore

REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("lock_worker.py")
LONG_TIMEOUT = 300.0  # far longer than any test: only dead-owner detection can free the locks


@pytest.fixture(
    params=[
        pytest.param("sqlite", marks=pytest.mark.backend("sqlite")),
        pytest.param(
            "postgres", marks=[pytest.mark.backend("postgres"), pytest.mark.integration("postgres")]
        ),
    ]
)
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/metastore.sqlite"
    return request.getfixturevalue("postgres_schema_url")


@pytest.fixture
def observer(url):
    manager = SqlLockManager(url, session_timeout=LONG_TIMEOUT)
    yield manager
    manager.close()


def _x(name: str) -> list[LockRequest]:
    return [LockRequest(parse_lock_object(name), LockMode.EXCLUSIVE)]


def _holder(url: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(WORKER),
            "hold",
            json.dumps({"kind": "sql", "url": url}),
            "db.t/p=1",
            "X",
            str(LONG_TIMEOUT),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == b"ACQUIRED", proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait(10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def test_sql_lock_killed_local_holder_locks_freed_without_waiting_for_timeout(url, observer):
    proc = _holder(url)
    try:
        with pytest.raises(LockRefusedError, match="by 'doomed'"):
            observer.acquire(_x("db.t/p=1"), holder="observer", retries=0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)  # reaped: the process is gone, not a zombie
        handle = observer.acquire(_x("db.t/p=1"), holder="observer", retries=0)
    finally:
        _stop(proc)
    observer.release(handle)


def test_sql_lock_killed_holder_still_a_zombie_counts_as_dead(url, observer):
    proc = _holder(url)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not is_dead_local_process(default_host(), proc.pid):
            time.sleep(0.05)  # the kill is delivered asynchronously; nobody waits for the child
        handle = observer.acquire(_x("db.t/p=1"), holder="observer", retries=0)
    finally:
        _stop(proc)
    observer.release(handle)


def test_sql_lock_live_local_holder_is_not_reaped(url, observer):
    proc = _holder(url)
    try:
        with pytest.raises(LockRefusedError, match="by 'doomed'"):
            observer.acquire(_x("db.t/p=1"), holder="observer", retries=2, wait_seconds=0.1)
        assert [str(i.object) for i in observer.show()] == ["db.t", "db.t/p=1"]
    finally:
        _stop(proc)


def test_sql_lock_dead_pid_on_another_host_waits_for_timeout(url, observer):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    dead_pid = int(dead.stdout)
    store = SqlLockStore(url)
    try:
        now = int(time.time() * 1000)
        store.open_session("elsewhere", "another-host", int(LONG_TIMEOUT * 1000), now, pid=dead_pid)
        result = store.attempt(
            session_id="elsewhere",
            token="t-elsewhere",
            rows=[LockRow("db.t", "db", "t", "x")],
            markers=[],
            holder="remote",
            host="another-host",
            txn_id=None,
            now_ms=now,
            find_conflicts=lambda existing: list(existing),
        )
        assert result.granted
    finally:
        store.close()
    with pytest.raises(LockRefusedError, match="by 'remote'"):
        observer.acquire(_x("db.t"), holder="observer", retries=0)


@pytest.mark.parametrize(
    ("host", "pid", "expected"),
    [
        ("this", "self", False),
        ("this", "dead", True),
        ("other", "dead", False),
        ("this", None, False),
        ("this", 0, False),
    ],
    ids=["live", "dead", "other-host", "no-pid", "pid-0"],
)
def test_is_dead_local_process_table(host, pid, expected):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    pids = {"self": os.getpid(), "dead": int(dead.stdout)}
    name = default_host() if host == "this" else "some-other-host"
    assert is_dead_local_process(name, pids.get(pid, pid)) is expected


def test_is_dead_local_process_reused_pid_is_dead():
    # This process started long after an owner registered a week ago: its PID was reused.
    assert is_dead_local_process(default_host(), os.getpid(), started=time.time() - 7 * 86400)
    assert not is_dead_local_process(default_host(), os.getpid(), started=time.time())


_SESSION = st.tuples(
    st.sampled_from(["here", "there"]),  # host
    st.sampled_from(["alive", "dead", None]),  # owner pid state (None: recorded before revision 0006)
    st.integers(min_value=0, max_value=3),  # heartbeat age in timeouts/2: 0..1 live, 3 expired
)


@settings(max_examples=25, deadline=None)
@given(sessions=st.lists(_SESSION, min_size=1, max_size=6))
def test_sql_lock_store_purge_matches_model(tmp_path_factory, sessions):
    """Model: a session survives iff its heartbeat is within its timeout and its owner is not a
    dead process of the checking host (other hosts and unknown pids expire by timeout only)."""
    timeout_ms, now = 10_000, 1_000_000_000
    pids = {"alive": 100, "dead": 200}
    killed: set[int] = set()  # every owner is alive while it acquires; "dead" ones die afterwards
    store = SqlLockStore(
        f"sqlite:///{tmp_path_factory.mktemp('purge')}/m.sqlite",
        is_dead_owner=lambda host, pid, _started: host == "here" and pid in killed,
    )
    try:
        expected = []
        for i, (host, owner, age) in enumerate(sessions):
            beat = now - age * timeout_ms // 2 - (1 if age == 3 else 0)
            store.open_session(f"s{i}", host, timeout_ms, beat, pid=None if owner is None else pids[owner])
            granted = store.attempt(
                session_id=f"s{i}",
                token=f"t{i}",
                rows=[LockRow(f"db.t{i}", "db", f"t{i}", "x")],
                markers=[],
                holder=f"h{i}",
                host=host,
                txn_id=None,
                now_ms=beat,
                find_conflicts=lambda existing: [],
            )
            assert granted.granted
            # the later attempts purge by their own (earlier or equal) clock; the model uses `now`
            expired = beat + timeout_ms < now
            dead = host == "here" and owner == "dead"
            if not expired and not dead:
                expected.append(f"db.t{i}")
        killed.add(pids["dead"])
        remaining = [s.object_name for s in store.list_locks(now)]
        assert sorted(remaining) == sorted(expected)
    finally:
        store.close()
