"""The SQL session: split a script, parse each statement with sqlglot (Hive dialect), dispatch, run.

::

    SqlSession(warehouse).execute("CREATE TABLE ..; INSERT INTO ..; SELECT ..")
        1. split on ';' with sqlglot's Hive tokenizer (quotes and comments respected)
        2. parse EVERY statement first (``parse_statement``): a syntax error anywhere runs nothing
        3. run them in order, each DML statement in its own transaction (Hive's auto-commit);
           the first failure stops the script: its transaction is aborted, later ones never run

Invariants: a statement that fails leaves no visible row change (its transaction aborts);
statements before it stay committed, as in Hive's auto-commit mode.
Not here: the statements themselves (``statements`` and the extension modules, see ``registry``).
Errors: ``SqlSyntaxError``, ``UnsupportedStatementError``, and whatever a statement raises.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.dialects.hive import Hive
from sqlglot.errors import ParseError, TokenError

from acid_core.errors import SqlSyntaxError, UnsupportedStatementError
from acid_core.sql.registry import (
    ParsedStatement,
    StatementResult,
    StatementSpec,
    find_pattern_statement,
    find_statement,
    load_extensions,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa

    from acid_core.writes import Transaction, Warehouse

__all__ = ["PreparedStatement", "SqlSession", "parse_statement", "split_statements"]

_DIALECT = Hive()


def split_statements(text: str) -> list[str]:
    """Split a script into statement texts on ``;`` outside quotes and comments.

    Raises:
        SqlSyntaxError: an unterminated string or comment.

    >>> split_statements("SELECT 'a;b'; SHOW TABLES;")
    ["SELECT 'a;b'", 'SHOW TABLES']
    """
    try:
        tokens = _DIALECT.tokenize(text)
    except TokenError as e:
        raise SqlSyntaxError(text.strip(), str(e).strip().splitlines()[0]) from e
    statements: list[str] = []
    start: int | None = None
    end = 0
    for token in tokens:
        if token.token_type is TokenType.SEMICOLON:
            if start is not None:
                statements.append(text[start : end + 1].strip())
            start = None
            continue
        if start is None:
            start = token.start
        end = token.end
    if start is not None:
        statements.append(text[start : end + 1].strip())
    return statements


@dataclass(frozen=True, slots=True)
class PreparedStatement:
    """A parsed statement and its handler."""

    spec: StatementSpec
    statement: ParsedStatement


def parse_statement(text: str) -> PreparedStatement:
    """Parse one statement (no ``;``-separated script) and find its handler; nothing runs.

    A registered text pattern (``SHOW LOCKS``, ``ALTER TABLE .. ADD PARTITION``) wins; otherwise
    sqlglot parses the text (dialect hive) and the handler registered for its expression type runs it.
    Only the statements registered so far are known (``SqlSession`` loads the extension modules).

    Raises:
        SqlSyntaxError: the text does not parse.
        UnsupportedStatementError: it parses, but no registered statement handles it.

    >>> load_extensions()
    >>> parse_statement("UPDATE t SET a = 1").spec.name
    'update'
    """
    found = find_pattern_statement(text)
    if found is not None:
        spec, match = found
        return PreparedStatement(spec, ParsedStatement(text, match=match))
    sqlglot_logger = logging.getLogger("sqlglot")
    level = sqlglot_logger.level
    sqlglot_logger.setLevel(logging.ERROR)  # its "falling back to Command" warning is our error below
    try:
        expression = sqlglot.parse_one(text, read=_DIALECT)
    except ParseError as e:
        problem = " ".join(str(e).split("\n")[0].split()).rstrip(".")
        raise SqlSyntaxError(text, problem) from e
    except TokenError as e:
        raise SqlSyntaxError(text, str(e).strip().splitlines()[0]) from e
    finally:
        sqlglot_logger.setLevel(level)
    if isinstance(expression, exp.Command):
        raise UnsupportedStatementError(
            text,
            "acidflow does not run this kind of statement",
            "a supported statement (see `acidflow sql --help`)",
        )
    return PreparedStatement(find_statement(text, expression), ParsedStatement(text, expression))


class SqlSession:
    """Runs SQL against a warehouse. Not thread-safe: one session per thread.

    Args:
        warehouse: the warehouse (metastore, lock manager, files).
    """

    def __init__(self, warehouse: Warehouse) -> None:
        load_extensions()
        self._warehouse = warehouse
        self.transaction: Transaction | None = None

    @property
    def warehouse(self) -> Warehouse:
        """The warehouse session."""
        return self._warehouse

    def prepare(self, text: str) -> list[PreparedStatement]:
        """Split and parse a whole script (nothing runs).

        Raises:
            SqlSyntaxError / UnsupportedStatementError: for the first bad statement.
        """
        return [parse_statement(statement) for statement in split_statements(text)]

    def run(self, prepared: PreparedStatement) -> StatementResult:
        """Run one prepared statement."""
        return prepared.spec.handler(self, prepared.statement)

    def execute(self, text: str) -> list[StatementResult]:
        """Prepare then run every statement of ``text``; stops at the first failure (raised)."""
        return [self.run(prepared) for prepared in self.prepare(text)]

    def iter_execute(self, text: str) -> Iterator[StatementResult]:
        """``execute``, yielding each result as its statement completes."""
        for prepared in self.prepare(text):
            yield self.run(prepared)

    @contextmanager
    def write_transaction(self) -> Iterator[Transaction]:
        """A transaction for one statement: committed when the block succeeds, aborted otherwise."""
        with self._warehouse.transaction() as txn:
            self.transaction = txn
            try:
                yield txn
            finally:
                self.transaction = None

    def load_table(self, name: str, with_row_id: bool) -> pa.Table:
        """A table's rows at the running transaction's snapshot, or at the latest committed state."""
        if self.transaction is not None:
            return self.transaction.read(name, with_row_id=with_row_id)
        return self._warehouse.read(name, with_row_id=with_row_id)
