"""kill -9 of a compaction half-way on every real Hive Metastore, and its recovery.

The same story as ``test_compaction_kill.py`` (the embedded metastore), through the HMS: a child
interpreter claims the queued compaction through the server (``find_next_compact2`` on Hive 4,
the SQL queue before) and SIGKILLs itself at a step; the parent checks what a reader sees, then
runs the worker (``recover_abandoned_compactions`` finds the dead local worker: its compaction txn
is aborted, or marked compacted when it had committed) and the cleaner, and checks the end
state: the same rows, no staging directory, one base, the entry 'succeeded' in ``show_compact``.

Steps (``execute_compaction``'s ``on_step``): ``writing-mid`` (one bucket's files in the hidden
staging directory, T open), ``renamed`` (the output renamed in place, T open: with Hive 2.3/3.1
names it is visible at once and holds exactly the rows it replaces; with Hive 4's ``_vT`` it is
invisible until T commits), ``marking`` (T committed, the entry still 'working').
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import STAGING_PREFIX, run_worker
from acid_core.metastore import CompactionState, CompactionType
from tests.fixtures.hive import Insert
from tests.integration.test_hive_metastore import (
    _acidflow_rows,
    _hive_rows,
    _hive_write,
    _make_table,
    _open_store,
    _without_v,
    server_hive_for,
)

pytestmark = [pytest.mark.integration("hive"), pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = str(Path(__file__).resolve().parents[2])

WORKER = textwrap.dedent(
    """
    import os, signal, sys
    from acid_core.compaction.worker import compact_bucket, default_worker_id, execute_compaction
    from acid_core.metastore.factory import open_metastore

    uri, warehouse, hms_db, table, kill_at = sys.argv[1:6]
    metastore = open_metastore(uri, warehouse, hms_db=hms_db)
    claimed = metastore.find_next_to_compact(default_worker_id())
    if claimed is None or claimed.table != table:
        sys.exit(f"claimed {claimed!r}, expected the compaction of {table}")

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def on_step(step):
        if step == kill_at:
            die()

    def runner(tasks, heartbeat):
        results = [compact_bucket(task) for task in tasks]
        if kill_at == "writing-mid":
            die()  # the bucket files are in the staging directory, nothing renamed
        return results

    execute_compaction(metastore, claimed, on_step=on_step, run_tasks=runner)
    """
)


@pytest.fixture(scope="module")
def server(hive_metastore_servers):
    return hive_metastore_servers


@pytest.fixture(scope="module")
def server_hive(server, request):
    """That server's Hive: its writer, and its readers that check the rows."""
    return server_hive_for(server, request)


@pytest.fixture(scope="module")
def hms(server, tmp_path_factory):
    store = _open_store(server, tmp_path_factory)
    yield store
    store.close()


def _visible(root):
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(("_", ".")))


@pytest.mark.parametrize("kill_at", ["writing-mid", "renamed", "marking"])
def test_kill_9_of_a_compaction_on_the_hms_is_recovered(
    hms, server_hive, server, capsys, monkeypatch, tmp_path, kill_at
):
    # The servers are the session's: an entry another module left queued would be claimed by the
    # child before ours. Compact whatever is queued first (this module's order must not matter).
    run_worker(hms)
    name = f"kill_{kill_at.replace('-', '_')}_t"
    table = _make_table(hms, name)
    for i in range(3):
        _hive_write(hms, server_hive, table, lambda t, i=i: [Insert(t, (i, f"n{i}", i))])
    expected = [(i, f"n{i}", i) for i in range(3)]
    root = Path(table.location.removeprefix("file://"))
    before = _visible(root)
    monkeypatch.setenv("ACIDFLOW_HMS_DB", server.backend_url)
    compaction_id = hms.enqueue_compaction(table.full_name, None, CompactionType.MAJOR)

    child = subprocess.run(
        [sys.executable, "-c", WORKER, server.uri, str(server.warehouse), server.backend_url,
         table.full_name, kill_at],
        env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]

    # What readers see now: the same rows (Hive's reader and acidflow's).
    [killed] = [c for c in hms.show_compactions(table.full_name) if c.id == compaction_id]
    assert killed.state is CompactionState.WORKING
    assert killed.txn_id is not None  # named on the entry: recovery can abort or finish it
    assert _hive_rows(server_hive, table) == expected
    assert _acidflow_rows(capsys, server.uri, table.full_name) == expected
    if kill_at == "writing-mid":
        assert _visible(root) == before

    # The next worker run recovers the dead worker's entry (and compacts again unless it had committed).
    outcomes = run_worker(hms)
    assert len(outcomes) == (0 if kill_at == "marking" else 1), outcomes
    assert _acidflow_rows(capsys, server.uri, table.full_name) == expected
    for _ in range(3):  # a superseded entry and the aborted attempt's outputs may take a second run
        run_cleaner(hms)
    names = sorted(p.name for p in root.iterdir())
    assert not [n for n in names if n.startswith(STAGING_PREFIX)], names
    [base] = _visible(root)
    assert base.startswith("base_"), base
    if not server.version.startswith("2."):  # the table's own write IDs 1..3
        assert _without_v(base) == "base_0000003", base
    assert _hive_rows(server_hive, table) == expected
    assert _acidflow_rows(capsys, server.uri, table.full_name) == expected
    states = [c.state for c in hms.show_compactions(table.full_name)]
    assert states.count(CompactionState.SUCCEEDED) == 1, states
    assert set(states) <= {CompactionState.SUCCEEDED, CompactionState.FAILED}, states
