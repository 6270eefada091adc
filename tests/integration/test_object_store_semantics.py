"""Object-store semantics on S3 (moto's server): what a non-atomic rename and per-object deletes allow.

* A compaction's output is invisible to every reader until its transaction T commits, even when
  kill -9 leaves half of it moved into ``base_N_vT`` (readers skip ``_vT`` while T is not
  committed, Hive 3's ``AcidUtils.isDirUsable``); the next ``acidflow compact`` recovers.
* Hive 3.1 names (no ``_v``, ``acidflow.compactor.hive31-names``) would be visible as soon as the
  first object lands: on an object store such a compaction is refused, nothing written.
* The cleaner, killed in the middle of deleting a directory of 1,000 objects, finishes on the next
  run: nothing of it left, nothing else touched (not the table ``e2`` whose prefix starts with ``e``).
* The filesystem guard refuses a bucket root before any request reaches the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acid_core.cli import main as acidflow
from acid_core.errors import UnsafeFileOperationError
from acid_core.fs import file_io_for

pytestmark = [pytest.mark.integration("s3"), pytest.mark.slow]

ROOT = str(Path(__file__).resolve().parents[2])

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import acid_core.fs as fs
    from acid_core.cli import main

    kill_at = sys.argv[1]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if kill_at == "mid-rename":  # one object of the output moved into base_N_vT, the others not
        import pyarrow.fs as pa_fs

        original_move = fs.PyArrowFileIO._move_objects

        def move_one_then_die(self, source, target):
            if self.filesystem.get_file_info(source).type != pa_fs.FileType.Directory:
                return original_move(self, source, target)  # the writer's file renames
            files = [i for i in self.filesystem.get_file_info(pa_fs.FileSelector(source, recursive=True))
                     if i.type == pa_fs.FileType.File]
            first = sorted(files, key=lambda i: i.path)[0]
            self.filesystem.create_dir(target, recursive=True)
            self.filesystem.move(first.path, target + first.path[len(source):])
            die()

        fs.PyArrowFileIO._move_objects = move_one_then_die
    elif kill_at == "mid-delete":  # half of a directory's objects deleted, one by one
        original = fs.PyArrowFileIO.delete_dir

        def delete_half_then_die(self, path):
            import pyarrow.fs as pa_fs

            files = sorted(i.path for i in self.filesystem.get_file_info(pa_fs.FileSelector(path, recursive=True))
                           if i.type == pa_fs.FileType.File)
            if len(files) < 100:
                return original(self, path)
            for name in files[: len(files) // 2]:
                self.filesystem.delete_file(name)
            die()

        fs.PyArrowFileIO.delete_dir = delete_half_then_die
    sys.exit(main(sys.argv[2:]))
    """
)


@pytest.fixture
def s3(s3_env, tmp_path, monkeypatch):
    for name in ("ACIDFLOW_LOCK_MANAGER", "ACIDFLOW_ZOOKEEPER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACIDFLOW_METASTORE", f"sqlite:///{tmp_path / 'metastore.sqlite'}")
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", s3_env.warehouse)
    return s3_env


def _cli(capsys, *argv: str) -> list[dict]:
    code = acidflow([*argv, "--json"] if argv[0] != "sql" else [*argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line) for line in captured.out.splitlines() if line.strip()]


def _rows(capsys) -> list[list]:
    return _cli(capsys, "sql", "--format", "jsonl", "SELECT id, name FROM e ORDER BY id")


def _child(kill_at: str, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", CHILD, kill_at, *argv], env=env, capture_output=True, text=True, timeout=300
    )


def _table(capsys, properties: str = "") -> None:
    _cli(
        capsys,
        "sql",
        "CREATE TABLE e (id int, name string) CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC "
        f"TBLPROPERTIES ('transactional'='true'{properties})",
        "INSERT INTO e VALUES (1,'a'),(2,'b'),(3,'c')",
        "INSERT INTO e VALUES (4,'d'),(5,'e')",
        "DELETE FROM e WHERE id = 2",
    )


def _dirs(s3, table: str = "e") -> set[str]:
    return {key.split("/")[2] for key in s3.object_keys(f"warehouse/{table}/")}


