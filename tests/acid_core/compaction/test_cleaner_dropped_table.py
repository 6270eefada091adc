"""A cleaner that races DROP TABLE skips the table and never recreates its directory.

DROP TABLE forgets the table's queue entries and deletes its directory (``drop_table``); a cleaner
run already past ``find_ready_to_clean`` must neither write its ledger back into
``<table>/_acidflow_cleaner/`` (a later CREATE TABLE of the name would find a directory acidflow
did not write) nor report a failure for an entry that is gone.
"""

from __future__ import annotations

import os

import pytest

from acid_core.compaction.cleaner import CleanerOptions, run_cleaner
from acid_core.compaction.worker import run_worker
from acid_core.metastore import CompactionType
from acid_core.sql.engine import SqlSession
from tests.acid_core.compaction.histories import random_history


@pytest.mark.parametrize("when", ["ledger", "deleting", "marking"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["table", "partitions"])
def test_cleaner_table_dropped_mid_run_is_skipped_and_its_directory_stays_gone(wh, when, partitioned):
    random_history(wh, 41, partitioned=partitioned, buckets=1, txns=6)
    location = wh.metastore.get_table("default.t").location
    for partition in [p.name for p in wh.metastore.list_partitions("default.t")] or [None]:
        wh.metastore.enqueue_compaction("default.t", partition, CompactionType.MAJOR)
    assert {o.status for o in run_worker(wh.metastore)} == {"compacted"}
    session = SqlSession(wh)
    dropped = []

    def drop(step, _path):
        if step == when and not dropped:
            session.execute("DROP TABLE t")
            dropped.append(step)

    results = run_cleaner(wh.metastore, CleanerOptions(on_step=drop))
    assert dropped == [when]
    assert not os.path.exists(location)
    assert results
    assert {r.status for r in results} == {"skipped"}
    assert all(
        r.message == "table default.t was dropped while it was cleaned; nothing more done" for r in results
    )
    session.execute("CREATE TABLE t (id int, v string) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    assert wh.metastore.get_table("default.t").location == location


def test_cleaner_table_dropped_before_the_run_leaves_nothing_to_clean(wh):
    random_history(wh, 42, partitioned=False, buckets=1, txns=4)
    location = wh.metastore.get_table("default.t").location
    wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    run_worker(wh.metastore)
    SqlSession(wh).execute("DROP TABLE t")
    assert run_cleaner(wh.metastore) == []
    assert not os.path.exists(location)
