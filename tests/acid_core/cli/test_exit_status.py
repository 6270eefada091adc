"""A printed ``acidflow: error:`` line always comes with a non-zero exit status.

The command below is a stand-in registered for the test only: it logs an error record (as the
cleaner does when it cannot even record a failure) and returns 0.
"""

from __future__ import annotations

import logging
import sys

import pytest

from acid_core.cli import registry
from acid_core.cli.app import main

_LOG = logging.getLogger("acid_core.compaction.cleaner")


def add_parser(subparsers):
    parser = subparsers.add_parser("log-and-succeed")
    parser.add_argument("--level", default="error")
    parser.set_defaults(handler=_log_and_succeed)
    return parser


def _log_and_succeed(args) -> int:
    _LOG.log(logging.getLevelName(args.level.upper()), "recording the failed cleaning of compaction 7 failed")
    return 0


@pytest.fixture
def command(monkeypatch):
    monkeypatch.setitem(registry.COMMANDS, "log-and-succeed", registry.Command(__name__, "test only"))
    assert __name__ in sys.modules


def test_main_command_that_logged_an_error_exits_1(command, capsys):
    assert main(["log-and-succeed"]) == 1
    assert capsys.readouterr().err == (
        "acidflow: error: recording the failed cleaning of compaction 7 failed\n"
    )


def test_main_command_that_logged_a_warning_exits_0(command, capsys):
    assert main(["log-and-succeed", "--level", "warning"]) == 0
    assert capsys.readouterr().err.startswith("acidflow: warning: ")
