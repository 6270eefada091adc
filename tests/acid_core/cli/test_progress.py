"""Progress lines of ``acidflow compact``: per compaction, per bucket, and "still ..." while a step is long."""

from __future__ import annotations

import io
import json
import re
import time

import pytest

from acid_core.cli.app import build_parser
from acid_core.cli.progress import ProgressReporter
from acid_core.compaction.worker import BucketTask
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows


def _task(bucket_id: int) -> BucketTask:
    return BucketTask(7, "/wh/t/p=a", "_tmp", bucket_id, ("base_0000003",), (), (), "", "", "struct<a:int>")


def test_progress_wrap_embedded_reports_each_bucket_and_ticks_while_slow():
    stream = io.StringIO()
    reporter = ProgressReporter(stream, interval=0.05)
    calls = []

    def runner(tasks, heartbeat):
        calls.append([t.bucket_id for t in tasks])
        heartbeat()
        if tasks[0].bucket_id == 1:
            time.sleep(0.3)  # a slow bucket: the "still merging" line must appear meanwhile
        return [f"result {tasks[0].bucket_id}"]

    beats = []
    results = reporter.wrap(runner, "embedded")([_task(0), _task(1)], lambda: beats.append(1))
    assert results == ["result 0", "result 1"]
    assert calls == [[0], [1]]  # the same tasks, in order, one at a time
    assert len(beats) == 2
    lines = stream.getvalue().splitlines()
    assert lines[0] == "compaction 7 (/wh/t/p=a): 2 buckets, embedded"
    assert re.fullmatch(r"compaction 7: bucket 1/2 merged \(\d+\.\d s\)", lines[1])
    assert re.fullmatch(r"compaction 7: bucket 2/2 merged \(\d+\.\d s\)", lines[-1])
    assert any(
        re.fullmatch(r"compaction 7: still merging bucket 2/2 \(elapsed \d+ s\)", x) for x in lines[2:-1]
    )


def test_progress_wrap_spark_ticks_until_the_job_ends_and_reraises():
    stream = io.StringIO()
    reporter = ProgressReporter(stream, interval=0.05)

    def spark(tasks, heartbeat):
        time.sleep(0.2)
        raise RuntimeError("spark-submit exited with 1")

    with pytest.raises(RuntimeError, match=r"^spark-submit exited with 1$"):
        reporter.wrap(spark, "on Spark")([_task(0)], lambda: None)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "compaction 7 (/wh/t/p=a): 1 bucket, on Spark"
    assert all(re.fullmatch(r"compaction 7: still running on Spark \(elapsed \d+ s\)", x) for x in lines[1:])
    assert len(lines) >= 2
    count = len(lines)
    time.sleep(0.15)
    assert len(stream.getvalue().splitlines()) == count  # the ticker stopped with the job


def test_cli_compact_progress_on_writes_stderr_and_keeps_json_stdout(tmp_path, capsys):
    location = str(tmp_path / "wh")
    wh = Warehouse.open(location, heartbeat_seconds=None)
    history = random_history(
        wh,
        5,
        partitioned=True,
        buckets=2,
        txns=6,
        properties={"compactorthreshold.hive.compactor.delta.num.threshold": "1"},
    )
    expected = read_rows(history)
    wh.close()
    parser = build_parser(["initiate", "compact", "clean"])
    args = parser.parse_args(["initiate", "--warehouse", location])
    assert args.handler(args) == 0
    capsys.readouterr()
    args = parser.parse_args(
        ["compact", "--executor", "embedded", "--json", "--progress", "on", "--warehouse", location]
    )
    assert args.handler(args) == 0
    captured = capsys.readouterr()
    outcomes = [json.loads(line) for line in captured.out.splitlines()]
    assert [o["status"] for o in outcomes] == ["compacted", "compacted"]
    for outcome in outcomes:
        header = f"compaction {outcome['compaction_id']} ("
        assert any(
            line.startswith(header) and line.endswith("embedded") for line in captured.err.splitlines()
        )
        assert f"compaction {outcome['compaction_id']}: bucket 1/" in captured.err
    with Warehouse.open(location, heartbeat_seconds=None) as wh:
        history.warehouse = wh
        assert read_rows(history) == expected


def test_cli_compact_progress_off_prints_nothing_on_stderr(tmp_path, capsys):
    location = str(tmp_path / "wh")
    with Warehouse.open(location, heartbeat_seconds=None) as wh:
        random_history(wh, 3, partitioned=False, buckets=1, txns=3)
    parser = build_parser(["initiate", "compact", "clean"])
    args = parser.parse_args(
        [
            "compact",
            "--table",
            "default.t",
            "--executor",
            "embedded",
            "--progress",
            "off",
            "--warehouse",
            location,
        ]
    )
    assert args.handler(args) == 0
    assert capsys.readouterr().err == ""
