"""Random histories of open / allocate / commit / abort checked against a naive model of Hive's rules.

The model below is written independently of the store: a dict of transaction states and a dict of
write-ID allocations, from which the expected snapshots follow Hive's rules directly:
- ValidTxnList (no current txn): hwm = last txn ID, exceptions = open and aborted txns;
- ValidWriteIdList: a write ID is valid iff its txn committed; open/aborted txns' write IDs are
  the exceptions; with no committed write at all, GetValidWriteIdsForTableFunction reports only
  the lowest invalid write ID, which becomes the high watermark.
Runs on the in-memory fake; the contract suite shows the fake and the real stores agree.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from acid_core.metastore import Column, InMemoryMetastore, TableDefinition
from acid_core.metastore.sql.models import Base, NextCompactionQueueId, NextTxnId

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["open", "allocate", "commit", "abort"]), st.integers(min_value=0, max_value=50)
    ),
    max_size=40,
)


@pytest.fixture(scope="module")
def reusable_store():
    store = InMemoryMetastore()
    yield store
    store.close()


def _emptied(store: InMemoryMetastore) -> InMemoryMetastore:
    # A new in-memory store per example costs a migration; emptying the tables costs ~1 ms.
    with store._engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())
        connection.execute(sa.insert(NextTxnId).values(next_txn_id=1))
        connection.execute(sa.insert(NextCompactionQueueId).values(next_id=1))
    store._ensure_default_database()
    store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))
    return store


@given(ops=_OPS)
def test_snapshots_match_a_naive_model_of_hive_rules(reusable_store, ops):
    store = _emptied(reusable_store)
    states: dict[int, str] = {}
    write_ids: dict[int, int] = {}
    next_txn, next_write_id = 1, 1

    for op, pick in ops:
        open_txns = sorted(t for t, s in states.items() if s == "open")
        if op == "open":
            assert store.open_txn() == next_txn
            states[next_txn] = "open"
            next_txn += 1
            continue
        if not open_txns:
            continue
        txn = open_txns[pick % len(open_txns)]
        if op == "allocate":
            if txn not in write_ids:
                write_ids[txn] = next_write_id
                next_write_id += 1
            assert store.allocate_write_id(txn, "t") == write_ids[txn]
        elif op == "commit":
            store.commit_txn(txn)
            states[txn] = "committed"
        else:
            store.abort_txn(txn)
            states[txn] = "aborted"

    txns = store.get_valid_txns()
    assert txns.high_watermark == next_txn - 1
    assert txns.open_ids == tuple(sorted(t for t, s in states.items() if s == "open"))
    assert txns.aborted_ids == tuple(sorted(t for t, s in states.items() if s == "aborted"))

    by_state = {
        state: sorted(w for t, w in write_ids.items() if states[t] == state) for state in states.values()
    }
    committed, open_w, aborted_w = (by_state.get(k, []) for k in ("committed", "open", "aborted"))
    min_open = min(open_w) if open_w else None
    snapshot = store.get_valid_write_ids("t", txns)
    if committed:
        expected = (max(write_ids.values()), tuple(open_w), tuple(aborted_w), min_open)
    elif open_w or aborted_w:
        lowest = min(open_w + aborted_w)
        is_open = lowest == min_open
        expected = (lowest, (lowest,) if is_open else (), () if is_open else (lowest,), min_open)
    else:
        expected = (0, (), (), None)
    assert (
        snapshot.high_watermark,
        snapshot.open_ids,
        snapshot.aborted_ids,
        snapshot.min_open_id,
    ) == expected
    for txn, write_id in write_ids.items():
        assert snapshot.is_write_id_valid(write_id) is (states[txn] == "committed")
