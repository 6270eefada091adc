"""``acidflow lease`` argument handling and output, on the embedded SQLite metastore of a warehouse."""

from __future__ import annotations

import json

import pytest

from acid_core.cli.app import build_parser
from acid_core.cli.lease import run_lease
from acid_core.errors import NoSuchLeaseError, NoSuchTableError
from acid_core.metastore import Column, TableDefinition, open_metastore
from acid_core.writeids import LONG_MAX


def _run(argv: list[str]) -> int:
    parser = build_parser(["lease"])
    args = parser.parse_args(argv)
    assert args.handler is run_lease
    return run_lease(args)


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", str(tmp_path / "wh"))
    with open_metastore(None, str(tmp_path / "wh")) as store:
        store.create_table(TableDefinition("t", (Column("a", "int"),), properties={"transactional": "true"}))
        committed = store.open_txn()
        store.allocate_write_id(committed, "t")
        store.commit_txn(committed)
        store.allocate_write_id(store.open_txn(), "t")  # write ID 2 stays open
    return tmp_path / "wh"


def test_take_json_prints_lease_id_and_snapshot(warehouse, capsys):
    assert _run(["lease", "take", "t", "--ttl", "60", "--json"]) == 0
    # Write ID 1 committed, 2 open: hwm 2, minOpen 2, open [2].
    # Txn 1 committed, txn 2 open: the ValidTxnList of the same moment is hwm 2, minOpen 2, open [2].
    assert json.loads(capsys.readouterr().out) == {
        "lease_id": 1,
        "write_ids": "default.t:2:2:2:",
        "txns": "2:2:2:",
    }


def test_take_release_list_round_trip(warehouse, capsys):
    _run(["lease", "take", "default.t", "--owner", "etl", "--warehouse", str(warehouse)])
    assert (
        capsys.readouterr().out == "lease 1 on default.t: write IDs default.t:2:2:2: txns 2:2:2: (3600 s)\n"
    )
    assert _run(["lease", "list", "--json"]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["lease_id"], row["table"], row["owner"], row["write_ids"], row["txns"]) == (
        1,
        "default.t",
        "etl",
        "default.t:2:2:2:",
        "2:2:2:",
    )
    assert _run(["lease", "release", "1"]) == 0
    assert capsys.readouterr().out == "released lease 1\n"
    assert _run(["lease", "list"]) == 0
    assert capsys.readouterr().out == ""


def test_metastore_url_option_wins_over_the_warehouse_default(tmp_path, warehouse, capsys):
    url = f"sqlite:///{tmp_path}/other.sqlite"
    with open_metastore(url, str(warehouse)) as store:
        store.create_table(
            TableDefinition("fresh", (Column("a", "int"),), properties={"transactional": "true"})
        )
    assert _run(["lease", "take", "fresh", "--json", "--metastore", url]) == 0
    assert json.loads(capsys.readouterr().out)["write_ids"] == f"default.fresh:0:{LONG_MAX}::"


def test_errors_are_acid_errors(warehouse):
    with pytest.raises(NoSuchLeaseError):
        _run(["lease", "release", "9"])
    with pytest.raises(NoSuchTableError):
        _run(["lease", "take", "missing"])


@pytest.mark.parametrize(
    "argv", [["lease", "take", "t", "--ttl", "0"], ["lease", "release", "x"]], ids=["ttl", "id"]
)
def test_bad_arguments_exit_2(warehouse, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _run(argv)
    assert exit_info.value.code == 2
    assert "expected a positive" in capsys.readouterr().err


def test_renew_moves_the_expiry_and_keeps_the_snapshot(warehouse, capsys):
    with open_metastore(None, str(warehouse)) as store:
        taken = store.take_lease("t", 60)
    capsys.readouterr()
    assert _run(["lease", "renew", str(taken.lease_id), "--ttl", "7200", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["lease_id"] == taken.lease_id
    with open_metastore(None, str(warehouse)) as store:
        renewed = store.get_lease(taken.lease_id)
    assert (renewed.write_ids, renewed.txns, renewed.created) == (taken.write_ids, taken.txns, taken.created)
    assert renewed.expires >= taken.created + 7200


def test_renew_unknown_lease_raises_no_such_lease(warehouse):
    with pytest.raises(NoSuchLeaseError, match=r"No such reader lease 42"):
        _run(["lease", "renew", "42"])


def test_renew_rejects_a_non_positive_ttl(warehouse, capsys):
    with pytest.raises(SystemExit):
        _run(["lease", "renew", "1", "--ttl", "0"])
    assert "invalid TTL '0': expected a positive number of seconds" in capsys.readouterr().err


def test_renew_of_an_expired_lease_raises_no_such_lease(warehouse):
    with open_metastore(None, str(warehouse)) as store:
        taken = store.take_lease("t", 60, now=1_000.0)
        with pytest.raises(NoSuchLeaseError, match=rf"No such reader lease {taken.lease_id}"):
            store.renew_lease(taken.lease_id, 60, now=1_060.0)
        assert store.get_lease(taken.lease_id).expires == 1_060.0  # not revived


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "none",
            "Cannot take a reader lease on the Hive Metastore 'thrift://127.0.0.1:1': reader leases need ",
        ),
        ("thrift://h:9083", "Invalid ACIDFLOW_LEASE_STORE 'thrift://h:9083': expected a SQLAlchemy URL"),
    ],
    ids=["side-store-off", "side-store-is-an-hms"],
)
def test_take_on_an_hms_without_a_usable_side_store_is_one_line_and_exit_1(
    monkeypatch, capsys, tmp_path, setting, message
):
    from acid_core.cli import main

    monkeypatch.setenv("ACIDFLOW_LEASE_STORE", setting)
    argv = ["lease", "take", "db.t", "--metastore", "thrift://127.0.0.1:1", "--warehouse", str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message in err
    assert list(tmp_path.iterdir()) == []  # nothing created
