"""The SQL front end: Hive SQL parsed with sqlglot, evaluated by DuckDB over Arrow, written as ACID.

::

    acidflow sql "UPDATE employee SET salary = 7000 WHERE id = 2"
        (acid_core.cli.sql: arguments, output format (table | jsonl | csv), exit status)
        engine       split on ';', parse every statement (sqlglot, dialect hive), dispatch
        registry     statement name -> handler; the extension point for SHOW LOCKS / EXPLAIN LOCKS
                     (issue 5) and ALTER TABLE .. COMPACT / SHOW COMPACTIONS (issue 6)
        catalog_statements   DDL, SHOW, DESCRIBE: the metastore, with location checks
        statements   SELECT and the writes: locks, snapshot reads, DuckDB evaluation, a transaction
        lock_statements, compaction_statements   SHOW/EXPLAIN LOCKS; ALTER TABLE .. COMPACT, ...
        statement_support   what the handlers share (dialect, expression, locks)
        evaluate     DuckDB over the reader's Arrow tables; type checks and casts to the column types
        output       printing result sets

Import from the submodules (``acid_core.sql.engine.SqlSession``, ``acid_core.sql.registry``):
this package imports nothing, so ``acidflow`` builds its parser without loading sqlglot or DuckDB.

Not here: files and transactions (``acid_core.writes``), the metastore, the lock manager.
Errors: every failure is an ``AcidError`` (``SqlSyntaxError``, ``NoSuchTableError``,
``NoSuchColumnError``, ``SqlTypeError``, ``ValueOutOfRangeError``, ``SqlExecutionError``,
``UnsupportedStatementError``, ``CommitConflictError``, lock errors).
"""

from __future__ import annotations

__all__: list[str] = []
