"""Start-up of ``acidflow`` (issue 14 goal 3): parsing a command imports no heavy library.

Checked in a fresh interpreter, by ``sys.modules`` after ``--help`` (where the handler would
start), never by time: the time is ``bench/bench_startup.py``'s. Also checked there: a real
embedded compaction loads no client of another deployment, and ``compact`` freezes the garbage
collector only in its own process (goal 23e's start-up; its time is ``bench/profile_cli_compact.py``'s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acid_core.cli.registry import COMMANDS

REPO = Path(__file__).resolve().parents[3]
HEAVY = ("pyarrow", "pandas", "numpy", "sqlalchemy", "alembic", "kazoo", "sqlglot", "duckdb", "pyorc", "rich")
_PROBE = """
import contextlib, io, json, sys
from acid_core.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*argv: str) -> set[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("_ARGCOMPLETE", None)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_top_level_help_imports_no_command_module_and_nothing_heavy():
    modules = _modules_after("--help")
    assert _heavy(modules) == []
    assert sorted(m for m in modules if m.startswith("acid_core.cli.") and m != "acid_core.cli.app") == [
        "acid_core.cli.registry"
    ]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_command_help_imports_only_its_module_and_nothing_heavy(command):
    modules = _modules_after(command, "--help")
    assert _heavy(modules) == []
    others = {c.module for name, c in COMMANDS.items() if name != command}
    assert sorted(modules & others) == []
    assert COMMANDS[command].module in modules


def test_every_registered_command_builds_with_its_examples():
    """The registry and the command modules agree: each module adds the command it is registered for."""
    from acid_core.cli.app import build_parser

    parser = build_parser()
    names = list(parser._subparsers._group_actions[0].choices)
    assert names == list(COMMANDS)


def test_compact_on_an_empty_queue_imports_no_pyarrow_numpy_or_pandas(tmp_path):
    # A real run (not --help): the embedded SQLite metastore needs sqlalchemy, the merge is not needed.
    from acid_core.metastore import open_metastore

    warehouse = tmp_path / "wh"
    open_metastore(None, str(warehouse)).close()
    modules = _modules_after("compact", "--warehouse", str(warehouse), "--executor", "embedded")
    assert "acid_core.compaction.worker" in modules
    assert [m for m in _heavy(modules) if m.split(".")[0] in ("pyarrow", "numpy", "pandas")] == []


_FREEZE_PROBE = """
import contextlib, gc, io, sys
from acid_core.cli import main
mode = sys.argv.pop(1)  # "own": main() reads sys.argv as the console script does
with contextlib.redirect_stdout(io.StringIO()):
    code = main() if mode == "own" else main(sys.argv[1:])
print(code, gc.get_freeze_count(), gc.isenabled())
"""


def _freeze_probe(mode: str, *argv: str) -> tuple[int, int, bool]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run(
        [sys.executable, "-c", _FREEZE_PROBE, mode, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    code, frozen, enabled = done.stdout.split()
    return int(code), int(frozen), enabled == "True"


@pytest.mark.parametrize(("mode", "frozen"), [("own", True), ("argv", False)], ids=["own-process", "argv"])
def test_compact_freezes_the_collector_only_in_its_own_process(tmp_path, mode, frozen):
    """The console script (``main()``) moves its start-up objects out of the collector's way; a
    ``main(argv)`` caller's interpreter is left as it was. Collection stays enabled in both."""
    from acid_core.metastore import open_metastore

    warehouse = tmp_path / "wh"
    open_metastore(None, str(warehouse)).close()
    code, count, enabled = _freeze_probe(
        mode, "compact", "--warehouse", str(warehouse), "--executor", "embedded"
    )
    assert code == 0
    assert (count > 0) is frozen
    assert enabled


_RUN_PROBE = """
import contextlib, io, json, sys
from acid_core.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""
# Clients of other deployments: an embedded warehouse (SQLite metastore, SQL locks, local files)
# has no use for them, so a compaction there must not pay for their import.
NOT_EMBEDDED = ("kazoo", "thrift", "boto3", "botocore", "structlog", "alembic", "sqlglot", "pyspark", "py4j")


def test_embedded_compaction_imports_no_client_of_another_deployment(tmp_path):
    from acid_core.writes.transaction import Warehouse
    from tests.acid_core.compaction.histories import random_history

    location = str(tmp_path / "wh")
    wh = Warehouse.open(location, heartbeat_seconds=None)
    random_history(wh, 5, partitioned=False, buckets=1, txns=4)
    wh.close()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = ["compact", "--table", "default.t", "--executor", "embedded", "--json", "--warehouse", location]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_PROBE, *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["code"] == 0
    assert [json.loads(line)["status"] for line in report["out"].splitlines()] == ["compacted"]
    assert sorted(m for m in report["modules"] if m.split(".")[0] in NOT_EMBEDDED) == []
