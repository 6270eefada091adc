"""The ``acidflow`` command line: one module per command, argument parsing and output only.

::

    acid_core/cli/
        app.py         main(): picks the command, imports only its module, one-line errors
        registry.py    the commands: module, one-line help, --help examples; the --json alias
        options.py     options shared by the commands: --metastore, --warehouse, --json, snapshots
        state.py  read.py  sql.py  initiate.py  compact.py  clean.py  lease.py  lock.py  completion.py
        progress.py    progress lines of ``acidflow compact``

    acidflow state TABLE_DIR [--write-ids LIST] [--txns LIST] [--compactor] [--json]
    acidflow read TABLE_DIR [--write-ids LIST] [--row-id] [--columns a,b] [--format ...] [--limit N]
    acidflow sql [--format ...] STATEMENT... | -f FILE
    acidflow initiate [--dry-run] | compact ... | clean [--dry-run]
    acidflow lease take TABLE [--ttl SECONDS] | release ID | list
    acidflow lock acquire OBJECT... --mode S|X [--hold S] [--retries N] [--wait S] | show
    acidflow completion bash|zsh|fish     shell completion (eval "$(acidflow completion bash)")

Every command takes ``--metastore URL``, ``--warehouse DIR`` and ``--json`` (``options``); each
command's ``--help`` ends with examples (``registry.EXAMPLES``).
Importing this package is cheap: it imports no command module and nothing heavy (pyarrow,
sqlalchemy, alembic, kazoo, sqlglot); ``main`` loads what the selected command needs.
Not here: anything a library user would also need (that lives in ``acid_core``).
Errors: ``main`` returns the exit code (see ``app``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``acidflow`` command (the console script); returns the exit code."""
    from acid_core.cli.app import main as run

    return run(argv)
