"""The multi-process kill -9 soak on SQLite, on PostgreSQL, on S3 and on HDFS (see ``tests.reliability.soak``).

A writer, a compactor and a cleaner run as separate OS processes against one metastore; the test
SIGKILLs them at random and, at the end, checks that no committed row was lost, no aborted or
uncommitted row was ever visible, no lease broke, nothing outside the table was touched, and the
table converged to one base once compacted and cleaned with no lease.

Profiles: quick by default (part of ``make test``: a 30 s chaos phase or 40 writer operations);
``ACIDFLOW_SOAK=long`` (``make soak``): 10 minutes per backend. ``ACIDFLOW_SOAK_SEED=N`` replays a
seed (the seed is in every failure); ``ACIDFLOW_SOAK_SECONDS`` and ``ACIDFLOW_SOAK_OPS`` override
the profile.
"""

from __future__ import annotations

import os
import random

import pytest

from tests.reliability.soak import SoakConfig, run_soak

pytestmark = pytest.mark.slow

LONG = os.environ.get("ACIDFLOW_SOAK") == "long"
OPS = int(os.environ.get("ACIDFLOW_SOAK_OPS", "100000" if LONG else "40"))
CHAOS_SECONDS = float(os.environ.get("ACIDFLOW_SOAK_SECONDS", "600" if LONG else "30"))


def _seed() -> int:
    text = os.environ.get("ACIDFLOW_SOAK_SEED")
    return int(text) if text else random.randrange(2**31)


def _run(tmp_path, metastore_url, *, leases=True, warehouse=None, chaos_seconds=CHAOS_SECONDS):
    seed = _seed()
    print(f"soak seed {seed} (replay: ACIDFLOW_SOAK_SEED={seed})")
    config = SoakConfig(
        leases=leases,
        seed=seed,
        warehouse=warehouse or str(tmp_path / "wh"),
        metastore_url=metastore_url,
        run_dir=None if warehouse is None else str(tmp_path / "run"),
        ops=OPS,
        kill_interval=(1.0, 3.0),
        chaos_seconds=chaos_seconds,
    )
    report = run_soak(config)
    print(report.summary())  # the figures, for bench/RESULTS.md (pytest -s)
    assert not report.failures, f"soak failed; replay with ACIDFLOW_SOAK_SEED={seed}:\n{report.summary()}"
    assert report.rows_lost == 0
    assert sum(report.kills.values()) >= 1, report.summary()
    assert report.checks >= 3, report.summary()  # the writer made progress between the kills
    return report


@pytest.mark.timeout(CHAOS_SECONDS + 240)
def test_soak_sqlite_random_kill9_loses_no_committed_row(tmp_path):
    """Embedded SQLite metastore: every invariant holds through random SIGKILLs."""
    _run(tmp_path, None)


@pytest.mark.integration("postgres")
@pytest.mark.backend("postgres")
@pytest.mark.timeout(CHAOS_SECONDS + 240)
def test_soak_postgres_random_kill9_loses_no_committed_row(tmp_path, postgres_schema_url):
    """PostgreSQL metastore (and SQL locks in it): every invariant holds through random SIGKILLs."""
    _run(tmp_path, postgres_schema_url)


# Every step is several requests to the S3 server: the quick profile gives its writer longer.
S3_CHAOS_SECONDS = float(os.environ.get("ACIDFLOW_SOAK_SECONDS", "600" if LONG else "90"))


@pytest.mark.integration("s3")
@pytest.mark.timeout(S3_CHAOS_SECONDS + 360)
def test_soak_s3_random_kill9_loses_no_committed_row(tmp_path, s3_env):
    """S3 warehouse (moto's server; the metastore a local SQLite file): every invariant holds
    through random SIGKILLs, among them kills in the middle of an object-by-object move or delete."""
    (tmp_path / "run").mkdir()
    metastore = f"sqlite:///{tmp_path / 'metastore.sqlite'}"
    report = _run(tmp_path, metastore, warehouse=s3_env.warehouse, chaos_seconds=S3_CHAOS_SECONDS)
    assert report.backend == "sqlite, s3"
    assert not (tmp_path / "wh").exists()
    assert any("/base_" in key for key in s3_env.object_keys("warehouse/"))  # the converged table


@pytest.mark.integration("hdfs")
@pytest.mark.timeout(CHAOS_SECONDS + 300)
def test_soak_hdfs_random_kill9_loses_no_committed_row(tmp_path, hdfs_env):
    """The table on HDFS (a MiniDFSCluster), the SQLite metastore on the local disk: every invariant
    holds through random SIGKILLs, and the sentinels next to the table on HDFS are untouched."""
    report = _run(tmp_path, f"sqlite:///{tmp_path / 'metastore.sqlite'}", warehouse=hdfs_env.warehouse)
    assert report.backend == "sqlite, hdfs"
    assert [p for p in hdfs_env.paths("warehouse") if "/delta_" in p or "/base_" in p]
