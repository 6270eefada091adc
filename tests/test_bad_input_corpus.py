"""The bad-input corpus (issue 11 part 6): every ``acidflow`` command, fed bad input, answers with one line.

Each case runs the real command line (``acid_core.cli.main`` in-process, and a sample as
``python -m acid_core.cli`` subprocesses) against one shared world::

    <root>/wh/            warehouse: default.t (2 inserts + 1 delete), default.pt (partition p=a),
                          the embedded SQLite metastore in wh/.acidflow/
    <root>/sentinel/      files outside every table: must never change
    <root>/corrupt/<c>/   copies of t's directory, each broken in one way (truncated ORC, bucket_abc, ...)

and asserts, per case: the exit status; exactly one line on stderr, naming the bad value; no
traceback and no "unexpected" (the last-resort handler of ``acid_core.cli``); and that nothing
changed: every file under the warehouse and the sentinel tree (metastore excluded), every table's
rows and the compaction queue.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acid_core.cli import main

MAX = 9223372036854775807
D1 = "delta_0000001_0000001_0000"
CREATE_T = "CREATE TABLE t (id int, name string, small tinyint, code varchar(3)) STORED AS ORC"
ACID = " TBLPROPERTIES ('transactional'='true')"
PG_DOWN = "postgresql+psycopg2://nobody@127.0.0.1:1/nothing"


# --------------------------------------------------------------------------------------------
# The world.
# --------------------------------------------------------------------------------------------


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    saved = {k: v for k, v in os.environ.items() if k.startswith("ACIDFLOW_")}
    for key in saved:
        del os.environ[key]
    os.environ.update(env or {})
    # A binary-backed stdout: ``read --format csv`` writes to sys.stdout.buffer.
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse usage errors
                code = e.code if isinstance(e.code, int) else 1
    finally:
        for key in [k for k in os.environ if k.startswith("ACIDFLOW_")]:
            del os.environ[key]
        os.environ.update(saved)
    out.flush()
    return code, out.buffer.getvalue().decode("utf-8", "replace"), err.getvalue()  # type: ignore[attr-defined]


def _corrupt(root: Path, table: Path) -> None:
    def copy(name: str) -> Path:
        target = root / "corrupt" / name
        shutil.copytree(table, target)
        return target

    bucket = f"{D1}/bucket_00000"
    data = (table / bucket).read_bytes()
    (copy("truncated") / bucket).write_bytes(data[:100])
    (copy("tail_cut") / bucket).write_bytes(data[:-10])
    (copy("garbage") / bucket).write_bytes(b"hello, I am not an ORC file\n")
    flipped = bytearray(data)
    for i in range(3, len(flipped) // 2):
        flipped[i] ^= 0xFF
    (copy("bit_rot") / bucket).write_bytes(bytes(flipped))
    shutil.copy(table / bucket, copy("bucket_abc") / D1 / "bucket_abc")
    shutil.copy(table / bucket, copy("bucket_copy") / D1 / "bucket_00000_copy_1")
    (copy("bucket_dir") / D1 / "bucket_00001").mkdir()
    target = copy("bucket_dir_only")
    (target / bucket).unlink()
    (target / bucket).mkdir()
    (copy("acid_version_3") / D1 / "_orc_acid_version").write_text("3")
    (copy("acid_version_garbage") / D1 / "_orc_acid_version").write_bytes(b"x\x00")
    target = copy("acid_version_dir")
    (target / D1 / "_orc_acid_version").unlink()
    (target / D1 / "_orc_acid_version").mkdir()
    # The same rows again under another statement ID: duplicate row IDs.
    shutil.copytree(table / D1, copy("duplicate_row_ids") / "delta_0000001_0000001_0001")
    (copy("write_id_overflow") / D1).rename(
        root / "corrupt" / "write_id_overflow" / "delta_99999999999999999999_99999999999999999999_0000"
    )
    (copy("reversed_range") / D1).rename(root / "corrupt" / "reversed_range" / "delta_0000007_0000003_0000")
    (root / "corrupt" / "a_file").write_text("not a directory")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    warehouse = root / "wh"
    code, _, err = _run(
        [
            "sql",
            "--warehouse",
            str(warehouse),
            CREATE_T + ACID,
            "CREATE TABLE pt (id int) PARTITIONED BY (p string) STORED AS ORC" + ACID,
            "INSERT INTO t VALUES (1, 'a', 1, 'x'), (2, 'b', 2, 'y')",
            "DELETE FROM t WHERE id = 2",
            "INSERT INTO pt PARTITION (p='a') VALUES (10)",
        ]
    )
    assert code == 0, err
    sentinel = root / "sentinel"
    (sentinel / "nested").mkdir(parents=True)
    (sentinel / "keep.txt").write_text("outside every table")
    (sentinel / "nested" / "delta_0000001_0000001_0000").write_text("looks ACID, is not ours")
    _corrupt(root, warehouse / "t")
    return root


def _fingerprint(root: Path) -> dict[str, object]:
    from acid_core.fs import LocalFileIO
    from acid_core.metastore import open_metastore
    from acid_core.orc.reader import scan_table
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if relative.startswith("wh/.acidflow"):
            continue  # the metastore database: compared through its contents below
        files[relative] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    rows = {
        name: scan_table(
            LocalFileIO(), str(root / "wh" / name), ValidWriteIdList(), ValidTxnList()
        ).to_pylist()
        for name in ("t", "pt/p=a")
    }
    with open_metastore(None, str(root / "wh")) as metastore:
        queue = [(c.id, c.table, c.partition, c.state.value) for c in metastore.show_compactions()]
        tables = sorted(metastore.list_tables("default"))
    return {"files": files, "rows": rows, "compactions": queue, "tables": tables}


@pytest.fixture(scope="module")
def baseline(world: Path) -> dict[str, object]:
    return _fingerprint(world)


# --------------------------------------------------------------------------------------------
# The cases: (id, argv with {root}/{wh}, the bad value the message must name, exit status, env).
# --------------------------------------------------------------------------------------------

Case = tuple[str, list[str], str, int, dict[str, str]]

BAD_WRITE_ID_LISTS = [
    # (id, list, what the message quotes)
    ("explicit_empty", "", "''"),
    ("blank", "   ", "'   '"),
    ("colon", ":", "':'"),
    ("name_only", "db.t", "'db.t'"),
    ("no_min_open", "db.t:5", "'db.t:5'"),
    ("hwm_not_number", "db.t:x:1::", "'x'"),
    ("hwm_negative", f"db.t:-1:{MAX}::", "high watermark -1"),
    ("hwm_overflow", "db.t:99999999999999999999:1::", "'99999999999999999999'"),
    ("min_open_zero", "db.t:5:0::", "min open ID 0"),
    ("min_open_negative", "db.t:5:-3::", "min open ID -3"),
    ("min_open_overflow", "db.t:5:9223372036854775808::", "'9223372036854775808'"),
    ("open_negative", "db.t:5:3:-3:", "open ID -3"),
    ("open_zero", "db.t:5:1:0:", "open ID 0"),
    ("open_not_number", "db.t:5:3:a:", "'a'"),
    ("open_empty_item", "db.t:5:3:3,,4:", "''"),
    ("open_overflow", "db.t:5:3:99999999999999999999:", "'99999999999999999999'"),
    ("open_above_hwm", "db.t:5:6:6:", "open ID 6 is above the high watermark 5"),
    ("aborted_above_hwm", f"db.t:5:{MAX}::7", "aborted ID 7 is above the high watermark 5"),
    ("aborted_zero", f"db.t:5:{MAX}::0", "aborted ID 0"),
    ("aborted_not_number", f"db.t:5:{MAX}::b", "'b'"),
    ("aborted_range", f"db.t:9:{MAX}::2-4", "'2-4'"),
    ("open_and_aborted", "db.t:5:3:3:3", "ID 3 is both open and aborted"),
    ("six_fields", "db.t:5:3:3:4:9", "'db.t:5:3:3:4:9'"),
    ("plus_sign", "db.t:+5:1::", "'+5'"),
    ("unicode_digits", "db.t:\u0665:1::", "'\u0665'"),
    ("float_hwm", "db.t:5.0:1::", "'5.0'"),
    ("spaces_inside", "db.t: 5:1::", "' 5'"),
    ("hex", "db.t:0x5:1::", "'0x5'"),
    ("min_open_not_open", "db.t:5:1:3:", "min open ID 1 is not open (the lowest open ID is 3)"),
    ("min_open_above_lowest", "db.t:9:5:3,5:", "min open ID 5 is above the lowest open ID 3"),
    ("min_open_nothing_open", "db.t:5:2::", "min open ID 2 is not open (no open IDs)"),
]

BAD_TXN_LISTS = [
    ("explicit_empty", "", "''"),
    ("one_field", "7", "'7'"),
    ("hwm_not_number", "x:1::", "'x'"),
    ("hwm_range", "4-5:1::", "'4-5'"),
    ("hwm_negative", "-7:5::", "high watermark -7"),
    ("min_open_negative", "7:-5::", "min open ID -5"),
    ("open_not_number", "7:5:q:", "'q'"),
    ("open_and_aborted", "7:5:5:5", "ID 5 is both open and aborted"),
    ("aborted_above_hwm", "7:5:5:8", "aborted ID 8 is above the high watermark 7"),
    ("range_above_hwm", "20:9:9-22:", "open ID 21 is above the high watermark 20"),
    ("reversed_range", "20:9:13-9:", "'13-9'"),
    ("unsorted_open", "11:4:6,4:", "(6 then 4)"),
    ("unsorted_aborted", "11:4:4:3,2", "(3 then 2)"),
    ("duplicate_open", "11:4:4,4:", "(4 then 4)"),
    ("range_then_inside", "20:1:1-5,3:", "(5 then 3)"),
    ("overflow", "99999999999999999999:1::", "'99999999999999999999'"),
    ("five_fields", "7:5:5:3:1", "'7:5:5:3:1'"),
    ("min_open_not_open", "5:1:3:", "min open ID 1 is not open (the lowest open ID is 3)"),
    ("min_open_above_lowest", "1000:55:50:", "min open ID 55 is above the lowest open ID 50"),
]


def _snapshot_cases() -> list[Case]:
    cases: list[Case] = []
    for command in ("state", "read"):
        for name, value, needle in BAD_WRITE_ID_LISTS:
            cases.append(
                (f"{command}-write_ids-{name}", [command, "{wh}/t", f"--write-ids={value}"], needle, 1, {})
            )
        for name, value, needle in BAD_TXN_LISTS:
            cases.append((f"{command}-txns-{name}", [command, "{wh}/t", f"--txns={value}"], needle, 1, {}))
    for name, value, needle in BAD_WRITE_ID_LISTS[:8]:
        cases.append(
            (
                f"state-compactor-{name}",
                ["state", "{wh}/t", "--compactor", f"--write-ids={value}"],
                needle,
                1,
                {},
            )
        )
    return cases


CORRUPT_READS = [
    # (corrupt copy, what the message names)
    ("truncated", "bucket_00000"),
    ("tail_cut", "bucket_00000"),
    ("garbage", "bucket_00000"),
    ("bit_rot", "bucket_00000"),
    ("bucket_abc", "bucket_abc"),
    ("bucket_copy", "bucket_00000_copy_1"),
    ("bucket_dir", "bucket_00001"),
    ("bucket_dir_only", f"{D1}/bucket_00000"),
    ("acid_version_3", "'3'"),
    ("acid_version_garbage", "'x'"),
    ("acid_version_dir", "_orc_acid_version"),
    ("duplicate_row_ids", "writeid=1, bucketid=536870912, rowid=0"),
    ("write_id_overflow", "'99999999999999999999'"),
    ("reversed_range", "delta_0000007_0000003_0000"),
    ("a_file", "a_file"),
]


def _path_cases() -> list[Case]:
    cases: list[Case] = []
    for name, needle in CORRUPT_READS:
        cases.append((f"read-corrupt-{name}", ["read", "{root}/corrupt/" + name], needle, 1, {}))
        cases.append(
            (f"read-corrupt-{name}-csv", ["read", "{root}/corrupt/" + name, "--format", "csv"], needle, 1, {})
        )
    for name in ("write_id_overflow", "reversed_range", "a_file"):
        needle = dict(CORRUPT_READS)[name]
        cases.append((f"state-corrupt-{name}", ["state", "{root}/corrupt/" + name], needle, 1, {}))
    for command in ("state", "read"):
        cases += [
            (f"{command}-missing_dir", [command, "{root}/no/such/dir"], "no/such/dir", 1, {}),
            (f"{command}-unknown_scheme", [command, "nosuch://bucket/t"], "nosuch://bucket/t", 1, {}),
            (f"{command}-file_not_dir", [command, "{root}/sentinel/keep.txt"], "keep.txt", 1, {}),
        ]
    cases += [
        ("read-unknown_column", ["read", "{wh}/t", "--columns", "nope"], "'nope'", 1, {}),
        ("read-empty_column", ["read", "{wh}/t", "--columns", "id,,name"], "'id,,name'", 2, {}),
        ("read-negative_limit", ["read", "{wh}/t", "--limit", "-1"], "'-1'", 2, {}),
        ("read-text_limit", ["read", "{wh}/t", "--limit", "ten"], "'ten'", 2, {}),
        ("read-bad_format", ["read", "{wh}/t", "--format", "xml"], "'xml'", 2, {}),
        ("no_command", [], "COMMAND", 2, {}),
        ("unknown_command", ["frobnicate"], "'frobnicate'", 2, {}),
        ("unknown_option", ["state", "{wh}/t", "--colour"], "--colour", 2, {}),
    ]
    return cases


def _sql(statement: str, *extra: str) -> list[str]:
    return ["sql", "--warehouse", "{wh}", *extra, statement]


SQL_CASES = [
    # (id, statement, bad value named)
    ("syntax", "SELEC * FROM t", "'SELEC * FROM t'"),
    ("unknown_table", "SELECT * FROM nope", "'default.nope'"),
    ("unknown_database", "SELECT * FROM nodb.t", "nodb"),
    ("unknown_column", "SELECT nope FROM t", "nope"),
    ("insert_unknown_table", "INSERT INTO nope VALUES (1)", "nope"),
    ("insert_too_few_values", "INSERT INTO t VALUES (1)", "1 value(s)"),
    ("insert_string_into_int", "INSERT INTO t VALUES ('one', 'a', 1, 'x')", "'id'"),
    ("insert_tinyint_overflow", "INSERT INTO t VALUES (3, 'c', 300, 'x')", "'300'"),
    ("insert_int_overflow", "INSERT INTO t VALUES (99999999999, 'c', 1, 'x')", "'99999999999'"),
    ("insert_fraction_overflow", "INSERT INTO t VALUES (1e20, 'c', 1, 'x')", "'1e+20'"),
    ("insert_varchar_too_long", "INSERT INTO t VALUES (3, 'c', 1, 'toolong')", "'toolong'"),
    ("update_overflow", "UPDATE t SET small = 1000 WHERE id = 1", "'1000'"),
    ("update_unknown_column", "UPDATE t SET nope = 1", "nope"),
    ("delete_unknown_table", "DELETE FROM nope WHERE id = 1", "nope"),
    (
        "buckets_overflow",
        "CREATE TABLE b (id int) CLUSTERED BY (id) INTO 99999999999 BUCKETS STORED AS ORC" + ACID,
        "99999999999 BUCKETS",
    ),
    (
        "buckets_zero",
        "CREATE TABLE b (id int) CLUSTERED BY (id) INTO 0 BUCKETS STORED AS ORC" + ACID,
        "0 BUCKETS",
    ),
    ("create_existing", CREATE_T + ACID, "'default.t'"),
    ("create_stored_as_text", "CREATE TABLE b (id int) STORED AS TEXTFILE" + ACID, "TEXTFILE"),
    ("drop_unknown", "DROP TABLE nope", "nope"),
    ("compact_unknown_table", "ALTER TABLE nope COMPACT 'major'", "'default.nope'"),
    ("compact_unknown_partition", "ALTER TABLE pt PARTITION (p='zz') COMPACT 'major'", "'p=zz'"),
    (
        "compact_unknown_partition_wait",
        "ALTER TABLE pt PARTITION (p='zz') COMPACT 'minor' AND WAIT",
        "'p=zz'",
    ),
    ("compact_partition_of_unpartitioned", "ALTER TABLE t PARTITION (p='1') COMPACT 'major'", "p='1'"),
    ("compact_partitioned_without_partition", "ALTER TABLE pt COMPACT 'major'", "pt"),
    ("compact_bad_type", "ALTER TABLE t COMPACT 'huge'", "'huge'"),
    ("abort_txn_overflow", "ABORT TRANSACTIONS 99999999999999999999", "99999999999999999999"),
    ("abort_txn_unknown", "ABORT TRANSACTIONS 987654", "987654"),
    ("abort_compaction_overflow", "ABORT COMPACTIONS 99999999999999999999", "99999999999999999999"),
    ("abort_txn_negative", "ABORT TRANSACTIONS -1", "-1"),
    ("show_partitions_unknown", "SHOW PARTITIONS nope", "nope"),
    ("describe_unknown", "DESCRIBE nope", "nope"),
    ("add_partition_unknown_key", "ALTER TABLE pt ADD PARTITION (q='1')", "'q=1'"),
    ("merge_unknown_source", "MERGE INTO t USING nope s ON t.id = s.id WHEN MATCHED THEN DELETE", "nope"),
    (
        "tblproperties_bad_threshold",
        "ALTER TABLE t SET TBLPROPERTIES ('compactorthreshold.hive.compactor.delta.num.threshold'='ten')",
        "'ten'",
    ),
    ("tblproperties_acid_to_plain", "ALTER TABLE t SET TBLPROPERTIES ('transactional'='false')", "'false'"),
    ("tblproperties_unset_missing", "ALTER TABLE t UNSET TBLPROPERTIES ('nope')", "'nope'"),
]


def _sql_cases() -> list[Case]:
    cases: list[Case] = [
        (f"sql-{name}", _sql(statement), needle, 1, {}) for name, statement, needle in SQL_CASES
    ]
    cases += [
        (
            "sql-missing_file",
            ["sql", "--warehouse", "{wh}", "-f", "{root}/no/such.sql"],
            "no/such.sql",
            1,
            {},
        ),
        (
            "sql-unwritable_warehouse",
            ["sql", "--warehouse", "/proc/acidflow-wh", "SHOW TABLES"],
            "/proc/acidflow-wh",
            1,
            {},
        ),
        ("sql-metastore_not_a_url", _sql("SHOW TABLES", "--metastore", "not a url"), "'not a url'", 1, {}),
        ("sql-metastore_unknown_dialect", _sql("SHOW TABLES", "--metastore", "nosuch://x"), "nosuch", 1, {}),
        ("sql-metastore_unreachable", _sql("SHOW TABLES", "--metastore", PG_DOWN), "127.0.0.1", 1, {}),
        ("sql-bad_format", _sql("SHOW TABLES", "--format", "xml"), "'xml'", 2, {}),
        ("sql-lock_manager_bogus", _sql("SHOW TABLES"), "'bogus'", 1, {"ACIDFLOW_LOCK_MANAGER": "bogus"}),
        (
            "sql-zookeeper_unset",
            _sql("SHOW TABLES"),
            "ACIDFLOW_ZOOKEEPER=''",
            1,
            {"ACIDFLOW_LOCK_MANAGER": "zookeeper"},
        ),
        (
            "sql-zookeeper_malformed",
            _sql("SHOW TABLES"),
            "'::::'",
            1,
            {"ACIDFLOW_LOCK_MANAGER": "zookeeper", "ACIDFLOW_ZOOKEEPER": "::::"},
        ),
        (
            "sql-env_metastore_garbage",
            ["sql", "--warehouse", "{wh}", "SHOW TABLES"],
            "'garbage'",
            1,
            {"ACIDFLOW_METASTORE": "garbage"},
        ),
    ]
    return cases


def _maintenance_cases() -> list[Case]:
    wh = ["--warehouse", "{wh}"]
    cases: list[Case] = [
        ("compact-unknown_table", ["compact", *wh, "--table", "nope"], "'default.nope'", 1, {}),
        (
            "compact-partition_of_unpartitioned",
            ["compact", *wh, "--table", "t", "--partition", "p=1"],
            "'p=1'",
            1,
            {},
        ),
        (
            "compact-unknown_partition",
            ["compact", *wh, "--table", "pt", "--partition", "p=zz"],
            "'p=zz'",
            1,
            {},
        ),
        ("compact-no_partition", ["compact", *wh, "--table", "pt"], "'default.pt'", 1, {}),
        ("compact-bad_type", ["compact", *wh, "--table", "t", "--type", "huge"], "'huge'", 2, {}),
        ("compact-max_zero", ["compact", *wh, "--max", "0"], "'0'", 2, {}),
        ("compact-max_text", ["compact", *wh, "--max", "all"], "'all'", 2, {}),
        (
            "compact-max_overflow",
            ["compact", *wh, "--max", "99999999999999999999"],
            "'99999999999999999999'",
            2,
            {},
        ),
        ("compact-threshold_text", ["compact", *wh, "--spark-threshold-bytes", "1GB"], "'1GB'", 2, {}),
        ("compact-threshold_negative", ["compact", *wh, "--spark-threshold-bytes", "-1"], "'-1'", 2, {}),
        ("compact-bad_executor", ["compact", *wh, "--executor", "gpu"], "'gpu'", 2, {}),
        ("compact-missing_warehouse", ["compact", "--warehouse", "{root}/no-wh"], "no-wh", 1, {}),
        ("compact-metastore_unreachable", ["compact", *wh, "--metastore", PG_DOWN], "127.0.0.1", 1, {}),
        ("initiate-unknown_table", ["initiate", *wh, "--table", "nope"], "'default.nope'", 1, {}),
        ("initiate-missing_warehouse", ["initiate", "--warehouse", "{root}/no-wh"], "no-wh", 1, {}),
        ("initiate-metastore_not_a_url", ["initiate", *wh, "--metastore", "::"], "'::'", 1, {}),
        ("initiate-lookback_negative", ["initiate", *wh, "--lookback-seconds", "-1"], "'-1'", 2, {}),
        ("clean-retention_negative", ["clean", *wh, "--retention", "-1"], "'-1'", 2, {}),
        ("clean-retention_nan", ["clean", *wh, "--retention", "nan"], "'nan'", 2, {}),
        ("clean-retention_inf", ["clean", *wh, "--retention", "inf"], "'inf'", 2, {}),
        ("clean-retention_text", ["clean", *wh, "--retention", "1h"], "'1h'", 2, {}),
        (
            "clean-older_than_text",
            ["clean", *wh, "--purge-trash", "t", "--older-than", "old"],
            "'old'",
            2,
            {},
        ),
        ("clean-purge_unknown_table", ["clean", *wh, "--purge-trash", "nope"], "'default.nope'", 1, {}),
        (
            "clean-restore_unknown_table",
            ["clean", *wh, "--restore", "nope", "--compaction", "1"],
            "'default.nope'",
            1,
            {},
        ),
        ("clean-compaction_zero", ["clean", *wh, "--restore", "t", "--compaction", "0"], "'0'", 2, {}),
        (
            "clean-compaction_overflow",
            ["clean", *wh, "--restore", "t", "--compaction", "99999999999999999999"],
            "'99999999999999999999'",
            2,
            {},
        ),
        (
            "clean-restore_unknown_compaction",
            ["clean", *wh, "--restore", "t", "--compaction", "999999"],
            "Nothing to restore for compaction 999999",
            1,
            {},
        ),
        ("clean-missing_warehouse", ["clean", "--warehouse", "{root}/no-wh"], "no-wh", 1, {}),
        ("lease-take_unknown_table", ["lease", "take", "nope", *wh], "'default.nope'", 1, {}),
        ("lease-ttl_zero", ["lease", "take", "t", "--ttl", "0", *wh], "'0'", 2, {}),
        ("lease-ttl_negative", ["lease", "take", "t", "--ttl", "-5", *wh], "'-5'", 2, {}),
        ("lease-ttl_nan", ["lease", "take", "t", "--ttl", "nan", *wh], "'nan'", 2, {}),
        ("lease-ttl_inf", ["lease", "take", "t", "--ttl", "inf", *wh], "inf", 1, {}),
        ("lease-ttl_huge", ["lease", "take", "t", "--ttl", "1e400", *wh], "inf", 1, {}),
        ("lease-release_unknown", ["lease", "release", "424242", *wh], "424242", 1, {}),
        ("lease-release_zero", ["lease", "release", "0", *wh], "'0'", 2, {}),
        ("lease-release_text", ["lease", "release", "first", *wh], "'first'", 2, {}),
        (
            "lease-release_overflow",
            ["lease", "release", "99999999999999999999", *wh],
            "'99999999999999999999'",
            2,
            {},
        ),
        ("lease-missing_warehouse", ["lease", "list", "--warehouse", "{root}/no-wh"], "no-wh", 1, {}),
        ("lease-no_action", ["lease"], "ACTION", 2, {}),
    ]
    lock_env = {"ACIDFLOW_METASTORE": "sqlite:///{wh}/.acidflow/metastore.sqlite"}
    cases += [
        ("lock-empty_object", ["lock", "acquire", "", "--mode", "S"], "''", 1, lock_env),
        ("lock-bad_object", ["lock", "show", "a/b/c//"], "'a/b/c//'", 1, lock_env),
        ("lock-bad_mode", ["lock", "acquire", "default.t", "--mode", "Q"], "'Q'", 2, lock_env),
        (
            "lock-negative_retries",
            ["lock", "acquire", "default.t", "--mode", "S", "--retries", "-5"],
            "'-5'",
            1,
            lock_env,
        ),
        (
            "lock-negative_wait",
            ["lock", "acquire", "default.t", "--mode", "S", "--wait", "-1"],
            "'-1'",
            2,
            lock_env,
        ),
        (
            "lock-nan_wait",
            ["lock", "acquire", "default.t", "--mode", "S", "--wait", "nan"],
            "'nan'",
            2,
            lock_env,
        ),
        (
            "lock-inf_hold",
            ["lock", "acquire", "default.t", "--mode", "S", "--hold", "inf"],
            "'inf'",
            2,
            lock_env,
        ),
        (
            "lock-txn_zero",
            ["lock", "acquire", "default.t", "--mode", "S", "--txn-id", "0"],
            "'0'",
            2,
            lock_env,
        ),
        (
            "lock-txn_overflow",
            ["lock", "acquire", "default.t", "--mode", "S", "--txn-id", "99999999999999999999"],
            "'99999999999999999999'",
            2,
            lock_env,
        ),
        (
            "lock-unknown_txn",
            ["lock", "acquire", "default.t", "--mode", "S", "--txn-id", "424242"],
            "No such transaction 424242",
            1,
            lock_env,
        ),
        ("lock-manager_bogus", ["lock", "show"], "'bogus'", 1, {"ACIDFLOW_LOCK_MANAGER": "bogus"}),
        (
            "lock-zookeeper_malformed",
            ["lock", "show"],
            "'host'",
            1,
            {"ACIDFLOW_LOCK_MANAGER": "zookeeper", "ACIDFLOW_ZOOKEEPER": "host"},
        ),
        (
            "lock-zookeeper_port_out_of_range",
            ["lock", "show"],
            "port 99999999 of 'localhost:99999999' is out of range",
            1,
            {"ACIDFLOW_ZOOKEEPER": "localhost:99999999"},
        ),
        (
            "lock-metastore_unreachable",
            ["lock", "show"],
            "127.0.0.1",
            1,
            {"ACIDFLOW_LOCK_MANAGER": "sql", "ACIDFLOW_METASTORE": PG_DOWN},
        ),
    ]
    return cases


CASES = _snapshot_cases() + _path_cases() + _sql_cases() + _maintenance_cases()


def _expand(values: list[str], root: Path) -> list[str]:
    return [v.replace("{wh}", str(root / "wh")).replace("{root}", str(root)) for v in values]


def _assert_one_clean_line(code: int, out: str, err: str, expected_code: int, needle: str) -> None:
    lines = err.strip().splitlines()
    assert code == expected_code, f"exit {code}, expected {expected_code}; stderr: {err!r}"
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {err!r}"
    assert "Traceback" not in err + out
    assert "error:" in lines[0]
    assert "unexpected" not in lines[0], f"reached the last-resort handler: {lines[0]}"
    assert needle in lines[0], f"{needle!r} not named in {lines[0]!r}"


@pytest.mark.parametrize(
    ("argv", "needle", "expected_code", "env"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_cli_bad_input_one_line_and_nothing_changed(world, baseline, argv, needle, expected_code, env):
    env = {k: v.replace("{wh}", str(world / "wh")) for k, v in env.items()}
    code, out, err = _run(_expand(argv, world), env)
    _assert_one_clean_line(code, out, err, expected_code, needle)
    assert _fingerprint(world) == baseline


# --------------------------------------------------------------------------------------------
# The process level: the real ``python -m acid_core.cli``, no traceback through any layer.
# --------------------------------------------------------------------------------------------

SUBPROCESS_CASES = [
    c
    for c in CASES
    if c[0]
    in {
        "read-write_ids-explicit_empty",
        "read-corrupt-bit_rot",
        "read-corrupt-acid_version_3",
        "sql-insert_tinyint_overflow",
        "sql-buckets_overflow",
        "sql-unwritable_warehouse",
        "compact-unknown_partition",
        "lock-txn_overflow",
    }
]


def _subprocess(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDFLOW_")}
    full_env.update(env)
    full_env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    result = subprocess.run(
        [sys.executable, "-m", "acid_core.cli", *argv],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


def test_subprocess_sample_is_complete():
    assert len(SUBPROCESS_CASES) == 8


@pytest.mark.parametrize(
    ("argv", "needle", "expected_code", "env"),
    [c[1:] for c in SUBPROCESS_CASES],
    ids=[c[0] for c in SUBPROCESS_CASES],
)
def test_cli_process_bad_input_one_line_and_nothing_changed(
    world, baseline, argv, needle, expected_code, env
):
    env = {k: v.replace("{wh}", str(world / "wh")) for k, v in env.items()}
    code, out, err = _subprocess(_expand(argv, world), env)
    _assert_one_clean_line(code, out, err, expected_code, needle)
    assert _fingerprint(world) == baseline


def test_cli_debug_shows_the_traceback(world):
    code, _, err = _subprocess(["--debug", "read", str(world / "corrupt" / "bit_rot")], {})
    assert code == 1
    assert "Traceback" in err
    assert err.strip().splitlines()[-1].startswith("acidflow: error: Corrupt ACID data at ")


# --------------------------------------------------------------------------------------------
# A full disk, an unreachable ZooKeeper: real conditions, one line each.
# --------------------------------------------------------------------------------------------


def _in_private_mounts(script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a shell script in a private user and mount namespace (``unshare``): it may mount a tmpfs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDFLOW_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_cli_full_disk_is_a_disk_error_naming_the_path(tmp_path):
    """A 64 KiB tmpfs in a private mount namespace (``unshare``) holds the warehouse: it fills up."""
    disk = tmp_path / "disk"
    disk.mkdir()
    script = (
        f"mount -t tmpfs -o size=64k tmpfs {disk} && "
        f"{sys.executable} -m acid_core.cli sql --warehouse {disk}/wh "
        f'"{CREATE_T}{ACID}"'
    )
    result = _in_private_mounts(script)
    _assert_one_clean_line(
        result.returncode, result.stdout, result.stderr, 1, f"{disk}/wh/.acidflow/metastore.sqlite"
    )
    assert result.stderr.startswith("acidflow sql: error: Disk full: ")
    assert "Could not open the SQL lock store" not in result.stderr


def test_cli_full_disk_while_writing_data_names_the_file(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    metastore = f"sqlite:///{tmp_path}/metastore.sqlite"
    sql = f"{sys.executable} -m acid_core.cli sql --warehouse {disk}/wh --metastore {metastore}"
    insert = (
        "INSERT INTO t SELECT id, md5(random()::varchar) || md5(random()::varchar), 1, 'x' "
        "FROM (SELECT range AS id FROM range(4000))"
    )
    script = (
        f'mount -t tmpfs -o size=96k tmpfs {disk} && {sql} "{CREATE_T}{ACID}" 2>/dev/null && {sql} "{insert}"'
    )
    result = _in_private_mounts(script)
    _assert_one_clean_line(
        result.returncode,
        result.stdout,
        result.stderr,
        1,
        f"{disk}/wh/t/delta_0000001_0000001_0000/bucket_00000",
    )
    assert "Disk full: writing an event file" in result.stderr


def _compact_on_full_disk(tmp_path, metastore_on_the_disk: bool) -> subprocess.CompletedProcess[str]:
    """Three inserts on a 1 MiB tmpfs, a filler file takes the rest of it, then ``compact --table t``."""
    disk = tmp_path / "disk"
    disk.mkdir()
    metastore = "" if metastore_on_the_disk else f" --metastore sqlite:///{tmp_path}/metastore.sqlite"
    cli = f"{sys.executable} -m acid_core.cli"
    where = f"--warehouse {disk}/wh{metastore}"
    inserts = " && ".join(f'{cli} sql {where} "INSERT INTO t VALUES ({i}, {i})"' for i in range(3))
    script = (
        f"mount -t tmpfs -o size=1m tmpfs {disk} && "
        f'({cli} sql {where} "CREATE TABLE t (id int, v int) STORED AS ORC{ACID}" && {inserts}) '
        f">/dev/null 2>&1 && (dd if=/dev/zero of={disk}/filler bs=1k 2>/dev/null; true) && "
        f"{cli} compact {where} --table t --type major"
    )
    return _in_private_mounts(script, timeout=120)


def test_cli_compact_metastore_on_a_full_disk_says_disk_full(tmp_path):
    """SQLite reports a full disk under its WAL files as "disk I/O error" (SQLITE_IOERR_SHMSIZE)."""
    result = _compact_on_full_disk(tmp_path, metastore_on_the_disk=True)
    _assert_one_clean_line(
        result.returncode,
        result.stdout,
        result.stderr,
        1,
        f"could not write '{tmp_path}/disk/wh/.acidflow/metastore.sqlite' (OperationalError: disk I/O error)",
    )
    assert result.stderr.startswith("acidflow: error: Disk full: metastore operation ")
    assert "check that the database is reachable" not in result.stderr


def test_cli_compact_warehouse_on_a_full_disk_says_disk_full_in_one_line(tmp_path):
    result = _compact_on_full_disk(tmp_path, metastore_on_the_disk=False)
    _assert_one_clean_line(
        result.returncode, result.stdout, result.stderr, 1, "Disk full: writing an event file"
    )
    assert "No space left on device); expected free space on that disk" in result.stderr
    assert "Python exception" not in result.stderr + result.stdout


def test_cli_unreachable_zookeeper_one_line(world, baseline):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"ACIDFLOW_LOCK_MANAGER": "zookeeper", "ACIDFLOW_ZOOKEEPER": f"127.0.0.1:{port}"}
    code, out, err = _run(
        ["sql", "--warehouse", str(world / "wh"), "INSERT INTO t VALUES (9, 'z', 1, 'x')"], env
    )
    _assert_one_clean_line(code, out, err, 1, f"127.0.0.1:{port}")
    assert _fingerprint(world) == baseline


# --------------------------------------------------------------------------------------------
# Configuration: acidflow.yaml and ACIDFLOW_* garbage names the key and the expected type.
# --------------------------------------------------------------------------------------------

CONFIG_CASES = [
    ("warehouse: [1, 2]", "warehouse=[1, 2]"),
    ("metastore: 5", "metastore=5"),
    ("groups: 5", "groups=5"),
    ("groups: [{name: 'a b', tables: ['*.*']}]", "groups[0].name='a b'"),
    ("groups: [{name: a, tables: [orders]}]", "groups[0].tables='orders'"),
    ("thresholds: 5", "thresholds=5"),
    ("thresholds: {delta_num: many}", "thresholds.delta_num='many'"),
    ("thresholds: {delta_num: -1}", "thresholds.delta_num=-1"),
    ("thresholds: {delta_num: 1.5}", "thresholds.delta_num=1.5"),
    ("thresholds: {delta_num: true}", "thresholds.delta_num=True"),
    ("thresholds: {delta_num: 99999999999999999999}", "thresholds.delta_num=99999999999999999999"),
    ("thresholds: {delta_pct: .inf}", "thresholds.delta_pct=inf"),
    ("thresholds: {delta_pct: .nan}", "thresholds.delta_pct=nan"),
    ("thresholds: {aborted_time: 12x}", "thresholds.aborted_time='12x'"),
    ("thresholds: {aborted_time: -5}", "thresholds.aborted_time=-5"),
    ("thresholds: {bogus: 1}", "thresholds.bogus=1"),
    ("backlog: {warning_deltas: a}", "backlog.warning_deltas='a'"),
    ("backlog: {critical_enqueue_age: 1e400}", "backlog.critical_enqueue_age='1e400'"),
    ("schedules: {sensor: 5}", "schedules.sensor=5"),
    ("schedules: {sensor: 'not cron'}", "schedules.sensor='not cron'"),
    ("schedules: {sensor: '@weird'}", "schedules.sensor='@weird'"),
    ("schedules: {cleaner: '99 * * * *'}", "schedules.cleaner='99 * * * *'"),
    ("compaction: {pool_slots: 0}", "compaction.pool_slots=0"),
    ("compaction: {executor: gpu}", "compaction.executor='gpu'"),
    ("compaction: {spark_threshold_bytes: -1}", "compaction.spark_threshold_bytes=-1"),
    ("cleaner: {retention: abc}", "cleaner.retention='abc'"),
    ("cleaner: {quarantine: maybe}", "cleaner.quarantine='maybe'"),
    ("alerts: {default: [sms]}", "alerts.default='sms'"),
    ("alerts: {routes: 5}", "alerts.routes=5"),
    ("alerts: {routes: [{owner: 5, channels: [log]}]}", "alerts.routes[0].owner=5"),
    ("unknown_key: 1", "unknown_key=1"),
    ("- a\n- b", "<file>=['a', 'b']"),
    ("{{{", "<file>="),
    ("42", "<file>=42"),
]

ENV_CASES = [
    ({"ACIDFLOW_SPARK_THRESHOLD_BYTES": "lots"}, "ACIDFLOW_SPARK_THRESHOLD_BYTES='lots'"),
    ({"ACIDFLOW_SPARK_THRESHOLD_BYTES": "-1"}, "ACIDFLOW_SPARK_THRESHOLD_BYTES='-1'"),
    ({"ACIDFLOW_SPARK_THRESHOLD_BYTES": "1e3"}, "ACIDFLOW_SPARK_THRESHOLD_BYTES='1e3'"),
    ({"ACIDFLOW_COMPACTION_EXECUTOR": "gpu"}, "ACIDFLOW_COMPACTION_EXECUTOR='gpu'"),
    ({"ACIDFLOW_CONFIG": "/no/such/acidflow.yaml"}, "'/no/such/acidflow.yaml'"),
    ({"ACIDFLOW_CONFIG": "/"}, "path='/'"),
]


def _load_config_error(environ: dict[str, str]) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
    try:
        from acidflow_airflow.config import load_config

        from acid_core.errors import InvalidPlatformConfigError

        with pytest.raises(InvalidPlatformConfigError) as info:
            load_config(None, environ)
        return str(info.value)
    finally:
        sys.path.pop(0)


@pytest.mark.parametrize(("text", "named"), CONFIG_CASES, ids=[c[0][:40] for c in CONFIG_CASES])
def test_config_file_garbage_names_key_and_expected_type(tmp_path, text, named):
    path = tmp_path / "acidflow.yaml"
    path.write_text(text)
    message = _load_config_error({"ACIDFLOW_CONFIG": str(path)})
    assert "\n" not in message
    assert named in message
    assert "; expected " in message


@pytest.mark.parametrize(
    ("environ", "named"),
    ENV_CASES,
    ids=[next(iter(c[0])) + "=" + next(iter(c[0].values())) for c in ENV_CASES],
)
def test_config_env_garbage_names_variable_and_expected_type(environ, named):
    message = _load_config_error(environ)
    assert "\n" not in message
    assert named in message
    assert "; expected " in message


# --------------------------------------------------------------------------------------------
# Failed items: the compactor and the cleaner exit 1, one line per failure, no traceback.
# --------------------------------------------------------------------------------------------


def _small_warehouse(tmp_path: Path) -> Path:
    warehouse = tmp_path / "wh"
    code, _, err = _run(
        [
            "sql",
            "--warehouse",
            str(warehouse),
            "CREATE TABLE x (id int) STORED AS ORC" + ACID,
            "INSERT INTO x VALUES (1)",
            "INSERT INTO x VALUES (2)",
        ]
    )
    assert code == 0, err
    return warehouse


def test_cli_compact_failed_compaction_exits_1_with_one_log_line(tmp_path):
    warehouse = _small_warehouse(tmp_path)
    code, _, err = _run(["sql", "--warehouse", str(warehouse), "ALTER TABLE x COMPACT 'major'"])
    assert code == 0, err
    (warehouse / "x" / D1 / "bucket_00000").write_bytes(b"bit rot")  # the worker cannot read its input
    code, out, err = _run(["compact", "--warehouse", str(warehouse), "--executor", "embedded"])
    assert code == 1
    assert "Traceback" not in out + err
    [line] = err.strip().splitlines()
    assert line.startswith("acidflow: error: compaction 1 of default.x failed: ")
    assert "bucket_00000" in line
    [printed] = out.strip().splitlines()
    assert printed.startswith("compaction 1: failed: NotAnAcidFileError: ")
    assert printed.endswith(line.split("failed: ", 1)[1])


def test_cli_sql_compact_and_wait_failed_compaction_exits_0_naming_the_status_as_hive(tmp_path):
    """Hive 4's AlterTableCompactOperation.waitForCompactionToFinish: once the entry leaves
    'initiated'/'working' it prints "finished with status: <state>" and the statement succeeds,
    whatever the state; only a refused request (COMPACTION_REFUSED) or a bad spec fails it."""
    warehouse = _small_warehouse(tmp_path)
    (warehouse / "x" / D1 / "bucket_00000").write_bytes(b"bit rot")
    code, out, err = _run(["sql", "--warehouse", str(warehouse), "ALTER TABLE x COMPACT 'major' AND WAIT"])
    assert code == 0
    assert "Traceback" not in out + err
    assert "error:" not in err  # the failure is the statement's result, not an error line (exit 0)
    [status] = [line for line in (out + err).splitlines() if line.startswith("Compaction 1 ")]
    assert status.startswith("Compaction 1 (major, default.x): failed: NotAnAcidFileError: ")
    assert "bucket_00000" in status
    code, out, _ = _run(["sql", "--warehouse", str(warehouse), "--format", "jsonl", "SHOW COMPACTIONS"])
    assert '"state":"failed"' in out


def test_cli_clean_failed_cleaning_exits_1_and_stays_ready(tmp_path):
    warehouse = _small_warehouse(tmp_path)
    code, _, err = _run(["sql", "--warehouse", str(warehouse), "ALTER TABLE x COMPACT 'major' AND WAIT"])
    assert code == 0, err
    table = warehouse / "x"
    shutil.move(table, tmp_path / "moved")
    table.write_text("the table directory is now a file")
    code, out, err = _run(["clean", "--warehouse", str(warehouse)])
    assert code == 1
    assert "Traceback" not in out + err
    [line] = err.strip().splitlines()
    # Hive's handleCleanerAttemptFailure: a failed attempt is retried after a back-off (the entry
    # stays ready), and the run exits 1.
    assert line.startswith(
        "acidflow: warning: compaction 1 of default.x: cleaning failed (retry 1 of 5 after 300 s): "
    )
    assert f"{str(table)!r} is a file; expected a table or partition directory" in line
    assert out.startswith("compaction 1: retrying: ")
    code, out, _ = _run(["sql", "--warehouse", str(warehouse), "--format", "jsonl", "SHOW COMPACTIONS"])
    assert '"state":"ready for cleaning"' in out


def test_debug_logs_the_traceback_of_a_failed_compaction(tmp_path):
    warehouse = _small_warehouse(tmp_path)
    _run(["sql", "--warehouse", str(warehouse), "ALTER TABLE x COMPACT 'major'"])
    (warehouse / "x" / D1 / "bucket_00000").write_bytes(b"bit rot")
    code, _, err = _run(["--debug", "compact", "--warehouse", str(warehouse), "--executor", "embedded"])
    assert code == 1
    assert "Traceback" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["sql", "INSERT INTO t VALUES (2)"],
        ["sql", "SELECT * FROM t"],
        ["read", "default.t"],
        ["clean"],
    ],
    ids=["sql-insert", "sql-select", "read", "clean"],
)
def test_cli_read_only_warehouse_says_the_file_system_is_read_only(tmp_path, argv):
    """Issue 24: it said only ``unable to open database file``. The warehouse is bind-mounted
    read-only in a private mount namespace (``unshare``): a real read-only file system, which
    ``chmod`` is not for root."""
    warehouse, mounted = tmp_path / "wh", tmp_path / "ro"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDFLOW_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    cli = [sys.executable, "-m", "acid_core.cli"]
    subprocess.run(
        [
            *cli,
            "sql",
            "--warehouse",
            str(warehouse),
            "CREATE TABLE t (id int) STORED AS ORC" + ACID,
            "INSERT INTO t VALUES (1)",
        ],
        env=env,
        capture_output=True,
        timeout=60,
        check=True,
    )
    mounted.mkdir()
    before = _tree_bytes(warehouse)
    command = " ".join(shlex.quote(word) for word in [*cli, argv[0], "--warehouse", str(mounted), *argv[1:]])
    script = f"mount --bind {warehouse} {mounted} && mount -o remount,ro,bind {mounted} && {command}"
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    _assert_one_clean_line(
        result.returncode, result.stdout, result.stderr, 1, f"{mounted}/.acidflow/metastore.sqlite"
    )
    assert ": error: Read-only file system: metastore operation " in result.stderr
    assert "hint: remount it read-write" in result.stderr
    assert _tree_bytes(warehouse) == before


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
