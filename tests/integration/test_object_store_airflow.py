"""``make run WAREHOUSE=s3://bucket/warehouse``: the demo through the real Airflow DAGs on S3 (moto).

``python -m demo.run_platform run --warehouse s3://...`` as ``make run`` runs it, with only the AWS
variables set: the demo tables are written to the bucket, the metastore is a SQLite file on the
local disk (``./.acidflow-demo/metastore.sqlite``), and the sensor, compaction (embedded, and the
manual ``ALTER TABLE ... COMPACT 'major'`` on Spark) and cleaner DAGs run through ``airflow dags
test``; every table reads the same rows after, each partition is one ``base_N_vT`` in the bucket,
and nothing but the metastore directory was written to the working directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration("airflow"),
    pytest.mark.integration("spark"),
    pytest.mark.integration("s3"),
    pytest.mark.slow,
    pytest.mark.timeout(1500),
]

_ROOT = Path(__file__).resolve().parents[2]


def test_make_run_on_an_s3_warehouse(s3_env, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACIDFLOW_", "AIRFLOW_", "AIRFLOW__"))}
    env["PYTHONPATH"] = str(_ROOT)
    run = subprocess.run(
        [sys.executable, "-m", "demo.run_platform", "run", "--warehouse", s3_env.warehouse],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1400,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    assert "default.employee: " in output
    assert "unchanged by compaction and cleaning" in output
    assert "CHANGED" not in output
    assert sorted(os.listdir(tmp_path)) == [".acidflow-demo"]  # no ./s3: directory
    assert (tmp_path / ".acidflow-demo" / "metastore.sqlite").is_file()
    keys = s3_env.object_keys("warehouse/")
    assert "warehouse/.acidflow/demo-warehouse" in keys
    for partition in ("ds=2024-01-01", "ds=2024-01-02", "ds=2024-01-03"):
        names = {k.split("/")[3] for k in keys if k.startswith(f"warehouse/web_events/{partition}/")}
        visible = sorted(n for n in names if not n.startswith(("_", ".")))
        assert len(visible) == 1, visible
        assert visible[0].startswith("base_"), visible
        assert "_v" in visible[0], visible
    employee = {k.split("/")[2] for k in keys if k.startswith("warehouse/employee/")}
    visible = sorted(n for n in employee if not n.startswith(("_", ".")))
    assert len(visible) == 1, employee
    assert visible[0].startswith("base_"), employee

    # A prefix that is not a demo warehouse (no marker) is refused in one line; nothing is deleted.
    s3_env.filesystem().open_output_stream(f"{s3_env.bucket}/data/keep.txt").close()
    refused = subprocess.run(
        [sys.executable, "-m", "demo.run_platform", "run", "--warehouse", f"s3://{s3_env.bucket}/data"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"acidflow: error: Refusing to rebuild the demo warehouse in 's3://{s3_env.bucket}/data': it exists "
        "and is not a demo warehouse built by acidflow (no .acidflow/demo-warehouse); expected a new, "
        "empty or demo prefix; hint: make run WAREHOUSE=s3://<bucket>/<new prefix>"
    ]
    assert "data/keep.txt" in s3_env.object_keys("data/")
