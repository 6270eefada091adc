"""ZooKeeper-only behaviour of KazooLockManager: the znode protocol itself, a killed holder, a restart.

The protocol expectations are the issue's (HIVE-1293): ephemeral sequential ``read-``/``write-``
children under the object's znode, compared by sequence number.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from acid_core.errors import LockRefusedError, LockServiceUnavailableError
from acid_core.locks import LockMode, LockRequest, default_host, parse_lock_object
from acid_core.locks.zookeeper import KazooLockManager
from tests.fixtures.zookeeper import free_port

pytestmark = pytest.mark.integration("zookeeper")

REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("lock_worker.py")


def req(name: str, mode: str) -> LockRequest:
    return LockRequest(parse_lock_object(name), LockMode(mode))


@pytest.fixture
def root():
    return f"/acidflow-test/{uuid.uuid4().hex}/locks"


@pytest.fixture
def raw(zookeeper_server):
    client = KazooClient(hosts=zookeeper_server.hosts)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def managers(zookeeper_server, root):
    made: list[KazooLockManager] = []

    def make(**kwargs) -> KazooLockManager:
        manager = KazooLockManager(zookeeper_server.hosts, root=root, **kwargs)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.close()


def test_znodes_are_ephemeral_sequential_read_and_write_children_with_json_data(managers, raw, root):
    a = managers()
    a.acquire([req("db.t/p=1", "X")], holder="alice", txn_id=5)
    table_children = raw.get_children(f"{root}/db/t")
    assert sorted(c for c in table_children if not c.startswith("read-")) == ["p=1"]
    (read_node,) = [c for c in table_children if c.startswith("read-")]
    assert re.fullmatch(r"read-\d{10}", read_node)
    (write_node,) = raw.get_children(f"{root}/db/t/p=1")
    assert re.fullmatch(r"write-\d{10}", write_node)
    raw_data, stat = raw.get(f"{root}/db/t/p=1/{write_node}")
    assert stat.ephemeralOwner == a.client_id[0]
    data = json.loads(raw_data)
    assert (data["holder"], data["txn_id"], data["mode"], data["object"]) == (
        "alice",
        5,
        "exclusive",
        "db.t/p=1",
    )
    assert data["host"]
    assert data["pid"] == os.getpid()
    assert data["acquired_at"].endswith("+00:00")


def test_shared_refused_only_by_lower_write_node(managers, raw, root):
    a = managers()
    path = f"{root}/db/t"
    foreign = raw.create(f"{path}/read-", b"{}", ephemeral=True, sequence=True, makepath=True)
    raw.create(f"{path}/not-a-lock", b"")
    granted = a.acquire([req("db.t", "S")], holder="a", retries=0)
    a.release(granted)
    with pytest.raises(LockRefusedError):
        a.acquire([req("db.t", "X")], holder="a", retries=0)
    raw.delete(foreign)
    raw.create(f"{path}/write-", b'{"holder": "intruder"}', ephemeral=True, sequence=True)
    with pytest.raises(LockRefusedError, match=r"db\.t held in exclusive mode by 'intruder'"):
        a.acquire([req("db.t", "S")], holder="a", retries=0)
    assert sorted(c.split("-")[0] for c in raw.get_children(path)) == ["not", "write"], (
        "refused nodes are deleted"
    )


def test_fair_writer_keeps_a_wait_marker_that_show_does_not_list(managers, raw, root):
    reader, writer = managers(), managers(fair=True)
    held = reader.acquire([req("db.t", "S")], holder="reader")
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(
            h=writer.acquire([req("db.t", "X")], holder="w", retries=200, wait_seconds=0.02)
        )
    )
    thread.start()
    deadline = time.monotonic() + 10
    while (
        not any(c.startswith("wait-") for c in raw.get_children(f"{root}/db/t"))
        and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    assert any(c.startswith("wait-") for c in raw.get_children(f"{root}/db/t"))
    # The writer's retries put a write- node up for a moment each (removed when it finds the reader),
    # which show() may list; the wait marker stays the whole time, so if show() listed it no sample
    # would be the reader's lock alone.
    samples = []
    for _ in range(50):
        samples.append([i.mode for i in reader.show()])
        if samples[-1] == [LockMode.SHARED]:
            break
        time.sleep(0.01)
    assert samples[-1] == [LockMode.SHARED], samples
    reader.release(held)
    thread.join(15)
    assert [c.split("-")[0] for c in raw.get_children(f"{root}/db/t")] == ["write"], "marker deleted on grant"
    writer.release(result["h"])


def test_release_prunes_empty_partition_znodes_and_keeps_the_table(managers, raw, root):
    a, b = managers(), managers()
    other = b.acquire([req("db.t/p=2", "S")], holder="b")
    handle = a.acquire([req("db.t/p=1/q=2", "X")], holder="a")
    a.release(handle)
    assert sorted(c for c in raw.get_children(f"{root}/db/t") if "=" in c) == ["p=2"]
    b.release(other)
    assert raw.get_children(f"{root}/db/t") == []
    assert raw.get_children(root) == ["db"]


def test_zookeeper_restart_shorter_than_session_timeout_keeps_locks(managers, zookeeper_server):
    """Documented outcome: sessions and ephemeral nodes are persisted by the server, so a client that
    reconnects within its session timeout still holds its locks; its handle stays valid."""
    a = managers(session_timeout=20)
    handle = a.acquire([req("db.t", "X")], holder="survivor")
    zookeeper_server.restart()
    deadline = time.monotonic() + 20
    while not a.is_connected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert a.is_connected
    assert not handle.is_lost
    handle.check()
    b = managers()
    with pytest.raises(LockRefusedError, match="by 'survivor'"):
        b.acquire([req("db.t", "S")], holder="b", retries=0)
    a.release(handle)
    assert b.acquire([req("db.t", "S")], holder="b", retries=0) is not None


def test_unreachable_zookeeper_raises_service_unavailable():
    port = free_port()
    with pytest.raises(LockServiceUnavailableError) as info:
        KazooLockManager(f"127.0.0.1:{port}", connect_timeout=1)
    assert str(info.value) == (
        f"Could not connect to ZooKeeper at '127.0.0.1:{port}' within 1 s; expected a running ZooKeeper "
        "server; nothing was locked: acidflow stops this run and the next run starts from the state the "
        "metastore holds; hint: check ACIDFLOW_ZOOKEEPER and that the server answers `echo ruok | nc host "
        "port`"
    )


def _ended_pid() -> int:
    """The process ID of a process that has ended (and was reaped)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(proc.stdout)


