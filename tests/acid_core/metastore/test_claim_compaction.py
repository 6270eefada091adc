"""Claiming one given compaction (used by the Spark job's --compaction-id).

Expected behaviour mirrors find_next_to_compact's state-checked claim ('i' -> 'w', as Hive's
CompactionTxnHandler does), for a named entry: only an 'initiated' entry can be claimed, once.
"""

from __future__ import annotations

import pytest

from acid_core.errors import CompactionStateError, NoSuchCompactionError
from acid_core.metastore import (
    Column,
    CompactionState,
    CompactionType,
    InMemoryMetastore,
    SqlMetastore,
    TableDefinition,
)

_FACTORIES = {
    "memory": lambda tmp_path: InMemoryMetastore(),
    "sqlite": lambda tmp_path: SqlMetastore(f"sqlite:///{tmp_path}/m.sqlite", warehouse=str(tmp_path)),
}


@pytest.fixture(params=sorted(_FACTORIES))
def store(request, tmp_path):
    metastore = _FACTORIES[request.param](tmp_path)
    yield metastore
    metastore.close()


def _queue_two(store):
    store.create_table(
        TableDefinition("default.t", columns=(Column("id", "int"),), properties={"transactional": "true"})
    )
    first = store.enqueue_compaction("default.t", None, CompactionType.MAJOR)
    store.create_table(
        TableDefinition("default.u", columns=(Column("id", "int"),), properties={"transactional": "true"})
    )
    second = store.enqueue_compaction("default.u", None, CompactionType.MINOR)
    return first, second


def test_claim_compaction_claims_exactly_the_named_entry(store):
    first, second = _queue_two(store)
    claimed = store.claim_compaction(second, "worker-x")
    assert claimed.id == second
    assert store.get_compaction(second).state is CompactionState.WORKING
    assert store.get_compaction(first).state is CompactionState.INITIATED
    # the oldest entry is still there for the next worker
    assert store.find_next_to_compact("worker-y").id == first


def test_claim_compaction_twice_raises_naming_the_state(store):
    _, second = _queue_two(store)
    store.claim_compaction(second, "worker-x")
    with pytest.raises(CompactionStateError, match="working"):
        store.claim_compaction(second, "worker-y")


def test_claim_unknown_compaction_raises(store):
    _queue_two(store)
    with pytest.raises(NoSuchCompactionError):
        store.claim_compaction(999, "worker-x")
