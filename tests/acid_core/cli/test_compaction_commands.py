"""acidflow initiate / compact / clean, run in-process through their argparse parsers."""

from __future__ import annotations

import json
import os

import pytest

from acid_core.cli.app import build_parser, main
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows


def run(argv):
    parser = build_parser(["initiate", "compact", "clean"])
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture
def warehouse(tmp_path):
    location = str(tmp_path / "wh")
    wh = Warehouse.open(location, heartbeat_seconds=None)
    history = random_history(
        wh,
        31,
        partitioned=True,
        buckets=2,
        txns=10,
        properties={"compactorthreshold.hive.compactor.delta.num.threshold": "2"},
    )
    expected = read_rows(history)
    wh.close()
    return location, history, expected


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_cli_initiate_compact_clean_end_to_end(warehouse, capsys):
    location, history, expected = warehouse
    assert run(["initiate", "--dry-run", "--json", "--warehouse", location]) == 0
    backlog = json_lines(capsys.readouterr().out)
    assert [(d["table"], d["partition"]) for d in backlog] == [("default.t", "p=a"), ("default.t", "p=b")]
    assert all(d["compaction_id"] is None for d in backlog)
    assert all(d["compaction_type"] in ("minor", "major") for d in backlog)
    assert all("delta_count" in d["numbers"] for d in backlog)

    assert run(["initiate", "--json", "--warehouse", location]) == 0
    queued = json_lines(capsys.readouterr().out)
    assert [d["compaction_id"] for d in queued] == [1, 2]

    assert run(["compact", "--executor", "embedded", "--json", "--warehouse", location]) == 0
    outcomes = json_lines(capsys.readouterr().out)
    assert [o["status"] for o in outcomes] == ["compacted", "compacted"]
    assert {o["executor"] for o in outcomes} == {"embedded"}

    assert run(["clean", "--dry-run", "--warehouse", location]) == 0
    out = capsys.readouterr().out
    assert "dry_run: would delete" in out
    assert run(["clean", "--json", "--warehouse", location]) == 0
    results = json_lines(capsys.readouterr().out)
    assert {r["status"] for r in results} == {"cleaned"}
    assert all(a["action"] == "deleted" for r in results for a in r["actions"])
    with Warehouse.open(location, heartbeat_seconds=None) as wh:
        history.warehouse = wh
        assert read_rows(history) == expected


def test_cli_compact_table_and_quarantine_restore(warehouse, capsys):
    location, history, expected = warehouse
    args = ["--warehouse", location]
    assert (
        run(
            [
                "compact",
                "--table",
                "t",
                "--partition",
                "p=a",
                "--type",
                "major",
                "--executor",
                "embedded",
                *args,
            ]
        )
        == 0
    )
    assert "compacted: major compaction wrote base_" in capsys.readouterr().out
    assert run(["clean", "--quarantine", *args]) == 0
    assert "quarantined" in capsys.readouterr().out
    trash = os.path.join(location, "t", "_acidflow_trash", "c1", "p=a")
    moved = sorted(os.listdir(trash))
    assert moved
    assert run(["clean", "--restore", "t", "--compaction", "1", *args]) == 0
    restored = capsys.readouterr().out.splitlines()
    assert sorted(os.path.basename(line.split()[-1]) for line in restored) == moved
    assert run(["clean", "--purge-trash", "t", *args]) == 0
    assert capsys.readouterr().out == ""  # restored: nothing left in the trash
    # Issue 24: restoring again, or a compaction that has nothing in the trash, fails in one line.
    for compaction in ("1", "999999"):
        assert main(["clean", "--restore", "t", "--compaction", compaction, *args]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith(
            f"acidflow: error: Nothing to restore for compaction {compaction} of the table at "
        )
        assert err.count("\n") == 1
    with Warehouse.open(location, heartbeat_seconds=None) as wh:
        history.warehouse = wh
        assert read_rows(history) == expected


def test_cli_clean_reports_why_a_ready_compaction_waits_then_cleans_it(warehouse, capsys):
    """A compaction held back by an older open transaction is reported 'waiting' with its reason.

    Hive's findReadyToClean leaves such an entry out silently; `acidflow clean` used to print
    nothing. Exit 0 (waiting is not a failure); nothing is deleted until the transaction ends.
    """
    location, history, expected = warehouse
    args = ["--warehouse", location]
    with Warehouse.open(location, heartbeat_seconds=None) as wh:
        reader_txn = wh.metastore.open_txn(user="reader")
    assert (
        run(
            [
                "compact",
                "--table",
                "t",
                "--partition",
                "p=a",
                "--type",
                "major",
                "--executor",
                "embedded",
                *args,
            ]
        )
        == 0
    )
    capsys.readouterr()
    partition_dir = os.path.join(location, "t", "p=a")
    before = sorted(os.listdir(partition_dir))

    assert run(["clean", *args]) == 0
    out = capsys.readouterr().out
    assert out.startswith("compaction 1: waiting: default.t partition p=a: transaction ")
    assert f"transaction {reader_txn} is still open" in out
    assert sorted(os.listdir(partition_dir)) == before
    assert run(["clean", "--json", *args]) == 0
    [entry] = json_lines(capsys.readouterr().out)
    assert (entry["compaction_id"], entry["status"], entry["actions"]) == (1, "waiting", [])

    with Warehouse.open(location, heartbeat_seconds=None) as wh:
        wh.metastore.abort_txn(reader_txn)
    assert run(["clean", "--retention", "3600", *args]) == 0
    out = capsys.readouterr().out
    assert out.startswith("compaction 1: waiting: default.t partition p=a: its retention runs until ")
    assert sorted(os.listdir(partition_dir)) == before

    assert run(["clean", "--json", *args]) == 0
    assert [r["status"] for r in json_lines(capsys.readouterr().out)] == ["cleaned"]
    assert sorted(os.listdir(partition_dir)) != before
    with Warehouse.open(location, heartbeat_seconds=None) as wh:
        history.warehouse = wh
        assert read_rows(history) == expected


def test_cli_compact_refused_by_a_taken_maintenance_lock_exits_1_then_0_once_free(
    warehouse, capsys, monkeypatch
):
    """The work asked for was not done and is worth retrying: exit 1, the holder named (as ``clean``
    exits 1 for a cleaning it will retry). Was: exit 0 (the long ZooKeeper soak's final check
    printed "exit 0: compaction 81: refused: the maintenance lock of default.t is taken")."""
    from acid_core.locks import LockMode, LockRequest, open_lock_manager, parse_lock_object

    location, _, _ = warehouse
    monkeypatch.setenv("ACIDFLOW_LOCK_MANAGER", "sql")
    monkeypatch.delenv("ACIDFLOW_ZOOKEEPER", raising=False)
    argv = ["compact", "--table", "default.t", "--partition", "p=a", "--type", "major"]
    argv += ["--executor", "embedded", "--warehouse", location]
    locks = open_lock_manager(warehouse=location)
    try:
        handle = locks.acquire(
            [LockRequest(parse_lock_object("default.t/p=a#maintenance"), LockMode.EXCLUSIVE)],
            holder="compaction 99",
        )
        code = run(argv)
        locks.release(handle)
    finally:
        locks.close()
    out = capsys.readouterr().out
    assert code == 1, out
    assert out.startswith(
        "compaction 1: refused: the maintenance lock of default.t/p=a is taken: Could not lock "
    ), out
    assert "held in exclusive mode by 'compaction 99'" in out
    assert run(argv) == 0
    assert capsys.readouterr().out.startswith("compaction 2: compacted: ")
