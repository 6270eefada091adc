"""kill -9 of the worker or the cleaner at each step loses no row, exposes no partial directory, and
the next run cleans up what was left.

A child process (a real interpreter) claims the compaction or runs the cleaner and SIGKILLs itself
at the chosen step; the parent then checks what a reader sees, runs the worker (which recovers
abandoned compactions first) and the cleaner again, and checks the end state.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from acid_core.compaction.cleaner import read_ledger, run_cleaner
from acid_core.compaction.worker import STAGING_PREFIX, run_worker
from acid_core.metastore import CompactionState, CompactionType
from acid_core.paths import parse_acid_dir
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WORKER = textwrap.dedent(
    """
    import os, signal, sys
    from acid_core.compaction.worker import compact_bucket, default_worker_id, execute_compaction
    from acid_core.writes.transaction import Warehouse

    location, kill_at = sys.argv[1], sys.argv[2]
    wh = Warehouse.open(location, heartbeat_seconds=None)
    claimed = wh.metastore.find_next_to_compact(default_worker_id())

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def on_step(step):
        if step == kill_at:
            die()

    def runner(tasks, heartbeat):
        results = []
        for task in tasks:
            results.append(compact_bucket(task))
            if kill_at == "writing-mid":
                die()  # the first bucket's files are written, the others not
        return results

    execute_compaction(wh.metastore, claimed, on_step=on_step, run_tasks=runner)
    """
)

CLEANER = textwrap.dedent(
    """
    import os, signal, sys
    from acid_core.compaction.cleaner import CleanerOptions, run_cleaner
    from acid_core.writes.transaction import Warehouse

    location, kill_at, quarantine = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    wh = Warehouse.open(location, heartbeat_seconds=None)
    deleted = []

    def on_step(step, path):
        if step == "deleting":
            deleted.append(path)
        if step == kill_at and (step != "deleting" or len(deleted) == 2):
            os.kill(os.getpid(), signal.SIGKILL)

    run_cleaner(wh.metastore, CleanerOptions(quarantine=quarantine, on_step=on_step))
    """
)


def run_child(script, *args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    child = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]


def visible(root):
    return {n for n in os.listdir(root) if not n.startswith(("_", "."))}


@pytest.fixture
def table(tmp_path):
    location = str(tmp_path / "wh")
    wh = Warehouse.open(location, heartbeat_seconds=None)
    history = random_history(wh, 41, partitioned=False, buckets=3, txns=9)
    root = wh.metastore.get_table("default.t").location
    yield wh, history, root, read_rows(history)
    wh.close()


STEPS = ["writing", "writing-mid", "verifying", "renaming", "renamed", "committing", "marking"]


@pytest.mark.parametrize("kind", [CompactionType.MINOR, CompactionType.MAJOR])
@pytest.mark.parametrize("kill_at", STEPS)
def test_kill_worker_at_each_step(table, kind, kill_at):
    wh, history, root, expected = table
    before = visible(root)
    wh.metastore.enqueue_compaction("default.t", None, kind)
    run_child(WORKER, wh.location, kill_at)

    # What a reader sees now: the same rows; new names are only _vT outputs of the killed attempt.
    assert read_rows(history) == expected
    [killed] = wh.metastore.show_compactions()
    assert killed.state is CompactionState.WORKING
    for name in visible(root) - before:
        assert parse_acid_dir(name).visibility_txn_id == killed.txn_id

    # The next worker run recovers (finishes or re-queues) and compacts; the cleaner cleans.
    outcomes = run_worker(wh.metastore)
    committed_before_kill = kill_at == "marking"
    assert len(outcomes) == (0 if committed_before_kill else 1)
    assert read_rows(history) == expected
    while run_cleaner(wh.metastore):
        pass
    assert read_rows(history) == expected
    names = set(os.listdir(root))
    assert not [n for n in names if n.startswith(STAGING_PREFIX)]
    outputs = visible(root)
    if kind is CompactionType.MAJOR:
        assert len(outputs) == 1
        assert next(iter(outputs)).startswith("base_")
    else:
        assert all(parse_acid_dir(n).visibility_txn_id for n in outputs)
    states = [c.state for c in wh.metastore.show_compactions()]
    assert states.count(CompactionState.SUCCEEDED) == 1
    assert set(states) <= {CompactionState.SUCCEEDED, CompactionState.FAILED}


@pytest.mark.parametrize("quarantine", [False, True], ids=["delete", "quarantine"])
@pytest.mark.parametrize("kill_at", ["ledger", "deleting", "marking"])
def test_kill_cleaner_at_each_step(table, kill_at, quarantine):
    wh, history, root, expected = table
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    [outcome] = run_worker(wh.metastore)
    obsolete = visible(root) - set(outcome.outputs)
    run_child(CLEANER, wh.location, kill_at, "1" if quarantine else "0")
    assert read_rows(history) == expected
    assert wh.metastore.get_compaction(outcome.compaction_id).state is CompactionState.READY_FOR_CLEANING
    [result] = run_cleaner(wh.metastore)
    assert result.status == "cleaned"
    assert visible(root) == set(outcome.outputs)
    assert read_rows(history) == expected
    ledger = read_ledger(root)
    assert {os.path.basename(a.path) for a in ledger} == obsolete
    assert {a.action for a in ledger} <= {"deleted", "quarantined"}
