"""The backlog history on the Metastore port: record, list, prune (memory, SQLite file, PostgreSQL).

Values are written here by hand; the expectations follow the port's docstrings: samples come back
by table, partition and time, ``since`` is inclusive, pruning drops strictly older samples and
commits with the new ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from acid_core.errors import InvalidTableNameError
from acid_core.metastore import BacklogSample
from tests.acid_core.metastore.test_metastore_behaviors import _METASTORE_FACTORIES, _PARAMS, FakeClock

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from acid_core.metastore import SqlMetastore


@pytest.fixture(params=_PARAMS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlMetastore]:
    metastore = _METASTORE_FACTORIES[request.param](request, tmp_path, FakeClock())
    yield metastore
    metastore.close()


def _sample(table: str, partition: str | None, at: float, deltas: int, **kwargs) -> BacklogSample:
    return BacklogSample(
        table, partition, at, deltas, kwargs.pop("delete_deltas", 0), deltas * 100, 0, **kwargs
    )


def test_backlog_samples_round_trip_sorted_by_table_partition_time(store):
    samples = [
        _sample("sales.orders", "ds=2", 2000.0, 4, oldest_delta_time=1500.25),
        _sample("default.t", None, 3000.0, 7, delete_deltas=2, aborted=1),
        _sample("sales.orders", "ds=1", 2000.0, 3),
        _sample("sales.orders", "ds=1", 1000.0, 1),
    ]
    store.record_backlog_samples(samples)
    assert store.list_backlog_samples(0.0) == [samples[1], samples[3], samples[2], samples[0]]


def test_list_backlog_samples_since_is_inclusive_and_filters_by_table(store):
    store.record_backlog_samples(
        [_sample("db.a", None, 1000.0, 1), _sample("db.a", None, 2000.0, 2), _sample("db.b", None, 2000.0, 5)]
    )
    assert [s.deltas for s in store.list_backlog_samples(2000.0)] == [2, 5]
    assert [s.deltas for s in store.list_backlog_samples(0.0, "DB.A")] == [1, 2]
    assert store.list_backlog_samples(2000.001) == []


def test_record_backlog_samples_prunes_strictly_older_samples(store):
    store.record_backlog_samples([_sample("db.a", None, 1000.0, 1), _sample("db.a", None, 2000.0, 2)])
    store.record_backlog_samples([_sample("db.a", None, 3000.0, 3)], prune_before=2000.0)
    assert [(s.sampled_at, s.deltas) for s in store.list_backlog_samples(0.0)] == [(2000.0, 2), (3000.0, 3)]


def test_record_backlog_samples_bad_table_name_raises_and_records_nothing(store):
    with pytest.raises(InvalidTableNameError):
        store.record_backlog_samples([_sample("db.a", None, 1000.0, 1), _sample("a.b.c", None, 1000.0, 1)])
    assert store.list_backlog_samples(0.0) == []
