"""``bench/profile_rebalance_cpu.py``'s pure parts: the job window from an event log, /proc parsing.

The tool itself needs the Spark cluster and a 4M-row table (minutes); its figures are in
``bench/RESULTS.md``. These check that it attributes CPU to the right window and process kind.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from bench import profile_rebalance_cpu as tool


def _events(*events: dict[str, object]) -> str:
    return "".join(json.dumps(event) + "\n" for event in events)


def test_the_window_is_the_compaction_job_not_the_warm_up(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "events_1_app").write_text(
        _events(
            {
                "Event": "SparkListenerJobStart",
                "Job ID": 0,
                "Submission Time": 1_000,
                "Properties": {"spark.job.description": "acidflow: warm the executors' Python workers"},
            },
            {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 4_000},
            {
                "Event": "SparkListenerJobStart",
                "Job ID": 1,
                "Submission Time": 5_250,
                "Properties": {"spark.job.description": "acidflow compaction 7"},
            },
            {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 6_750},
        )
    )
    assert tool._job_window(tmp_path) == (5.25, 6.75)


def test_an_event_log_without_a_compaction_job_is_refused(tmp_path):
    (tmp_path / "events_1_app").write_text(
        _events({"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 1, "Properties": {}})
    )
    with pytest.raises(SystemExit, match="no compaction job"):
        tool._job_window(tmp_path)


def test_ticks_reads_a_name_with_spaces_and_parentheses():
    # comm may hold spaces and ')' (JVM threads: "C2 CompilerThre"); fields count from the last ')'.
    fields = ["S", *["0"] * 10, "123", "45", *["0"] * 30]
    assert tool._ticks(f"42 (C2 (x) Thre) {' '.join(fields)}") == ("C2 (x) Thre", 168)


def test_the_sampler_sees_cpu_used_between_two_times(tmp_path, monkeypatch):
    # This test's own interpreter, classified as a Spark driver, burns CPU inside the window.
    monkeypatch.setattr(tool, "_kind", lambda pid: "driver Python" if pid == os.getpid() else None)
    with tool.Sampler(0.01) as sampler:
        time.sleep(0.05)
        start = time.time()
        deadline = time.process_time() + 0.3
        while time.process_time() < deadline:
            pass
        end = time.time()
        time.sleep(0.05)
    used = sampler.cpu_between(start, end)
    assert 0.2 <= used[("driver Python", os.getpid())] <= 1.0
    assert all(kind == "driver Python" for kind, _ in used)
