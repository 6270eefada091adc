"""The helpers every compactor role shares (``acid_core.compaction.common``)."""

from __future__ import annotations

from acid_core.compaction import cleaner, worker
from acid_core.compaction.common import (
    DEFAULT_TXN_TIMEOUT_SECONDS,
    partition_location,
    reap_timed_out_transactions,
)
from acid_core.metastore import Column, InMemoryMetastore, TableDefinition, TxnState


def _store(tmp_path):
    store = InMemoryMetastore(warehouse=str(tmp_path / "wh"))
    store.create_table(
        TableDefinition(
            "t",
            (Column("id", "int"),),
            partition_keys=(Column("p", "string"),),
            properties={"transactional": "true"},
        )
    )
    return store


def test_partition_location_stored_default_and_table(tmp_path):
    store = _store(tmp_path)
    table = store.get_table("t")
    store.add_partition("t", {"p": "x"}, str(tmp_path / "elsewhere"))
    assert partition_location(store, table, "p=x") == str(tmp_path / "elsewhere")
    assert partition_location(store, table, "p=y") == f"{table.location}/p=y"  # Hive's default layout
    assert partition_location(store, table, None) == table.location


def test_reaper_aborts_only_silent_transactions(tmp_path):
    store = _store(tmp_path)
    silent = store.open_txn(now=1000.0)
    alive = store.open_txn(now=1000.0 + DEFAULT_TXN_TIMEOUT_SECONDS)
    assert reap_timed_out_transactions(store, now=1000.0 + DEFAULT_TXN_TIMEOUT_SECONDS + 1) == [silent]
    assert store.get_txn(silent).state is TxnState.ABORTED
    assert store.get_txn(alive).state is TxnState.OPEN


def test_old_import_paths_still_name_the_shared_helpers():
    assert worker.partition_location is partition_location
    assert cleaner.reap_timed_out_transactions is reap_timed_out_transactions
    assert cleaner.DEFAULT_TXN_TIMEOUT_SECONDS == DEFAULT_TXN_TIMEOUT_SECONDS
