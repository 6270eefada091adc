"""``acidflow``'s help examples (each one parses), ``--json`` on every command printing rows, completion."""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import subprocess
import sys

import pytest

from acid_core.cli.app import build_parser, main
from acid_core.cli.registry import EXAMPLES


def _leaf_commands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _leaf_commands(child, (*prefix, name))
            return
    yield prefix, parser


def _example_commands():
    for command, text in EXAMPLES.items():
        for line in text.splitlines():
            words = shlex.split(line.split("  #")[0], comments=False)
            if words and words[0] == "acidflow":
                cut = words.index(">") if ">" in words else len(words)
                yield pytest.param(command, words[1:cut], id=" ".join(words[1:cut])[:60])


def test_every_command_help_ends_with_examples():
    top = build_parser()
    commands = {name for name, _ in top._subparsers._group_actions[0].choices.items()}
    assert commands == set(EXAMPLES)
    for name in commands:
        text = top._subparsers._group_actions[0].choices[name].format_help()
        assert "\nexamples:\n  acidflow " in text or "\nexamples:\n  eval " in text, name


@pytest.mark.parametrize(("command", "argv"), list(_example_commands()))
def test_help_example_parses_with_the_real_parser(command, argv):
    args = build_parser().parse_args(argv)
    assert args.command == command
    assert callable(args.handler)


def test_every_command_printing_rows_accepts_json():
    missing = []
    for path, parser in _leaf_commands(build_parser()):
        options = {o for action in parser._actions for o in action.option_strings}
        if path[0] != "completion" and "--json" not in options:
            missing.append(" ".join(path))
    assert missing == []


def test_json_alias_is_format_jsonl_for_read_sql_and_lock():
    parser = build_parser()
    assert parser.parse_args(["read", "/wh/t", "--json"]).format == "jsonl"
    assert parser.parse_args(["sql", "SELECT 1", "--json"]).format == "jsonl"
    assert parser.parse_args(["lock", "show", "--json"]).format == "jsonl"
    assert parser.parse_args(["read", "/wh/t"]).format == "jsonl"  # read's default is unchanged
    assert parser.parse_args(["sql", "SELECT 1"]).format == "table"


def test_sql_and_read_json_print_one_object_per_row(tmp_path, capsys):
    warehouse = str(tmp_path / "wh")
    statements = [
        "CREATE TABLE t (id int, name string) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
    ]
    assert main(["sql", "--warehouse", warehouse, *statements]) == 0
    capsys.readouterr()
    assert main(["sql", "--warehouse", warehouse, "--json", "SELECT id, name FROM t"]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == [
        {"id": 1, "name": "a"},
        {"id": 2, "name": "b"},
    ]
    assert main(["read", os.path.join(warehouse, "t"), "--json", "--columns", "id"]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == [{"id": 1}, {"id": 2}]


def test_lease_release_json(tmp_path, capsys):
    warehouse = str(tmp_path / "wh")
    main(
        [
            "sql",
            "--warehouse",
            warehouse,
            "CREATE TABLE t (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')",
        ]
    )
    assert main(["lease", "take", "t", "--warehouse", warehouse, "--json"]) == 0
    lease_id = json.loads(capsys.readouterr().out.splitlines()[-1])["lease_id"]
    assert main(["lease", "release", str(lease_id), "--warehouse", warehouse, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"lease_id": lease_id, "released": True}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_shell_code_for_acidflow(shell, capsys):
    assert main(["completion", shell]) == 0
    code = capsys.readouterr().out
    assert "acidflow" in code
    assert "_ARGCOMPLETE" in code


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("acidflow comp", {"compact", "completion"}),
        ("acidflow compact --pro", {"--progress"}),  # --progress-interval is hidden
        ("acidflow lease ", {"take", "release", "list"}),
    ],
)
def test_completion_answers_the_shell_protocol(tmp_path, line, expected):
    out = tmp_path / "completions"
    env = {
        **os.environ,
        "_ARGCOMPLETE": "1",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
    }
    result = subprocess.run(
        [sys.executable, "-m", "acid_core.cli"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert {w.strip() for w in out.read_text().split("\x0b")} - {""} >= expected


def test_every_command_accepts_the_common_options():
    """--metastore, --warehouse and --json on every command (issue 15): one set of options fits all."""
    missing = []
    for path, parser in _leaf_commands(build_parser()):
        options = {o for action in parser._actions for o in action.option_strings}
        missing.extend(
            f"{' '.join(path)} {o}" for o in ("--metastore", "--warehouse", "--json") if o not in options
        )
    assert missing == []


def test_a_command_that_ignores_an_option_says_so_in_its_help():
    text = build_parser()._subparsers._group_actions[0].choices["completion"].format_help()
    assert text.count("ignored") == 3


def test_lock_show_uses_the_warehouse_given_not_the_default(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACIDFLOW_LOCK_MANAGER", raising=False)
    monkeypatch.delenv("ACIDFLOW_ZOOKEEPER", raising=False)
    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.delenv("ACIDFLOW_WAREHOUSE", raising=False)
    warehouse = tmp_path / "wh"
    assert main(["lock", "acquire", "db.t", "--mode", "S", "--warehouse", str(warehouse), "--json"]) == 0
    assert [json.loads(x)["object"] for x in capsys.readouterr().out.splitlines()[:1]] == ["db.t"]
    assert main(["lock", "show", "--warehouse", str(warehouse)]) == 0
    assert capsys.readouterr().out == "no locks held\n"
    assert (warehouse / ".acidflow" / "metastore.sqlite").is_file()
    assert not (tmp_path / "warehouse").exists()  # the default ./warehouse was never used


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(
    ("argv", "note"),
    [
        (["initiate", "--dry-run"], "acidflow initiate: no ACID table to consider\n"),
        (
            ["compact", "--executor", "embedded"],
            "acidflow compact: nothing to compact (the queue is empty)\n",
        ),
        (["clean"], "acidflow clean: nothing to clean (no compaction is ready for cleaning)\n"),
        (["lease", "list"], "acidflow lease: no reader lease\n"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_nothing_found_is_said_to_a_person_and_not_to_scripts(tmp_path, monkeypatch, capsys, argv, note):
    warehouse = str(tmp_path / "wh")
    assert main(["sql", "--warehouse", warehouse, "CREATE DATABASE d"]) == 0
    capsys.readouterr()
    assert main([*argv, "--warehouse", warehouse]) == 0  # stderr is not a terminal: nothing
    assert capsys.readouterr() == ("", "")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*argv, "--warehouse", warehouse]) == 0
    assert terminal.getvalue() == note
    assert capsys.readouterr().out == ""
    terminal.truncate(0)
    terminal.seek(0)
    assert main([*argv, "--warehouse", warehouse, "--json"]) == 0
    assert terminal.getvalue() == ""
