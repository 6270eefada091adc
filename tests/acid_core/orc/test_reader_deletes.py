"""The delete registries: membership against a plain set, and the two implementations agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.errors import InvalidEventError
from acid_core.orc.deletes import (
    LONG_MAX,
    ColumnizedDeleteRegistry,
    SortMergedDeleteRegistry,
    hide_all,
    lex_search,
    normalize_bucket,
)

V1 = 1 << 29


def _arrays(keys):
    o, b, r = (np.array([k[i] for k in keys], dtype=np.int64) for i in range(3))
    return o, b, r


def test_normalize_bucket_reencodes_v0_as_v1():
    assert normalize_bucket(np.array([0, 3, V1 | (3 << 16) | 1], dtype=np.int32)).tolist() == [
        V1,
        V1 | (3 << 16),
        V1 | (3 << 16) | 1,
    ]


def test_lex_search_left_and_right():
    o, b, r = _arrays([(1, 5, 0), (1, 5, 2), (1, 6, 0), (2, 5, 1)])
    assert lex_search(o, b, r, (1, 5, 2), right=False) == 1
    assert lex_search(o, b, r, (1, 5, 2), right=True) == 2
    assert lex_search(o, b, r, (1, 7, 0), right=False) == 3
    assert lex_search(o, b, r, (3, 0, 0), right=False) == 4


def test_columnized_legacy_update_hides_only_older_versions():
    o, b, r = _arrays([(1, V1, 0)])
    registry = ColumnizedDeleteRegistry([(o, b, r, np.array([5], dtype=np.int64))])
    rows = _arrays([(1, V1, 0), (1, V1, 0), (1, V1, 1)])
    hidden = registry.hidden(*rows, np.array([1, 5, 1], dtype=np.int64))
    assert hidden.tolist() == [True, False, False]


keys = st.tuples(st.integers(0, 40), st.sampled_from([V1, V1 | 1, V1 | (1 << 16)]), st.integers(0, 2**40))


@given(
    deleted=st.sets(keys, max_size=60),
    probes=st.lists(keys, max_size=60),
    wide=st.booleans(),
    capacity_delta=st.integers(-3, 80),
    broadcast=st.booleans(),
)
def test_registries_agree_with_a_set(deleted, probes, wide, capacity_delta, broadcast):
    # ``wide`` spreads row IDs over 2**62 so the lexsort fallback runs, not the combined key.
    if wide:
        deleted = {(o, b, r * 2**21) for o, b, r in deleted}
        probes = [(o, b, r * 2**21) for o, b, r in probes]
    probes = probes + sorted(deleted)[:5]
    expected = [key in deleted for key in probes]
    ordered = sorted(deleted)
    hide = hide_all(len(ordered)) if broadcast else np.full(len(ordered), LONG_MAX, dtype=np.int64)
    # Two chunks, so capacity overflow can happen between them.
    half = len(ordered) // 2
    arrays = _arrays(ordered) if ordered else None
    chunks = (
        [tuple(a[:half] for a in (*arrays, hide)), tuple(a[half:] for a in (*arrays, hide))] if arrays else []
    )
    capacity = max(0, len(ordered) + capacity_delta)
    current = np.zeros(len(probes), dtype=np.int64)
    rows = _arrays(probes) if probes else tuple(np.empty(0, dtype=np.int64) for _ in range(3))
    for registry in (
        ColumnizedDeleteRegistry(chunks),
        ColumnizedDeleteRegistry(iter(chunks), capacity=capacity),
        SortMergedDeleteRegistry(lambda: [("deletes", iter(list(chunks)))]),
    ):
        hidden = registry.hidden(*rows, current)
        got = [False] * len(probes) if hidden is None else hidden.tolist()
        assert got == expected


def test_sort_merged_registry_rejects_unsorted_delete_file():
    o, b, r = _arrays([(5, V1, 0), (1, V1, 0)])
    registry = SortMergedDeleteRegistry(lambda: [("dd/bucket_00000", iter([(o, b, r, hide_all(2))]))])
    rows = _arrays([(1, V1, 0)])
    with pytest.raises(InvalidEventError, match=r"'dd/bucket_00000': delete events are not sorted"):
        registry.hidden(*rows, np.zeros(1, dtype=np.int64))


@pytest.mark.parametrize("at", [1, 65535, 65536, 65537, 131072, 199_999])
def test_sortedness_check_finds_a_duplicate_at_any_block_boundary(at):
    from acid_core.orc.deletes import _strictly_increasing

    n = 200_000
    o = np.repeat(np.arange(4, dtype=np.int64), n // 4)
    b = np.full(n, V1, dtype=np.int64)
    r = np.tile(np.arange(n // 4, dtype=np.int64), 4)
    assert _strictly_increasing(o, b, r)
    o[at], r[at] = o[at - 1], r[at - 1]  # a duplicate key across the pair (at - 1, at)
    assert not _strictly_increasing(o, b, r)
