"""``clean --purge-trash`` / ``--restore`` follow no ledger row outside what the table owns (issue 11).

The trash is made by the real cleaner (quarantine); then its JSON ledger is edited as an attacker
would: rows pointing at a sentinel ``/etc``-like tree, at another table, escaping with ``..``,
through symbolic links. Each forged row is reported (named) and skipped; the sentinel, the other
table and the table's rows stay unchanged; legitimate rows are still purged or restored.
"""

from __future__ import annotations

import json
import os

import pytest

from acid_core.cli.app import build_parser
from acid_core.compaction.cleaner import (
    LEDGER_DIR,
    TRASH_DIR,
    CleanerOptions,
    purge_trash,
    read_ledger,
    restore_from_trash,
    run_cleaner,
)
from acid_core.compaction.worker import run_worker
from acid_core.errors import StorageError
from acid_core.metastore import CompactionType
from acid_core.writes.transaction import Warehouse
from tests.acid_core.compaction.histories import random_history, read_rows


def tree(root):
    found = {}
    for parent, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(os.path.join(parent, name), root) + "/"] = None
        for name in files:
            path = os.path.join(parent, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def run_cli(argv):
    parser = build_parser(["initiate", "compact", "clean"])
    args = parser.parse_args(argv)
    return args.handler(args)


class Trash:
    """A table ``t`` whose compaction's inputs sit quarantined in its trash, another table, a sentinel."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.warehouse = str(tmp_path / "wh")
        self.sentinel = tmp_path / "sentinel"
        (self.sentinel / "etc" / "delta_0000001_0000001_0000").mkdir(parents=True)
        (self.sentinel / "etc" / "passwd").write_text("root:x:0:0\n")
        with Warehouse.open(self.warehouse, heartbeat_seconds=None) as wh:
            history = random_history(wh, 41, partitioned=False, buckets=1, txns=6)
            random_history(wh, 42, table="default.other", partitioned=False, buckets=1, txns=3)
            self.history = history
            self.expected = read_rows(history)
            self.location = wh.metastore.get_table("default.t").location
            self.other = wh.metastore.get_table("default.other").location
            wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
            [outcome] = run_worker(wh.metastore)
            self.compaction_id = outcome.compaction_id
            [result] = run_cleaner(wh.metastore, CleanerOptions(quarantine=True))
            assert {a.action for a in result.actions} == {"quarantined"}
        self.ledger = os.path.join(self.location, LEDGER_DIR, "ledger", f"c{self.compaction_id}.json")
        self.trash = os.path.join(self.location, TRASH_DIR, f"c{self.compaction_id}")

    def rows(self):
        with open(self.ledger) as f:
            return json.load(f)

    def write(self, rows):
        with open(self.ledger, "w") as f:
            json.dump(rows, f)

    def forge(self, **fields):
        """Append a copy of the first quarantined row with ``fields`` replaced."""
        rows = self.rows()
        forged = {**rows[0], **fields}
        self.write([*rows, forged])
        return forged

    def outside(self):
        """What must never change: the sentinel and the other table."""
        return tree(self.sentinel), tree(self.other)

    def table_rows(self):
        with Warehouse.open(self.warehouse, heartbeat_seconds=None) as wh:
            self.history.warehouse = wh
            return read_rows(self.history)


@pytest.fixture
def trash(tmp_path):
    return Trash(tmp_path)


def forged_trash_paths(t):
    return {
        "sentinel": str(t.sentinel / "etc"),
        "sentinel-delta": str(t.sentinel / "etc" / "delta_0000001_0000001_0000"),
        "other-table": t.other,
        "other-table-delta": os.path.join(t.other, sorted(os.listdir(t.other))[-1]),
        "own-table-root": t.location,
        "trash-root": os.path.join(t.location, TRASH_DIR),
        "dotdot-escape": os.path.join(t.trash, "..", "..", "..", "..", "sentinel", "etc"),
        "relative": "sentinel/etc",
    }


CASES = ["sentinel", "sentinel-delta", "other-table", "other-table-delta", "own-table-root", "trash-root"]
CASES += ["dotdot-escape", "relative"]


@pytest.mark.parametrize("case", CASES)
def test_purge_trash_forged_trash_path_is_reported_and_skipped(trash, case):
    forged = trash.forge(trash_path=forged_trash_paths(trash)[case])
    before = trash.outside()
    rows_before = trash.table_rows()
    skipped = []
    purged = purge_trash(trash.location, on_skip=lambda item, why: skipped.append((item.trash_path, why)))
    assert [path for path, _ in skipped] == [forged["trash_path"]]
    assert repr(forged["trash_path"]) in skipped[0][1]
    assert "\n" not in skipped[0][1]
    assert forged["trash_path"] not in purged
    assert purged  # the legitimate rows are still purged
    assert all(p.startswith(trash.trash) for p in purged)
    assert not os.path.exists(trash.trash) or not os.listdir(trash.trash)
    assert trash.outside() == before
    assert trash.table_rows() == rows_before == trash.expected


def test_cli_purge_trash_forged_row_exits_1_naming_it(trash, capsys):
    forged = trash.forge(trash_path=str(trash.sentinel / "etc"))
    before = trash.outside()
    assert run_cli(["clean", "--purge-trash", "t", "--warehouse", trash.warehouse]) == 1
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith(f"acidflow clean: skipped ledger row of compaction {trash.compaction_id}: ")
    assert repr(forged["trash_path"]) in line
    assert "purged" in captured.out
    assert trash.outside() == before


def test_purge_trash_through_a_symlink_inside_the_trash_is_skipped(trash):
    link = os.path.join(trash.trash, "evil")
    os.symlink(trash.sentinel / "etc", link)
    trash.forge(trash_path=link)
    before = trash.outside()
    skipped = []
    purge_trash(trash.location, on_skip=lambda item, why: skipped.append(why))
    assert len(skipped) == 1
    assert "leads outside the table's trash" in skipped[0] or "is not inside the table's trash" in skipped[0]
    assert trash.outside() == before


def test_purge_trash_when_the_trash_directory_is_a_symlink_elsewhere_skips_everything(trash):
    """An attacker swaps ``_acidflow_trash`` for a link to a tree that mirrors its layout."""
    mirror = trash.sentinel / "mirror"
    os.rename(os.path.join(trash.location, TRASH_DIR), mirror)
    os.symlink(mirror, os.path.join(trash.location, TRASH_DIR))
    before = trash.outside()
    skipped = []
    assert purge_trash(trash.location, on_skip=lambda item, why: skipped.append(why)) == []
    assert len(skipped) == len(trash.rows())
    assert trash.outside() == before


@pytest.mark.parametrize("case", ["sentinel", "other-table", "ledger-dir", "trash-dir", "dotdot"])
def test_restore_forged_target_is_reported_and_skipped(trash, case):
    rows = trash.rows()
    targets = {
        "sentinel": str(trash.sentinel / "etc" / "restored_here"),
        "other-table": os.path.join(trash.other, "delta_0000099_0000099_0000"),
        "ledger-dir": os.path.join(trash.location, LEDGER_DIR, "x"),
        "trash-dir": os.path.join(trash.location, TRASH_DIR, "x"),
        "dotdot": os.path.join(trash.location, "..", "..", "sentinel", "etc", "x"),
    }
    forged = {**rows[0], "path": targets[case]}
    trash.write([forged, *rows[1:]])
    before = trash.outside()
    skipped = []
    restored = restore_from_trash(
        trash.location, trash.compaction_id, on_skip=lambda item, why: skipped.append((item.path, why))
    )
    assert [path for path, _ in skipped] == [targets[case]]
    assert repr(targets[case]) in skipped[0][1]
    assert os.path.exists(forged["trash_path"])  # not followed: it stays in the trash
    assert sorted(restored) == sorted(r["path"] for r in rows[1:])
    assert trash.outside() == before
    assert trash.table_rows() == trash.expected


def test_cli_restore_forged_trash_path_exits_1(trash, capsys):
    rows = trash.rows()
    trash.write([{**rows[0], "trash_path": str(trash.sentinel / "etc")}, *rows[1:]])
    before = trash.outside()
    code = run_cli(
        ["clean", "--restore", "t", "--compaction", str(trash.compaction_id), "--warehouse", trash.warehouse]
    )
    assert code == 1
    [line] = capsys.readouterr().err.splitlines()
    assert repr(str(trash.sentinel / "etc")) in line
    assert trash.outside() == before


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("not json", "is not JSON"),
        ('{"path": "/etc"}', "holds dict; expected a list of cleaner actions"),
        ('[{"path": "/etc"}]', "has row {'path': '/etc'}; expected the fields"),
    ],
    ids=["not-json", "object", "missing-fields"],
)
def test_malformed_ledger_raises_one_line_naming_the_file(trash, payload, message):
    with open(trash.ledger, "w") as f:
        f.write(payload)
    before = trash.outside()
    trash_tree = tree(os.path.join(trash.location, TRASH_DIR))
    with pytest.raises(StorageError) as caught:
        purge_trash(trash.location)
    assert str(caught.value).startswith(f"Ledger file {trash.ledger!r} ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert tree(os.path.join(trash.location, TRASH_DIR)) == trash_tree
    assert trash.outside() == before


def test_malformed_ledger_row_type_raises(trash):
    rows = trash.rows()
    trash.write([{**rows[0], "time": "yesterday"}])
    with pytest.raises(StorageError, match=r"with a bad 'time'; expected a cleaner action"):
        read_ledger(trash.location)


def test_cleaner_with_a_malformed_ledger_deletes_nothing_and_stays_ready(tmp_path):
    from acid_core.metastore import CompactionState

    with Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None) as wh:
        random_history(wh, 43, partitioned=False, buckets=1, txns=5)
        location = wh.metastore.get_table("default.t").location
        wh.metastore.enqueue_compaction("default.t", None, CompactionType.MAJOR)
        [outcome] = run_worker(wh.metastore)
        ledger = os.path.join(location, LEDGER_DIR, "ledger", f"c{outcome.compaction_id}.json")
        os.makedirs(os.path.dirname(ledger))
        with open(ledger, "w") as f:
            f.write('[{"path": "/etc"}]')
        before = tree(location)
        [result] = run_cleaner(wh.metastore)  # retried later (back-off), with the ledger file's name
        assert result.status == "retrying"
        assert f"Ledger file {ledger!r}" in result.message
        assert tree(location) == before
        assert wh.metastore.get_compaction(outcome.compaction_id).state is CompactionState.READY_FOR_CLEANING


@pytest.mark.parametrize("location", ["/", "file:///"])
def test_purge_and_restore_refuse_a_table_location_at_a_filesystem_root(location):
    from acid_core.errors import UnsafeDeleteError

    with pytest.raises(UnsafeDeleteError, match=r"the table location is a filesystem root"):
        purge_trash(location)
    with pytest.raises(UnsafeDeleteError, match=r"the table location is a filesystem root"):
        restore_from_trash(location, 1)


def test_restore_into_a_partition_on_another_namenode_is_skipped(trash):
    """A partition located on another store owns nothing on the table's store.

    Store-local paths drop the name node: ``/x`` inside ``hdfs://nn2:8020/x`` is ``/x`` on the
    table's store too, so counting that partition as an owner let a ledger row restore there.
    """
    rows = trash.rows()
    target = str(trash.sentinel / "etc" / "restored_here")
    trash.write([{**rows[0], "path": target}, *rows[1:]])
    before = trash.outside()
    skipped = []
    restored = restore_from_trash(
        trash.location,
        trash.compaction_id,
        partition_locations=[f"hdfs://nn2:8020{trash.sentinel / 'etc'}"],
        on_skip=lambda item, why: skipped.append(item.path),
    )
    assert skipped == [target]
    assert sorted(restored) == sorted(r["path"] for r in rows[1:])
    assert trash.outside() == before
