"""``make run``: build a small demo warehouse and show what acidflow sees in it.

::

    warehouse/default.db/employee/
        delta_0000001_0000001_0000/         INSERT (1, Jerry, 5000), (2, Tom, 8000), (3, Kate, 6000)
        delete_delta_0000002_0000002_0000/  UPDATE employee SET salary = 7000 WHERE id = 2:
        delta_0000002_0000002_0000/             the delete event of Tom's old row and the new row
        delta_0000003_0000003_0000/         an INSERT whose transaction aborted: never read

The demo writes the event files with ``acid_core.orc.writer`` exactly as Hive's writers lay them
out, then prints the directory state and the rows at three snapshots. It is idempotent: the demo
table is rebuilt from scratch on every run. (Once the Airflow platform lands, ``make run`` runs the
sensor, compaction and cleaner DAGs over this warehouse instead.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from typing import TYPE_CHECKING

import pyarrow as pa

from acid_core.directory import load_directory_state
from acid_core.fs import LocalFileIO
from acid_core.orc.reader import scan_table
from acid_core.orc.schema import RowType
from acid_core.orc.writer import delete_events, insert_events, write_acid_dir
from acid_core.paths import DeleteDeltaDir, DeltaDir
from acid_core.writeids import parse_valid_write_id_list

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_employee_table", "main"]

_ROW_TYPE = {"id": "int", "name": "string", "salary": "int"}


def _rows(ids: list[int], names: list[str], salaries: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(ids, pa.int32()), pa.array(names, pa.string()), pa.array(salaries, pa.int32())],
        names=["id", "name", "salary"],
    )


def build_employee_table(table_dir: str) -> None:
    """Write the seed story's history of ``default.employee`` into ``table_dir`` (rebuilt)."""
    file_io = LocalFileIO()
    shutil.rmtree(table_dir, ignore_errors=True)
    os.makedirs(table_dir)
    row_type = RowType.of(_ROW_TYPE)
    inserted = insert_events(
        _rows([1, 2, 3], ["Jerry", "Tom", "Kate"], [5000, 8000, 6000]),
        write_id=1,
        bucket_id=0,
        row_type=row_type,
    )
    write_acid_dir(file_io, table_dir, DeltaDir(1, 1, 0), {0: [inserted]}, row_type)
    deleted = delete_events(
        (pa.array([1], pa.int64()), pa.array([536870912], pa.int32()), pa.array([1], pa.int64())),
        write_id=2,
        row_type=row_type,
    )
    write_acid_dir(file_io, table_dir, DeleteDeltaDir(2, 2, 0), {0: [deleted]}, row_type)
    updated = insert_events(_rows([2], ["Tom"], [7000]), write_id=2, bucket_id=0, row_type=row_type)
    write_acid_dir(file_io, table_dir, DeltaDir(2, 2, 0), {0: [updated]}, row_type)
    aborted = insert_events(_rows([4], ["Mary"], [9000]), write_id=3, bucket_id=0, row_type=row_type)
    write_acid_dir(file_io, table_dir, DeltaDir(3, 3, 0), {0: [aborted]}, row_type)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the demo warehouse and print the state and rows at three snapshots."""
    parser = argparse.ArgumentParser(prog="python -m acid_core.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default="./warehouse")
    args = parser.parse_args(argv)
    table_dir = os.path.abspath(os.path.join(args.warehouse, "default.db", "employee"))
    build_employee_table(table_dir)
    print(f"demo table: {table_dir}")
    snapshots = {
        "after the INSERT (write ID 1)": "default.employee:1:9223372036854775807::",
        "after the UPDATE (write ID 2); write ID 3 aborted": "default.employee:3:9223372036854775807::3",
        "a reader that started before the UPDATE committed": "default.employee:3:2:2:3",
    }
    file_io = LocalFileIO()
    for title, text in snapshots.items():
        write_ids = parse_valid_write_id_list(text)
        state = load_directory_state(file_io, table_dir, write_ids)
        table = scan_table(file_io, table_dir, write_ids, with_row_id=True)
        print(f"\n== {title}\n   snapshot {text}")
        print(f"   state    {json.dumps(state.to_json_dict())}")
        for row in table.to_pylist():
            print(f"   row      {json.dumps(row)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
