"""``acidflow completion SHELL``: the shell code that completes acidflow's commands and options.

::

    eval "$(acidflow completion bash)"         bash, zsh, fish, tcsh, powershell (argcomplete)

``autocomplete(parser)`` answers the shell's request (``_ARGCOMPLETE`` set) and exits.
``--metastore``, ``--warehouse`` and ``--json`` are accepted, like on every command, and ignored.
Not here: the commands themselves. Errors: none (argparse refuses an unknown shell, exit 2).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Final

from acid_core.cli.options import add_common_options
from acid_core.cli.registry import add_command_parser

if TYPE_CHECKING:
    import argparse

__all__ = ["SHELLS", "add_parser", "autocomplete", "run_completion"]

SHELLS: Final = ("bash", "zsh", "fish", "tcsh", "powershell")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``acidflow completion SHELL`` (handler ``run_completion``)."""
    parser = add_command_parser(
        subparsers,
        "completion",
        description="Print the completion script for SHELL (argcomplete); source it or eval it.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell")
    add_common_options(
        parser,
        json_help="ignored: the script is shell code",
        metastore_help="ignored: completion needs no metastore",
        warehouse_help="ignored: completion needs no warehouse",
    )
    parser.set_defaults(handler=run_completion)
    return parser


def run_completion(args: argparse.Namespace) -> int:
    """Print ``argcomplete``'s shell code for ``acidflow``."""
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["acidflow"], shell=args.shell))
    return 0


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer a shell's completion request (``_ARGCOMPLETE`` set) and exit; otherwise do nothing."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser)
