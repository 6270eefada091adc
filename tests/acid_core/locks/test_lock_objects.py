"""Lock objects, modes, the compatibility matrix and the hierarchy completion (pure parts of the port)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.errors import InvalidLockRequestError
from acid_core.locks import (
    COMPATIBILITY,
    LockMode,
    LockObject,
    LockRequest,
    is_compatible,
    parse_lock_mode,
    parse_lock_object,
    plan_lock_set,
)

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


@pytest.mark.parametrize(
    ("held", "requested", "expected"),
    [(S, S, True), (S, X, False), (X, S, False), (X, X, False)],
    ids=["S-S", "S-X", "X-S", "X-X"],
)
def test_is_compatible_matches_design_matrix(held, requested, expected):
    assert is_compatible(held, requested) is expected
    assert COMPATIBILITY[(held, requested)] is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("S", S), ("s", S), ("shared", S), ("X", X), (" x ", X), ("EXCLUSIVE", X)],
)
def test_parse_lock_mode_accepts_letters_and_words(text, expected):
    assert parse_lock_mode(text) is expected


def test_lock_mode_values_are_lower_case_and_letters_parse():
    assert [m.value for m in LockMode] == ["shared", "exclusive"]
    assert LockMode("S") is S
    assert LockMode("x") is X


def test_parse_lock_mode_unknown_raises():
    with pytest.raises(InvalidLockRequestError, match=r"Invalid lock request 'W': unknown lock mode"):
        parse_lock_mode("W")


@pytest.mark.parametrize(
    ("text", "db", "table", "partition", "maintenance"),
    [
        ("db.t", "db", "t", (), False),
        ("DB.T", "db", "t", (), False),
        ("db.t/ds=2024-01-01", "db", "t", (("ds", "2024-01-01"),), False),
        ("db.t/K=V/k2=v2", "db", "t", (("k", "V"), ("k2", "v2")), False),
        ("db.t/ts=10%3A00", "db", "t", (("ts", "10:00"),), False),
        ("db.t/p=a%2Fb", "db", "t", (("p", "a/b"),), False),
        ("db.t/p=1#maintenance", "db", "t", (("p", "1"),), True),
        ("db.t#maintenance", "db", "t", (), True),
    ],
)
def test_parse_lock_object_parts(text, db, table, partition, maintenance):
    obj = parse_lock_object(text)
    assert (obj.db, obj.table, obj.partition, obj.maintenance) == (db, table, partition, maintenance)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("table_only", "does not start with db.table"),
        ("db.t.x", "does not start with db.table"),
        ("db.t/p", "has no '='"),
        ("db.t/p=", "empty value"),
        ("db.t/p=1/p=2", "appears twice"),
        ("db.t-x", "bad table name"),
        ("db.t/p=%zz", "bad escape"),
        ("", "does not start with db.table"),
    ],
)
def test_parse_lock_object_bad_input_raises(text, match):
    with pytest.raises(InvalidLockRequestError, match=match):
        parse_lock_object(text)


def test_parse_lock_object_error_is_value_error_with_whole_input():
    with pytest.raises(
        ValueError, match=r"^Invalid lock request 'db\.t/p': partition component 'p' has no '='"
    ):
        parse_lock_object("db.t/p")


def test_parents_lists_table_then_each_prefix():
    obj = parse_lock_object("db.t/a=1/b=2/c=3")
    assert [p.to_name() for p in obj.parents()] == ["db.t", "db.t/a=1", "db.t/a=1/b=2"]
    assert parse_lock_object("db.t").parents() == ()
    assert [p.to_name() for p in parse_lock_object("db.t/a=1#maintenance").parents()] == ["db.t", "db.t/a=1"]


def test_is_within_prefix():
    part = parse_lock_object("db.t/a=1/b=2")
    assert part.is_within(parse_lock_object("db.t"))
    assert part.is_within(parse_lock_object("db.t/a=1"))
    assert not part.is_within(parse_lock_object("db.t/a=2"))
    assert not part.is_within(parse_lock_object("db.t2"))
    assert parse_lock_object("db.t/a=1#maintenance").is_within(parse_lock_object("db.t/a=1"))


def test_plan_lock_set_adds_parents_dedupes_and_x_wins():
    requests = [
        LockRequest(parse_lock_object("db.t/a=1/b=2"), X),
        LockRequest(parse_lock_object("db.t/a=1"), S),
        LockRequest(parse_lock_object("db.t"), X),
        LockRequest(parse_lock_object("db.t/a=1/b=2"), S),
        LockRequest(parse_lock_object("db.a"), S),
    ]
    assert [str(r) for r in plan_lock_set(requests)] == ["S db.a", "X db.t", "S db.t/a=1", "X db.t/a=1/b=2"]


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=6)
_values = st.text(min_size=1, max_size=8).filter(lambda v: "\x00" not in v)
_objects = st.builds(
    LockObject,
    _names,
    _names,
    st.lists(st.tuples(_names, _values), max_size=3, unique_by=lambda kv: kv[0]).map(tuple),
    st.booleans(),
)


@given(_objects)
def test_parse_format_round_trip(obj):
    assert parse_lock_object(obj.to_name()) == obj
    assert LockObject.from_path_components(obj.path_components()) == obj
    assert "/" not in "".join(obj.path_components())


@given(st.lists(st.tuples(_objects, st.sampled_from([S, X])), max_size=6))
def test_plan_lock_set_closed_under_parents_sorted_one_per_object(pairs):
    planned = plan_lock_set(LockRequest(o, m) for o, m in pairs)
    objects = [r.object for r in planned]
    assert len(objects) == len(set(objects))
    assert objects == sorted(objects, key=LockObject.sort_key)
    for r in planned:
        assert all(p in objects for p in r.object.parents())
    wanted_x = {o for o, m in pairs if m is X}
    assert {r.object for r in planned if r.mode is X} == wanted_x


def test_retry_acquire_gives_up_once_after_last_refusal_and_sleeps_between_attempts():
    from acid_core.errors import LockRefusedError
    from acid_core.locks import LockInfo, retry_acquire

    calls, sleeps, gave_up = [], [], []
    conflict = LockInfo(parse_lock_object("db.t"), X, holder="h")

    def attempt(number):
        calls.append(number)
        return None, [conflict]

    with pytest.raises(LockRefusedError) as info:
        retry_acquire(
            [LockRequest(parse_lock_object("db.t"), S)],
            attempt,
            retries=2,
            wait_seconds=1.0,
            give_up=lambda: gave_up.append(True),
            sleep=sleeps.append,
        )
    assert calls == [0, 1, 2]
    assert len(sleeps) == 2
    assert all(0.5 <= s <= 1.0 for s in sleeps)
    assert gave_up == [True]
    assert info.value.holders == ("db.t held in exclusive mode by 'h'",)


def test_retry_acquire_gives_up_when_an_attempt_raises():
    from acid_core.errors import LockServiceUnavailableError
    from acid_core.locks import retry_acquire

    gave_up = []

    def attempt(number):
        raise LockServiceUnavailableError("down")

    with pytest.raises(LockServiceUnavailableError, match="down"):
        retry_acquire(
            [LockRequest(parse_lock_object("db.t"), X)],
            attempt,
            retries=3,
            wait_seconds=0,
            give_up=lambda: gave_up.append(True),
        )
    assert gave_up == [True]
