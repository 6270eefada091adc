"""The compaction and merge-on-read benchmarks still run (CI-sized ``--smoke``, nothing timed).

Each smoke run builds tiny tables in a temporary directory, runs every variant (each measured
child in its own process, as the full run does) and reports every goal it owns as SMOKE.
"""

from __future__ import annotations

from bench import bench_compaction, bench_read, goals


def _reported_since(start: int) -> dict[str, goals.Goal]:
    return {g.goal: g for g in goals.REPORTED[start:]}


def test_bench_compaction_smoke_reports_goals_1_3_and_23e(capsys):
    start = len(goals.REPORTED)
    assert bench_compaction.main(["--smoke"]) == 0
    reported = _reported_since(start)
    # 1c/1d and 23e's Hive ratio (Hive's CompactorMR) are left out of the smoke run.
    assert set(reported) == {"1a", "1b", "23e", "3a", "3b"}
    assert all(g.verdict == "SMOKE" and g.ratio > 0 for g in reported.values())
    out = capsys.readouterr().out
    assert "GOAL 1a major compaction" in out
    assert (
        "GOAL 23e embedded major compaction through the CLI / bare pyarrow read+write (process wall)" in out
    )
    # Both sides wrote the same rows: 20,000 inserted, 10% deleted.
    assert "18,000 rows in each output" in out


def test_bench_compaction_cli_only_smoke_reports_only_23e(capsys):
    start = len(goals.REPORTED)
    assert bench_compaction.main(["--smoke", "--cli-only"]) == 0
    assert [g.goal for g in goals.REPORTED[start:]] == ["23e"]
    out = capsys.readouterr().out
    assert "acidflow compact on the empty queue afterwards" in out
    assert "GOAL 1a" not in out


def test_bench_read_smoke_reports_goals_2_and_3(capsys):
    start = len(goals.REPORTED)
    assert bench_read.main(["--smoke"]) == 0
    reported = _reported_since(start)
    assert set(reported) == {
        "2",
        "3c-rows",
        "3c-deletes",
        "3c-sort-merged-rows",
        "3c-sort-merged-deletes",
        "3d-rows",
        "3d-deletes",
    }
    assert all(g.verdict == "SMOKE" and g.ratio > 0 for g in reported.values())
    assert "acidflow-read" in capsys.readouterr().out
