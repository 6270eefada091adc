"""``bench/bench_startup.py --smoke`` still runs and reports its goals (no time is asserted)."""

from __future__ import annotations

from bench import bench_startup, goals


def test_bench_startup_smoke_reports_each_command(capsys):
    before = len(goals.REPORTED)
    assert bench_startup.main(["--smoke"]) == 0
    reported = goals.REPORTED[before:]
    assert [g.verdict for g in reported] == ["SMOKE"] * 5
    assert [g.what.split(" vs ")[0] for g in reported] == [
        "start-up CPU of acidflow compact",
        "start-up CPU of acidflow state",
        "start-up CPU of acidflow read",
        "start-up CPU of acidflow --help",
        "CPU of a real acidflow compact on an empty queue",
    ]
    assert "GOAL 3c" in capsys.readouterr().out