def test_compaction_killed_mid_rename_output_invisible_until_commit(s3, capsys):
    _table(capsys)
    expected = _rows(capsys)
    _cli(capsys, "sql", "ALTER TABLE e COMPACT 'major'")
    died = _child("mid-rename", "compact", "--executor", "embedded")
    assert died.returncode == -9, died.stderr
    partial = sorted(d for d in _dirs(s3) if d.startswith("base_"))
    assert len(partial) == 1  # half of base_N_vT is in place, T still open
    assert "_v" in partial[0]
    moved = s3.object_keys(f"warehouse/e/{partial[0]}/")
    staged = [k for k in s3.object_keys("warehouse/e/") if k.startswith("warehouse/e/.acidflow-staging-")]
    assert len(moved) == 1
    assert staged  # the rest is still in the hidden staging directory

    assert _rows(capsys) == expected  # SELECT skips base_N_vT: T is not committed
    state = _cli(capsys, "state", "default.e")[0]  # at the metastore snapshot: T is open
    assert state["base"] is None
    read = _cli(capsys, "read", f"{s3.warehouse}/e")
    assert sorted((r["id"], r["name"]) for r in read) == [(r["id"], r["name"]) for r in expected]

    outcomes = _cli(capsys, "compact", "--executor", "embedded")
    assert [o["status"] for o in outcomes] == ["recovered", "compacted"]  # T aborted, then again
    assert _rows(capsys) == expected
    _cli(capsys, "clean")
    left = _dirs(s3)
    assert [d for d in left if d.startswith("base_")] == [outcomes[1]["outputs"][0]]
    assert partial[0] not in left
    assert not [d for d in left if d.startswith((".acidflow-staging", "delta"))]
    assert _rows(capsys) == expected


def test_compaction_hive31_names_on_s3_refused_nothing_written(s3, capsys):
    _table(capsys, ", 'acidflow.compactor.hive31-names'='true'")
    before = s3.object_keys("warehouse/e/")
    _cli(capsys, "sql", "ALTER TABLE e COMPACT 'major'")
    outcomes = _cli(capsys, "compact", "--executor", "embedded")
    assert [o["status"] for o in outcomes] == ["refused"]
    assert outcomes[0]["message"] == (
        f"acidflow.compactor.hive31-names=true names outputs without _v<txn>, and '{s3.warehouse}/e' is on an "
        "object store whose directory rename is not atomic; expected a table whose readers know _v names "
        "(Hive 3+; unset acidflow.compactor.hive31-names) or a store with atomic rename (HDFS, local disk)"
    )
    assert s3.object_keys("warehouse/e/") == before


def _put_objects(s3, keys: list[str]) -> None:
    """Small objects put directly, one PUT each (boto3, moto's own client), 8 at a time."""
    from concurrent.futures import ThreadPoolExecutor

    import boto3

    client = boto3.client("s3", endpoint_url=s3.server.endpoint)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=s3.bucket, Key=key, Body=b"x"), keys))


@pytest.mark.timeout(600)
def test_clean_killed_mid_delete_of_1000_objects_rerun_finishes_nothing_else_touched(s3, capsys):
    _table(capsys)
    _cli(
        capsys,
        "sql",
        "CREATE TABLE e2 (id int, name string) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
        "INSERT INTO e2 VALUES (9,'z')",
    )
    expected = _rows(capsys)
    _cli(capsys, "sql", "ALTER TABLE e COMPACT 'major'")
    assert [o["status"] for o in _cli(capsys, "compact", "--executor", "embedded")] == ["compacted"]
    # The base covers delta_1: readers never open it again. Make it a directory of 1,000 objects.
    big = "delta_0000001_0000001_0000"
    files = s3.object_keys(f"warehouse/e/{big}/")
    _put_objects(s3, [f"warehouse/e/{big}/extra_{n:05d}" for n in range(1000 - len(files))])
    assert len(s3.object_keys(f"warehouse/e/{big}/")) == 1000
    obsolete = ("warehouse/e/delta_", "warehouse/e/delete_delta_")
    keep = {k for k in s3.object_keys() if not k.startswith(obsolete)}

    died = _child("mid-delete", "clean")
    assert died.returncode == -9, died.stderr
    assert 0 < len(s3.object_keys(f"warehouse/e/{big}/")) < 1000  # half deleted, one by one

    _cli(capsys, "clean")
    assert not [k for k in s3.object_keys() if k.startswith(obsolete)]
    assert {k for k in s3.object_keys() if "/_acidflow" not in k} == {
        k for k in keep if "/_acidflow" not in k
    }
    assert s3.object_keys("warehouse/e2/")  # the table whose prefix starts like e's is untouched
    assert _rows(capsys) == expected
    assert _cli(capsys, "sql", "--format", "jsonl", "SELECT id FROM e2") == [{"id": 9}]


@pytest.mark.parametrize("target", ["{bucket}", "{bucket}/", "{bucket}/warehouse/../.."])
def test_s3_delete_of_bucket_root_refused_before_any_request(s3, target):
    io, _ = file_io_for(f"{s3.warehouse}/e")
    mark = s3.server.mark()
    with pytest.raises(UnsafeFileOperationError):
        io.delete_dir(target.format(bucket=s3.bucket))
    assert s3.server.requests(since=mark) == []
