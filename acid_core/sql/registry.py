r"""The statement registry: which executor runs a SQL statement (the SQL front end's extension point).

::

    text ──split──> "SHOW LOCKS"        matches a registered pattern ──> that handler
                    "UPDATE t SET .."   sqlglot (dialect hive) ──> exp.Update ──> the handler
                                        registered for exp.Update (first whose predicate holds)

Statements sqlglot cannot parse into a typed expression (``SHOW TRANSACTIONS``, ``ABORT
TRANSACTIONS 1 2``, ``ALTER TABLE t COMPACT 'major'``) are registered by a regular expression
matched against the whole statement text (case-insensitive); everything else by expression type.
Patterns are tried first, in registration order.

Adding a statement (issue 5: SHOW LOCKS / EXPLAIN LOCKS; issue 6: ALTER TABLE .. COMPACT, SHOW
COMPACTIONS, ABORT COMPACTIONS) is one decorated function in a module listed in
``EXTENSION_MODULES``; the engine imports those modules that exist::

    @register_statement("show_locks", pattern=r"SHOW\\s+LOCKS(?:\\s+(?P<table>\\S+))?(?P<extended>\\s+EXTENDED)?")
    def show_locks(context: StatementContext, statement: ParsedStatement) -> StatementResult:
        ...  # context.warehouse.lock_manager.show(...) -> StatementResult(rows=pa.table(...))

Invariants: a statement text is dispatched to at most one handler; a name is registered once.
Not here: executing anything (``statements``), parsing (``engine``).
Errors: ``UnsupportedStatementError`` when nothing handles a statement.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from acid_core.errors import UnsupportedStatementError

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlglot import exp

    from acid_core.writes import Warehouse

__all__ = [
    "EXTENSION_MODULES",
    "Handler",
    "ParsedStatement",
    "StatementContext",
    "StatementResult",
    "StatementSpec",
    "find_pattern_statement",
    "find_statement",
    "load_extensions",
    "register_statement",
    "registered_statements",
]

EXTENSION_MODULES: Final = (
    "acid_core.sql.catalog_statements",
    "acid_core.sql.statements",
    "acid_core.sql.lock_statements",
    "acid_core.sql.compaction_statements",
)
"""Modules whose import registers statements; missing ones are skipped (not written yet)."""


@dataclass(frozen=True, slots=True)
class StatementResult:
    """What a statement produced: rows to print, and/or a one-line message (to stderr).

    Attributes:
        kind: the registered statement name (``insert``, ``select``, ...).
        rows: a result set, or None.
        message: e.g. ``"3 rows inserted into default.employee (write ID 1, txn 1)"``.
    """

    kind: str
    rows: pa.Table | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedStatement:
    """One statement: its text, and the sqlglot expression or the pattern match that selected it."""

    text: str
    expression: exp.Expr | None = None
    match: re.Match[str] | None = None


class StatementContext(Protocol):
    """What a handler gets: the warehouse (metastore, lock manager, files) and the SQL engine."""

    @property
    def warehouse(self) -> Warehouse:
        """The warehouse session."""
        ...


Handler = Callable[[StatementContext, ParsedStatement], StatementResult]


@dataclass(frozen=True, slots=True)
class StatementSpec:
    """A registered statement: a name, a handler, and how it is recognized."""

    name: str
    handler: Handler
    pattern: re.Pattern[str] | None = None
    expression_type: type[exp.Expr] | None = None
    predicate: Callable[[exp.Expr], bool] | None = None


_REGISTRY: dict[str, StatementSpec] = {}


def register_statement(
    name: str,
    *,
    pattern: str | None = None,
    expression_type: type[exp.Expr] | None = None,
    predicate: Callable[[exp.Expr], bool] | None = None,
) -> Callable[[Handler], Handler]:
    """Register a handler by a text pattern (full match, case-insensitive) or an expression type.

    Raises:
        UnsupportedStatementError: neither or both of ``pattern`` and ``expression_type`` given.
    """
    if (pattern is None) == (expression_type is None):
        raise UnsupportedStatementError(
            name, "a registration needs one recognizer", "pattern= or expression_type="
        )

    def decorate(handler: Handler) -> Handler:
        compiled = re.compile(pattern, re.IGNORECASE | re.DOTALL) if pattern is not None else None
        _REGISTRY[name] = StatementSpec(name, handler, compiled, expression_type, predicate)
        return handler

    return decorate


def registered_statements() -> list[StatementSpec]:
    """Every registered statement, in registration order."""
    return list(_REGISTRY.values())


def load_extensions() -> None:
    """Import the ``EXTENSION_MODULES`` that exist (each registers its statements once)."""
    for module in EXTENSION_MODULES:
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)


def find_pattern_statement(text: str) -> tuple[StatementSpec, re.Match[str]] | None:
    """The first pattern-registered statement whose pattern matches all of ``text``."""
    for spec in _REGISTRY.values():
        if spec.pattern is not None:
            match = spec.pattern.fullmatch(text.strip())
            if match is not None:
                return spec, match
    return None


def find_statement(text: str, expression: exp.Expr) -> StatementSpec:
    """The handler for a parsed expression.

    Raises:
        UnsupportedStatementError: no registered statement handles it.
    """
    for spec in _REGISTRY.values():
        matches = spec.expression_type is not None and isinstance(expression, spec.expression_type)
        if matches and (spec.predicate is None or spec.predicate(expression)):
            return spec
    names = sorted(_REGISTRY)
    raise UnsupportedStatementError(
        text,
        "acidflow does not run this kind of statement",
        f"one of the supported statements: {', '.join(names)}",
    )
