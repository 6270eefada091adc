"""``acidflow read`` snapshots: the metastore's by default, a lease's with ``--lease`` (issue 11, part 5).

Tables are written through the real write path into a warehouse with its embedded SQLite
metastore, then read through ``acid_core.cli.main`` exactly as a user runs it.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa
import pytest

from acid_core.cli import app as cli
from acid_core.compaction.cleaner import run_cleaner
from acid_core.compaction.worker import run_worker
from acid_core.metastore import Column, CompactionType, TableDefinition, TxnState
from acid_core.writes.streaming import StreamingConnection
from acid_core.writes.transaction import Warehouse


@pytest.fixture
def wh(tmp_path, monkeypatch):
    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.delenv("ACIDFLOW_WAREHOUSE", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./warehouse: the metastore is found from TABLE_DIR
    warehouse = Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None)
    warehouse.metastore.create_table(
        TableDefinition(
            "events", (Column("id", "int"), Column("v", "string")), properties={"transactional": "true"}
        )
    )
    yield warehouse
    warehouse.close()


def _rows(ids):
    return pa.table({"id": pa.array(ids, pa.int32()), "v": [f"v{i}" for i in ids]})


def _insert(wh, ids):
    with wh.transaction(heartbeat_seconds=None) as txn:
        txn.insert("events", _rows(ids))


def _read(argv, capsys):
    code = cli.main(["read", *argv])
    out, err = capsys.readouterr()
    return code, sorted(json.loads(line)["id"] for line in out.splitlines()), err


def _location(wh):
    return wh.metastore.get_table("events").location


def test_read_defaults_to_the_metastore_snapshot_hiding_an_aborted_streaming_txn(wh, capsys):
    with StreamingConnection(wh, "events", txns_per_batch=3) as conn:
        conn.begin_transaction()
        conn.write(_rows([1, 2]))
        conn.commit_transaction()
        conn.begin_transaction()
        conn.write(_rows([3]))
        conn.abort_transaction()
        conn.begin_transaction()
        conn.write(_rows([4]))
        conn.commit_transaction()

    assert _read([_location(wh)], capsys) == (0, [1, 2, 4], "")
    # Explicit lists still mean what they say: one with nothing invalid sees the aborted write too.
    explicit = ["--write-ids", "default.events:4:9223372036854775807::"]
    assert _read([_location(wh), *explicit], capsys)[1] == [1, 2, 3, 4]


def test_read_default_hides_an_open_transaction_and_ends_its_own(wh, capsys):
    _insert(wh, [1])
    writer = wh.transaction(heartbeat_seconds=None).begin()
    writer.insert("events", _rows([2]))
    assert _read([_location(wh)], capsys)[:2] == (0, [1])
    open_txns = [t for t in wh.metastore.show_transactions() if t.state is TxnState.OPEN]
    assert len(open_txns) == 1, "the read's read-only transaction ended; the writer's is open"
    writer.commit()
    assert _read([_location(wh)], capsys)[:2] == (0, [1, 2])


def test_read_lease_reads_exactly_its_snapshot_after_compaction_and_cleaning(wh, capsys):
    _insert(wh, [1])
    _insert(wh, [2])
    lease = wh.metastore.take_lease("events", ttl_seconds=3600)
    _insert(wh, [3])
    wh.metastore.enqueue_compaction("events", None, CompactionType.MAJOR)
    run_worker(wh.metastore)
    run_cleaner(wh.metastore)
    _insert(wh, [4])

    assert _read([_location(wh), "--lease", str(lease.lease_id)], capsys) == (0, [1, 2], "")
    assert _read([_location(wh)], capsys)[1] == [1, 2, 3, 4]


def test_read_lease_of_another_table_or_released_is_one_line_error(wh, capsys):
    wh.metastore.create_table(
        TableDefinition("other", (Column("id", "int"),), properties={"transactional": "true"})
    )
    other = wh.metastore.take_lease("other", ttl_seconds=60)
    code, rows, err = _read([_location(wh), "--lease", str(other.lease_id)], capsys)
    assert (code, rows) == (1, [])
    assert err == (
        f"acidflow: error: Invalid lease {other.lease_id}: expected a lease on 'default.events' "
        f"(lease {other.lease_id} is on 'default.other')\n"
    )
    wh.metastore.release_lease(other.lease_id)
    code, _, err = _read([_location(wh), "--lease", str(other.lease_id)], capsys)
    assert code == 1
    assert err.startswith(f"acidflow: error: No such reader lease {other.lease_id}")


def test_read_lease_with_explicit_lists_is_a_usage_error(wh, capsys):
    code, _, err = _read([_location(wh), "--lease", "1", "--txns", "5:9223372036854775807::"], capsys)
    assert code == 2
    assert err == "acidflow read: error: --lease cannot be combined with --write-ids or --txns\n"


def test_read_directory_no_table_owns_is_one_line_error(wh, tmp_path, capsys):
    stray = tmp_path / "wh" / "stray"
    stray.mkdir()
    code, _, err = _read([str(stray)], capsys)
    assert code == 1
    assert err.startswith(f"acidflow: error: No table or partition of the metastore 'sqlite:///{tmp_path}")
    assert f"is at {str(stray)!r}" in err
    assert err.count("\n") == 1


def test_read_partition_directory_uses_the_table_snapshot(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.chdir(tmp_path)
    with Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None) as wh:
        wh.metastore.create_table(
            TableDefinition(
                "p",
                (Column("id", "int"),),
                partition_keys=(Column("d", "string"),),
                properties={"transactional": "true"},
            )
        )
        for ids, outcome in (([1], "commit"), ([2], "abort")):
            txn = wh.transaction(heartbeat_seconds=None).begin()
            txn.insert("p", pa.table({"id": pa.array(ids, pa.int32()), "d": ["x"]}))
            txn.commit() if outcome == "commit" else txn.abort()
        [partition] = wh.metastore.list_partitions("p")
    assert _read([partition.location], capsys) == (0, [1], "")


def test_read_explicit_metastore_url_and_warehouse_options(wh, tmp_path, capsys, monkeypatch):
    _insert(wh, [1])
    txn = wh.transaction(heartbeat_seconds=None).begin()
    txn.insert("events", _rows([2]))
    txn.abort()
    url = f"sqlite:///{tmp_path / 'wh' / '.acidflow' / 'metastore.sqlite'}"
    assert _read([_location(wh), "--metastore", url], capsys)[1] == [1]
    monkeypatch.setenv("ACIDFLOW_METASTORE", url)
    assert _read([_location(wh)], capsys)[1] == [1]


def test_read_without_any_metastore_reads_all_committed_with_a_note(tmp_path, monkeypatch, capsys):
    from tests.acid_core.orc.acid_files import inserts, write_events

    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.delenv("ACIDFLOW_WAREHOUSE", raising=False)
    monkeypatch.chdir(tmp_path)
    bare = tmp_path / "bare"
    write_events(bare / "delta_0000001_0000001_0000/bucket_00000", inserts(1, 0, [(10, "z")]))
    assert cli.main(["read", str(bare), "--columns", "k"]) == 0
    assert capsys.readouterr() == ('{"k": 10}\n', "")  # scripts: clean stderr
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a person at a terminal gets a hint
    assert cli.main(["read", str(bare), "--columns", "k"]) == 0
    out, err = capsys.readouterr()
    assert out == '{"k": 10}\n'
    assert err == (
        f"acidflow read: note: no metastore covers {bare}; read every write as committed "
        "(pass --metastore, or --write-ids/--txns)\n"
    )


def test_read_and_state_by_name_use_the_embedded_metastore(wh, tmp_path, capsys, monkeypatch):
    """Issue 24: ``--warehouse wh default.t`` read the name as a path (``/cwd/default.t does not exist``)."""
    _insert(wh, [1, 2])
    txn = wh.transaction(heartbeat_seconds=None).begin()
    txn.insert("events", _rows([3]))
    txn.abort()
    assert _read(["--warehouse", "wh", "default.events"], capsys) == (0, [1, 2], "")
    assert _read(["events", "--warehouse", str(tmp_path / "wh")], capsys) == (0, [1, 2], "")
    assert cli.main(["state", "--warehouse", "wh", "default.events", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    state = json.loads(out)
    assert state["deltas"] == ["delta_0000001_0000001_0000"]
    assert state["aborted"] == ["delta_0000002_0000002_0000"]  # the metastore's snapshot, not all committed
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", "wh")  # the environment's warehouse too
    assert _read(["default.events"], capsys) == (0, [1, 2], "")


def test_read_and_state_by_name_unknown_table_is_one_line_error(wh, capsys):
    for command in ("read", "state"):
        assert cli.main([command, "--warehouse", "wh", "default.nope"]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (
            "acidflow: error: No such table 'default.nope'; expected an existing table; hint: SHOW TABLES "
            "lists them, CREATE TABLE makes one\n"
        )


def test_read_and_state_existing_path_wins_over_a_name(wh, tmp_path, capsys):
    _insert(wh, [1])
    (tmp_path / "default.events").mkdir()  # a directory of that name in the working directory
    assert cli.main(["state", "--warehouse", "wh", "default.events", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deltas"] == []