@pytest.mark.parametrize(
    ("owner", "reaped"),
    [
        pytest.param(
            lambda: {"host": default_host(), "pid": _ended_pid(), "acquired_at": None},
            True,
            id="dead-local-pid",
        ),
        pytest.param(
            lambda: {"host": default_host(), "pid": os.getpid(), "acquired_at": "2000-01-01T00:00:00+00:00"},
            True,
            id="pid-reused-by-a-later-process",
        ),
        pytest.param(
            lambda: {"host": default_host(), "pid": os.getpid(), "acquired_at": None},
            False,
            id="live-local-pid",
        ),
        pytest.param(
            lambda: {"host": "another-host", "pid": _ended_pid(), "acquired_at": None}, False, id="other-host"
        ),
        pytest.param(lambda: {"host": default_host(), "acquired_at": None}, False, id="no-pid"),
        pytest.param(
            lambda: {"host": default_host(), "pid": "12", "acquired_at": None}, False, id="pid-not-an-int"
        ),
    ],
)
def test_conflicting_node_of_dead_local_process_is_deleted_others_refuse(managers, raw, root, owner, reaped):
    """A write node whose owner is a dead process of this host is freed at once (its session, the raw
    client's here, is still alive: the decision is the owner's process, as for the SQL locks); any
    owner not certainly dead keeps refusing until its session ends."""
    a = managers()
    path = f"{root}/db/t/#maintenance"
    data = {"holder": "compaction 67", "mode": "exclusive", "object": "db.t#maintenance", **owner()}
    node = raw.create(
        f"{path}/write-", json.dumps(data).encode(), ephemeral=True, sequence=True, makepath=True
    )
    requests = [req("db.t", "S"), LockRequest(parse_lock_object("db.t#maintenance"), LockMode.EXCLUSIVE)]
    if reaped:
        handle = a.acquire(requests, holder="compaction 81", retries=0)
        assert raw.exists(node) is None
        a.release(handle)
    else:
        with pytest.raises(LockRefusedError, match=r"held in exclusive mode by 'compaction 67'"):
            a.acquire(requests, holder="compaction 81", retries=0)
        assert raw.exists(node) is not None


def test_killed_holder_lock_freed_at_once_even_after_zookeeper_restart_rearms_its_session(
    managers, zookeeper_server, root
):
    """The long soak's failure (seed 1194515100): a compactor killed with SIGKILL while it held the
    maintenance lock; each ZooKeeper restart restores the dead session with its full timeout again,
    so with restarts more frequent than the timeout its node never went away and every later
    compaction was refused for minutes. The next acquire on the same host frees it at once."""
    spec = json.dumps({"kind": "zookeeper", "hosts": zookeeper_server.hosts, "root": root})
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "hold", spec, "db.t#maintenance", "X", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    try:
        assert proc.stdout.readline().strip() == b"ACQUIRED", proc.stderr.read().decode()[-2000:]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        zookeeper_server.restart()  # the dead session is restored, its 30 s timeout re-armed
        observer = managers()
        assert [str(i.object) for i in observer.show()] == ["db.t", "db.t#maintenance"], (
            "the dead session's nodes"
        )
        handle = observer.acquire([req("db.t#maintenance", "X")], holder="next compaction", retries=0)
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    # Only what conflicted is freed: the dead holder's S on the table goes with its session.
    assert sorted((str(i.object), i.holder) for i in observer.show(extended=True)) == [
        ("db.t", "doomed"),
        ("db.t", "next compaction"),
        ("db.t#maintenance", "next compaction"),
    ]
    observer.release(handle)
