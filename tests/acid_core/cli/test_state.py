"""``acidflow state``: in-process through ``acid_core.cli.main`` and as real processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from acid_core.cli import main
from acid_core.fs import LocalFileIO
from acid_core.testing.builders import write_partition_tree

REPO = Path(__file__).resolve().parents[3]
MAX = str(2**63 - 1)
COMPACTED = b'{"thisFileVersion":"0","dataFormat":"compacted"}'
JSON_KEYS = ["base", "deltas", "obsolete", "aborted", "original_files"]  # issue 2, item 7

PARTITION = [
    "base_0000002/bucket_00000",
    "delta_0000001_0000002/bucket_00000",
    "delta_0000003_0000003_0000/bucket_00000",
    "delete_delta_0000003_0000003_0000/bucket_00000",
    "delta_0000004_0000004_0000/bucket_00000",
    "delta_0000005_0000005_0000/bucket_00000",
    "000000_0",
    "_orc_acid_version",
]


@pytest.fixture
def partition(tmp_path: Path) -> Path:
    root = tmp_path / "warehouse" / "db.db" / "t" / "p=1"
    write_partition_tree(LocalFileIO(), str(root), PARTITION)
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------------------------
# --json
# --------------------------------------------------------------------------------------------


def test_json_everything_committed(capsys, partition):
    code, out, err = _run(capsys, "state", str(partition), "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert list(data) == JSON_KEYS
    assert data == {
        "base": "base_0000002",
        "deltas": [
            "delete_delta_0000003_0000003_0000",
            "delta_0000003_0000003_0000",
            "delta_0000004_0000004_0000",
            "delta_0000005_0000005_0000",
        ],
        "obsolete": ["000000_0", "delta_0000001_0000002"],
        "aborted": [],
        "original_files": [],
    }
    assert out.count("\n") == 1  # one object on one line


def test_json_obsolete_in_hive_get_acid_state_order_not_by_name(capsys, tmp_path):
    # AcidUtils.getAcidState: bases superseded while children are processed in listing (name)
    # order, then original files, original directories, then the deltas findBestWorkingDeltas
    # shadows in delta order (delta_052_55 before delta_0060_60, as TestAcidUtils.testOverlapingDelta).
    root = tmp_path / "p"
    write_partition_tree(
        LocalFileIO(),
        str(root),
        [
            "base_10/bucket_0",
            "base_5/bucket_0",
            "base_50/bucket_0",
            "delta_40_60/bucket_0",
            "delta_052_55/bucket_0",
            "delta_0060_60/bucket_0",
            "delta_00061_61/bucket_0",
            "000001_0",
            "olddir/000000_0",
        ],
    )
    code, out, err = _run(capsys, "state", str(root), "--write-ids", f"db.t:100:{MAX}::", "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["base"] == "base_50"
    assert data["deltas"] == ["delta_40_60", "delta_00061_61"]
    assert data["obsolete"] == [
        "base_5",
        "base_10",
        "000001_0",
        "olddir",
        "delta_052_55",
        "delta_0060_60",
    ]


def test_json_with_write_ids(capsys, partition):
    code, out, _ = _run(capsys, "state", str(partition), "--write-ids", "db.t:5:5:5:4", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["deltas"] == ["delete_delta_0000003_0000003_0000", "delta_0000003_0000003_0000"]
    assert data["aborted"] == ["delta_0000004_0000004_0000"]


def test_json_compactor_view_stops_below_lowest_open(capsys, partition):
    # TxnUtils.createValidCompactWriteIdList: hwm 3 (lowest open 4 - 1), so delta 5 is not seen
    code, out, _ = _run(
        capsys, "state", str(partition), "--write-ids", "db.t:5:4:4:", "--compactor", "--json"
    )
    assert code == 0
    assert json.loads(out)["deltas"] == ["delete_delta_0000003_0000003_0000", "delta_0000003_0000003_0000"]


def test_json_txns_decide_visibility_suffix(capsys, tmp_path):
    root = tmp_path / "p"
    write_partition_tree(
        LocalFileIO(), str(root), ["base_0000003_v0000010/bucket_00000", "delta_0000001_0000003/bucket_00000"]
    )
    _, out, _ = _run(capsys, "state", str(root), "--txns", "20:10:10:", "--json")
    assert json.loads(out)["base"] is None
    _, out, _ = _run(capsys, "state", str(root), "--txns", f"20:{MAX}::", "--json")
    assert json.loads(out) == {
        "base": "base_0000003_v0000010",
        "deltas": [],
        "obsolete": ["delta_0000001_0000003"],
        "aborted": [],
        "original_files": [],
    }
    _, out, _ = _run(capsys, "state", str(root), "--txns", f"20:{MAX}::10", "--json")
    assert json.loads(out)["aborted"] == ["base_0000003_v0000010"]


def test_json_original_files_are_relative_paths(capsys, tmp_path):
    root = tmp_path / "t"
    write_partition_tree(
        LocalFileIO(),
        str(root),
        ["000001_0", "000000_0", "sub/000002_0", "delta_0000001_0000001_0000/bucket_00000"],
    )
    _, out, _ = _run(capsys, "state", str(root), "--json")
    data = json.loads(out)
    assert data["original_files"] == ["000000_0", "000001_0", "sub/000002_0"]
    assert data["deltas"] == ["delta_0000001_0000001_0000"]


def test_json_accepts_file_uri(capsys, partition):
    code, out, _ = _run(capsys, "state", f"file://{partition}", "--json")
    assert code == 0
    assert json.loads(out)["base"] == "base_0000002"


# --------------------------------------------------------------------------------------------
# The plain table.
# --------------------------------------------------------------------------------------------


def test_table_lists_every_role(capsys, partition, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # rich sizes the table to the terminal; keep names whole
    code, out, err = _run(capsys, "state", str(partition), "--write-ids", "db.t:5:5:5:4")
    assert (code, err) == (0, "")
    assert f"ACID state of {partition}" in out
    rows: dict[str, list[str]] = {}
    for line in out.splitlines():
        cells = [cell.strip() for cell in line.strip("│┃|").split("│") if cell.strip()]
        if len(cells) == 2:
            rows.setdefault(cells[0], []).append(cells[1])
    assert rows["base"] == ["base_0000002"]
    assert rows["delta"] == ["delete_delta_0000003_0000003_0000", "delta_0000003_0000003_0000"]
    assert sorted(rows["obsolete"]) == ["000000_0", "delta_0000001_0000002"]
    assert rows["aborted"] == ["delta_0000004_0000004_0000"]
    assert "_orc_acid_version" not in out


def test_table_of_empty_directory(capsys, tmp_path):
    code, out, _ = _run(capsys, "state", str(tmp_path))
    assert code == 0
    assert "(empty)" in out


# --------------------------------------------------------------------------------------------
# Errors: exit 1, one line on stderr naming the bad value, no traceback.
# --------------------------------------------------------------------------------------------


def _error_tree(tmp_path: Path, paths: list[str]) -> str:
    root = tmp_path / "bad"
    write_partition_tree(LocalFileIO(), str(root), paths)
    return str(root)


@pytest.mark.parametrize(
    ("paths", "extra", "expected"),
    [
        (["delta_x_1/bucket_00000"], [], "Invalid ACID name 'delta_x_1': min write ID 'x' is not a number"),
        (["delta_0000007_0000003/bucket_00000"], [], "min write ID 7 > max write ID 3"),
        (
            ["base_0000010_v0000020/bucket_00000"],
            ["--write-ids", "db.t:12:5:5:"],
            "Not enough history available for (12,5)",
        ),
        ([], ["--write-ids", "garbage"], "'garbage'"),
        ([], ["--write-ids", "db.t:x:1::"], "high watermark 'x' is not a number"),
        (
            [],
            ["--write-ids", "db.t:5:1:3:"],
            "'db.t:5:1:3:': min open ID 1 is not open (the lowest open ID is 3)",
        ),
        ([], ["--txns", "5:1:3:"], "'5:1:3:': min open ID 1 is not open (the lowest open ID is 3)"),
        (
            [],
            ["--txns", "7:5:q:"],
            "Invalid ValidTxnList (<hwm>:<minOpenTxn>:<open,..>:<aborted,..>) '7:5:q:'",
        ),
    ],
    ids=[
        "malformed_name",
        "reversed_range",
        "not_enough_history",
        "garbage_write_ids",
        "bad_hwm",
        "min_open_not_lowest_open",
        "txns_min_open_not_lowest_open",
        "bad_txns",
    ],
)
def test_errors_are_one_line_naming_the_value(capsys, tmp_path, paths, extra, expected):
    code, out, err = _run(capsys, "state", _error_tree(tmp_path, paths), *extra)
    assert code == 1
    assert out == ""
    assert err.startswith("acidflow: error: ")
    assert err.count("\n") == 1
    assert expected in err
    assert "Traceback" not in err


def test_missing_directory_error(capsys, tmp_path):
    missing = tmp_path / "nope"
    code, _, err = _run(capsys, "state", str(missing), "--json")
    assert code == 1
    assert err == (
        f"acidflow: error: Directory {str(missing)!r} does not exist; expected a table or partition directory\n"
    )


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["state"])
    assert info.value.code == 2
    assert "TABLE_DIR" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Real processes: python -m acid_core.cli, and the acidflow console script.
# --------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=_env(), timeout=60, check=False)


def test_python_dash_m_json_and_error(partition, tmp_path):
    done = _process(sys.executable, "-m", "acid_core.cli", "state", str(partition), "--json")
    assert (done.returncode, done.stderr) == (0, "")
    assert list(json.loads(done.stdout)) == JSON_KEYS
    failed = _process(sys.executable, "-m", "acid_core.cli", "state", str(tmp_path / "nope"))
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.count("\n") == 1
    assert failed.stderr.startswith("acidflow: error: Directory ")
    assert "Traceback" not in failed.stderr


def _console_scripts() -> list[Path]:
    """The installed ``acidflow`` scripts: next to this interpreter, on PATH, in the repo's .venv."""
    found = {Path(sys.executable).parent / "acidflow", REPO / ".venv" / "bin" / "acidflow"}
    on_path = shutil.which("acidflow")
    if on_path:
        found.add(Path(on_path))
    return sorted(script for script in found if script.is_file() and os.access(script, os.X_OK))


def test_acidflow_console_script(partition):
    # pyproject declares the script; the entry point it names must be the CLI's main.
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["acidflow"] == "acid_core.cli:main"
    module, function = scripts["acidflow"].split(":")
    done = _process(
        sys.executable,
        "-c",
        f"import sys; from {module} import {function}; sys.argv[0] = 'acidflow'; sys.exit({function}())",
        "state",
        str(partition),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["base"] == "base_0000002"
    # ...and every installed copy of the script behaves the same.
    for script in _console_scripts():
        done = _process(str(script), "state", str(partition), "--json")
        assert done.returncode == 0, (script, done.stderr)
        assert json.loads(done.stdout)["base"] == "base_0000002"
