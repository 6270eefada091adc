"""The seed story of issue 4, run verbatim through ``acidflow sql`` (``python -m acid_core.cli sql``).

The expected layout, events and rows are the ones the issue documents (Hive's own output for the
story); the events are read back with pyorc, independently of acidflow's reader, and Hive 2.3.10's
own ACID readers (the oracle fixture) must return the same rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyorc
import pytest

from tests.fixtures.hive import hive_txn_list

CREATE = (
    "CREATE TABLE employee (id int, name string, salary int) STORED AS ORC "
    "TBLPROPERTIES ('transactional' = 'true')"
)
INSERT = "INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000), (3, 'Kate', 6000)"
UPDATE = "UPDATE employee SET salary = 7000 WHERE id = 2"
CREATE_UPDATES = CREATE.replace("employee", "employee_update")
INSERT_UPDATES = "INSERT INTO employee_update VALUES (2, 'Tom', 7000), (4, 'Mary', 9000)"
MERGE = (
    "MERGE INTO employee AS a USING employee_update AS b ON a.id = b.id "
    "WHEN MATCHED THEN UPDATE SET salary = b.salary "
    "WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, b.salary)"
)
SELECT = "SELECT row__id, id, name, salary FROM employee"
B0 = 536870912  # BucketCodec V1: bucket 0, statement 0


def acidflow_sql(warehouse, *args):
    result = subprocess.run(
        [sys.executable, "-m", "acid_core.cli", "sql", "--warehouse", str(warehouse), *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("ACIDFLOW_")},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def events(table_dir, directory):
    with open(table_dir / directory / "bucket_00000", "rb") as handle:
        return list(pyorc.Reader(handle))


def layout(table_dir):
    return sorted(
        os.path.relpath(os.path.join(d, f), table_dir) for d, _, files in os.walk(table_dir) for f in files
    )


def test_seed_story_update_path(tmp_path):
    warehouse = tmp_path / "warehouse"
    table_dir = warehouse / "employee"
    shown = acidflow_sql(warehouse, CREATE, INSERT, SELECT).splitlines()
    assert [" ".join(line.split()) for line in shown] == [
        "row__id id name salary",
        '{"writeid":1,"bucketid":536870912,"rowid":0} 1 Jerry 5000',
        '{"writeid":1,"bucketid":536870912,"rowid":1} 2 Tom 8000',
        '{"writeid":1,"bucketid":536870912,"rowid":2} 3 Kate 6000',
    ]
    assert layout(table_dir) == [
        "delta_0000001_0000001_0000/_orc_acid_version",
        "delta_0000001_0000001_0000/bucket_00000",
    ]
    assert (table_dir / "delta_0000001_0000001_0000" / "_orc_acid_version").read_text() == "2"
    assert events(table_dir, "delta_0000001_0000001_0000") == [
        (0, 1, B0, 0, 1, (1, "Jerry", 5000)),
        (0, 1, B0, 1, 1, (2, "Tom", 8000)),
        (0, 1, B0, 2, 1, (3, "Kate", 6000)),
    ]
    shown = acidflow_sql(warehouse, "--format", "jsonl", UPDATE, SELECT).splitlines()
    assert sorted(os.listdir(table_dir)) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]
    assert (table_dir / "delete_delta_0000002_0000002_0000" / "_orc_acid_version").read_text() == "2"
    assert (table_dir / "delta_0000002_0000002_0000" / "_orc_acid_version").read_text() == "2"
    assert events(table_dir, "delete_delta_0000002_0000002_0000") == [(2, 1, B0, 1, 2, None)]
    assert events(table_dir, "delta_0000002_0000002_0000") == [(0, 2, B0, 0, 2, (2, "Tom", 7000))]
    rows = [json.loads(line) for line in shown]
    assert sorted(
        (r["row__id"]["writeid"], r["row__id"]["rowid"], r["id"], r["name"], r["salary"]) for r in rows
    ) == [
        (1, 0, 1, "Jerry", 5000),
        (1, 2, 3, "Kate", 6000),
        (2, 0, 2, "Tom", 7000),
    ]


def test_seed_story_merge_path(tmp_path):
    warehouse = tmp_path / "warehouse"
    table_dir = warehouse / "employee"
    shown = acidflow_sql(
        warehouse,
        "--format",
        "jsonl",
        CREATE,
        INSERT,
        CREATE_UPDATES,
        INSERT_UPDATES,
        MERGE,
        SELECT + " ORDER BY id",
    )
    assert sorted(os.listdir(table_dir)) == [
        "delete_delta_0000002_0000002_0001",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
    ]
    # NOT MATCHED INSERT is statement 0 (Mary); MATCHED UPDATE is statement 1 (Tom), whose new row
    # carries statement 1 in its bucket property.
    assert events(table_dir, "delta_0000002_0000002_0000") == [(0, 2, B0, 0, 2, (4, "Mary", 9000))]
    assert events(table_dir, "delete_delta_0000002_0000002_0001") == [(2, 1, B0, 1, 2, None)]
    assert events(table_dir, "delta_0000002_0000002_0001") == [(0, 2, B0 | 1, 0, 2, (2, "Tom", 7000))]
    for name in os.listdir(table_dir):
        assert (table_dir / name / "_orc_acid_version").read_text() == "2"
    rows = [json.loads(line) for line in shown.splitlines()]
    assert [(r["id"], r["name"], r["salary"]) for r in rows] == [
        (1, "Jerry", 5000),
        (2, "Tom", 7000),
        (3, "Kate", 6000),
        (4, "Mary", 9000),
    ]


@pytest.mark.integration("hive")
@pytest.mark.slow
def test_hive_reads_the_seed_story_tables_identically(hive, tmp_path):
    """Hive 2.3.10's row-mode and vectorized ACID readers over both paths' tables.

    Hive 2.3 names directories by transaction ID; here write ID N of employee is what it reads as
    transaction N, so ``hive_txn_list(N)`` is the snapshot after the story's Nth write.
    """
    update_wh, merge_wh = tmp_path / "update", tmp_path / "merge"
    acidflow_sql(update_wh, CREATE, INSERT, UPDATE)
    acidflow_sql(merge_wh, CREATE, INSERT, CREATE_UPDATES, INSERT_UPDATES, MERGE)
    expected = {
        (update_wh, 1): [
            ((1, B0, 0), 1, "Jerry", 5000),
            ((1, B0, 1), 2, "Tom", 8000),
            ((1, B0, 2), 3, "Kate", 6000),
        ],
        (update_wh, 2): [
            ((1, B0, 0), 1, "Jerry", 5000),
            ((1, B0, 2), 3, "Kate", 6000),
            ((2, B0, 0), 2, "Tom", 7000),
        ],
        (merge_wh, 2): [
            ((1, B0, 0), 1, "Jerry", 5000),
            ((1, B0, 2), 3, "Kate", 6000),
            ((2, B0, 0), 4, "Mary", 9000),
            ((2, B0 | 1, 0), 2, "Tom", 7000),
        ],
    }
    for (warehouse, high_watermark), rows in expected.items():
        for vectorized in (False, True):
            read = hive.read_rows(
                warehouse / "employee", hive_txn_list(high_watermark), vectorized=vectorized
            )
            assert sorted(read) == rows, (warehouse.name, high_watermark, vectorized)


@pytest.mark.integration("hive")
@pytest.mark.slow
def test_hive_reads_a_bucketed_employee_table_after_updates_and_deletes(hive, tmp_path):
    """The story's table CLUSTERED BY (id) INTO 2 BUCKETS: every bucket file, delete and update reads in Hive."""
    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Warehouse
    from acid_core.writes.bucketing import bucket_hash_code, bucket_number

    with Warehouse.open(str(tmp_path / "wh"), heartbeat_seconds=None) as warehouse:
        session = SqlSession(warehouse)
        session.execute(CREATE.replace(" STORED AS ORC", " CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC"))
        values = ", ".join(f"({i}, 'e{i}', {i * 100})" for i in range(1, 11))
        session.execute(f"INSERT INTO employee VALUES {values}")
        session.execute("UPDATE employee SET salary = salary + 1 WHERE id % 3 = 0")
        session.execute("DELETE FROM employee WHERE id IN (2, 7)")
        table_dir = tmp_path / "wh" / "employee"
    # The model: which bucket each id is in (Hive's hash), row IDs numbered per bucket in insert order.
    bucket_of = {i: bucket_number(bucket_hash_code([i], ["int"]), 2) for i in range(1, 11)}
    assert len(set(bucket_of.values())) == 2
    next_row = {0: 0, 1: 0}
    inserted = {}
    for i in range(1, 11):
        inserted[i] = (1, B0 | (bucket_of[i] << 16), next_row[bucket_of[i]])
        next_row[bucket_of[i]] += 1
    updated_row = {0: 0, 1: 0}
    expected = []
    for i in range(1, 11):
        if i in (2, 7):
            continue
        if i % 3 == 0:
            key = (2, B0 | (bucket_of[i] << 16), updated_row[bucket_of[i]])
            updated_row[bucket_of[i]] += 1
            expected.append((key, i, f"e{i}", i * 100 + 1))
        else:
            expected.append((inserted[i], i, f"e{i}", i * 100))
    for vectorized in (False, True):
        read = hive.read_rows(table_dir, hive_txn_list(3), vectorized=vectorized, bucket_count=2)
        assert sorted(read) == sorted(expected), vectorized
