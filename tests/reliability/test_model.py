"""The soak's own model and journal: replay applies exactly the committed writes, survives a torn line."""

from __future__ import annotations

import pytest

from tests.reliability.model import Journal, JournalError, diff_rows, read_records, replay


def _pending(op, txn, changes, kind="sql_insert"):
    return {
        "t": "pending",
        "op": op,
        "kind": kind,
        "txn": txn,
        "changes": {str(k): v for k, v in changes.items()},
    }


def test_replay_committed_and_aborted_applies_only_committed():
    state = replay(
        [
            _pending(0, 5, {1: "a", 2: "b"}),
            {"t": "done", "op": 0, "outcome": "committed"},
            _pending(1, 6, {1: None, 3: "c"}),
            {"t": "done", "op": 1, "outcome": "aborted"},
            _pending(2, 7, {2: "b2"}),
            {"t": "done", "op": 2, "outcome": "committed"},
        ]
    )
    assert state.rows == {1: "a", 2: "b2"}
    assert (state.committed, state.aborted, state.next_op, state.next_id) == (2, 1, 3, 4)
    assert state.unresolved == []


def test_replay_pending_without_done_is_unresolved_and_not_applied():
    state = replay([_pending(0, 5, {1: "a"})])
    assert state.rows == {}
    assert [(p.op, p.txn_id, p.changes) for p in state.unresolved] == [(0, 5, {1: "a"})]


def test_replay_done_without_pending_raises():
    with pytest.raises(JournalError, match="done for op 3 that is not pending"):
        replay([{"t": "done", "op": 3, "outcome": "committed"}])


def test_replay_leases_released_and_releasing_are_tracked():
    state = replay(
        [
            {"t": "lease", "lease": 1, "rows": {"1": "a"}, "txns": "5:9223372036854775807::"},
            {"t": "lease", "lease": 2, "rows": {}, "txns": "6:9223372036854775807::"},
            {"t": "releasing", "lease": 2},
            {"t": "lease", "lease": 3, "rows": {}, "txns": "7:9223372036854775807::"},
            {"t": "releasing", "lease": 3},
            {"t": "released", "lease": 3},
            {"t": "check", "rows": 4},
            {"t": "check", "rows": 5},
        ]
    )
    assert sorted(state.leases) == [1, 2]
    assert state.leases[1].rows == {1: "a"}
    assert state.releasing == {2}
    assert (state.leases_taken, state.leases_released, state.checks, state.rows_checked) == (3, 1, 2, 9)


def test_journal_torn_last_line_is_dropped_on_open(tmp_path):
    path = str(tmp_path / "journal.jsonl")
    journal = Journal(path)
    journal.append(_pending(0, 5, {1: "a"}))
    journal.close()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"t": "done", "op": 0, "outc')  # killed in the middle of a write
    assert len(read_records(path)) == 1
    journal = Journal(path)
    journal.append({"t": "done", "op": 0, "outcome": "committed"})
    journal.close()
    assert replay(read_records(path)).rows == {1: "a"}


@pytest.mark.parametrize(
    ("expected", "actual", "message"),
    [
        ({1: "a"}, {1: "a"}, ""),
        ({1: "a", 2: "b"}, {1: "a"}, "1 committed row(s) lost: [(2, 'b')]"),
        ({1: "a"}, {1: "a", 9: "x"}, "1 row(s) not committed: [(9, 'x')]"),
        ({1: "a"}, {1: "z"}, "1 row(s) with a wrong value: [(1, 'a', 'z')]"),
    ],
    ids=["equal", "lost", "extra", "changed"],
)
def test_diff_rows_each_difference_is_named(expected, actual, message):
    assert diff_rows(expected, actual) == message
