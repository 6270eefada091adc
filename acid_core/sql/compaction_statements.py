"""The compaction statements of ``acidflow sql``: ALTER TABLE .. COMPACT, SHOW COMPACTIONS, ABORT COMPACTIONS.

::

    ALTER TABLE t [PARTITION (k='v', ..)] COMPACT 'minor'|'major'|'rebalance' [AND WAIT]
        [CLUSTERED INTO n BUCKETS] [ORDER BY c [ASC|DESC] [NULLS FIRST|LAST], ..]   rebalance only
                                                        (Hive 4, HIVE-26716; CQ_NUMBER_OF_BUCKETS,
                                                        CQ_ORDER_BY); the clauses in any order
        [WITH OVERWRITE TBLPROPERTIES ('k'='v', ..)]     queue (Hive's TxnHandler.compact); AND WAIT
                                                        runs the worker until it is done and
                                                        reports the final state; as Hive 4's
                                                        AlterTableCompactOperation, a failed or
                                                        refused compaction is reported, and the
                                                        statement still succeeds (exit 0)
    SHOW COMPACTIONS [[db.]t [PARTITION (k='v')]] [TYPE 'minor'|'major'] [STATE 'failed'|..]
    ABORT COMPACTIONS id [id ..]                        initiated ones only, as Hive 4

Registered through ``acid_core.sql.registry`` by text patterns (sqlglot has no expression for
these). Output columns follow Hive 4's SHOW COMPACTIONS / ABORT COMPACTIONS, lower-cased.

Not here: queue rules (``metastore``), the work (``worker``).
Errors: ``InvalidPartitionError`` (spec does not match the table's keys, or none for a partitioned
table), ``NoSuchPartitionError`` (the spec names no existing partition; nothing is queued),
``NoSuchTableError``; ABORT COMPACTIONS reports per-ID errors as rows, as Hive does.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Final

import pyarrow as pa

from acid_core.compaction.rebalance import (
    MAX_REBALANCE_BUCKETS,
    check_bucket_count,
    format_order_by,
    parse_order_by,
)
from acid_core.compaction.worker import check_compaction_target, run_worker
from acid_core.errors import (
    AcidError,
    InvalidMetastoreRequestError,
    InvalidPartitionError,
    InvalidRebalanceError,
    UnsupportedStatementError,
)
from acid_core.metastore import CompactionState, CompactionType, format_partition_name
from acid_core.sql.registry import StatementResult, register_statement

if TYPE_CHECKING:
    from acid_core.locks import LockManager
    from acid_core.metastore import CompactionInfo, Metastore, Table
    from acid_core.sql.registry import ParsedStatement, StatementContext

__all__ = ["abort_compactions", "alter_table_compact", "show_compactions"]

_NAME: Final = r"[\w.`]+"
_SPEC: Final = r"PARTITION\s*\((?P<partition>[^)]*)\)"
_PAIR: Final = re.compile(r"""\s*`?(\w+)`?\s*=\s*('(?:[^']|'')*'|"(?:[^"]|"")*"|[^,\s]+)\s*(?:,|$)""")
_PROPERTY: Final = re.compile(r"""\s*('(?:[^']|'')*'|"[^"]*")\s*=\s*('(?:[^']|'')*'|"[^"]*")\s*(?:,|$)""")
_ACTIVE: Final = (CompactionState.INITIATED, CompactionState.WORKING)
_LONG_MAX: Final = 2**63 - 1
# Hive's SHOW COMPACTIONS state strings (TxnStore.*_RESPONSE).
_STATE_TEXT: Final = {
    CompactionState.INITIATED: "initiated",
    CompactionState.WORKING: "working",
    CompactionState.READY_FOR_CLEANING: "ready for cleaning",
    CompactionState.SUCCEEDED: "succeeded",
    CompactionState.FAILED: "failed",
    CompactionState.DID_NOT_INITIATE: "did not initiate",
    CompactionState.REFUSED: "refused",
    CompactionState.ABORTED: "aborted",
}


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1].replace(text[0] * 2, text[0])
    return text


def _pairs(pattern: re.Pattern[str], text: str, statement: str, what: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = pattern.match(text, position)
        if match is None or match.end() == position:
            raise UnsupportedStatementError(
                statement, f"cannot read the {what} {text!r}", "k='v' pairs, comma-separated"
            )
        pairs.append((_unquote(match.group(1)), _unquote(match.group(2))))
        position = match.end()
    return pairs


def _partition_name(table: Table, spec: str | None, statement: str) -> str | None:
    keys = [key.name.lower() for key in table.partition_keys]
    if spec is None:
        if keys:
            raise InvalidPartitionError(
                table.full_name,
                None,
                f"PARTITION ({', '.join(k + '=...' for k in keys)}) for a partitioned table",
            )
        return None
    values = {k.lower(): v for k, v in _pairs(_PAIR, spec, statement, "partition spec")}
    if sorted(values) != sorted(keys):
        raise InvalidPartitionError(table.full_name, spec, f"a value for each partition key {keys}")
    return format_partition_name(keys, [values[k] for k in keys])


@register_statement(
    "alter_table_compact",
    pattern=(
        rf"ALTER\s+TABLE\s+(?P<table>{_NAME})(?:\s+{_SPEC})?\s+COMPACT\s+'(?P<type>minor|major|rebalance)'"
        r"(?P<clauses>(?:\s+(?:AND\s+WAIT|CLUSTERED\s+INTO\s+\S+\s+BUCKETS|ORDER\s+BY\s+(?:(?!\s+(?:AND\s+WAIT|CLUSTERED\s"
        r"|WITH\s+OVERWRITE)\b).)+))*)"
        r"(?:\s+WITH\s+OVERWRITE\s+TBLPROPERTIES\s*\((?P<properties>.*)\))?\s*;?"
    ),
)
def alter_table_compact(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """ALTER TABLE .. COMPACT: queue a manual compaction; AND WAIT runs the worker until it is done."""
    match = statement.match
    if match is None:
        raise UnsupportedStatementError(statement.text, "no pattern match", "ALTER TABLE t COMPACT 'major'")
    metastore = context.warehouse.metastore
    table = metastore.get_table(match.group("table").replace("`", ""))
    partition = _partition_name(table, match.group("partition"), statement.text)
    check_compaction_target(metastore, table, partition)  # Hive: INVALID_PARTITION_SPEC, nothing queued
    properties = dict(_pairs(_PROPERTY, match.group("properties") or "", statement.text, "TBLPROPERTIES"))
    kind = CompactionType(match.group("type").lower())
    wait, number_of_buckets, order_by = _compact_clauses(match.group("clauses") or "", kind, table)
    compaction_id = metastore.enqueue_compaction(
        table.full_name,
        partition,
        kind,
        properties=properties or None,
        initiator_id="manual",
        number_of_buckets=number_of_buckets,
        order_by=order_by,
    )
    where = table.full_name if partition is None else f"{table.full_name} partition {partition}"
    if not wait:
        return StatementResult(
            "alter_table_compact",
            message=f"Compaction enqueued with id {compaction_id} ({kind.value}, {where})",
        )
    info = _wait(metastore, compaction_id, context.warehouse.lock_manager)
    message = f"Compaction {compaction_id} ({kind.value}, {where}): {_STATE_TEXT[info.state]}"
    if info.error_message:
        message += f": {info.error_message}"
    return StatementResult("alter_table_compact", message=message)


_CLAUSE: Final = re.compile(
    r"\s+(?:(?P<wait>AND\s+WAIT)|CLUSTERED\s+INTO\s+(?P<buckets>\S+)\s+BUCKETS"
    r"|ORDER\s+BY\s+(?P<order>(?:(?!\s+(?:AND\s+WAIT|CLUSTERED\s)\b).)+))",
    re.IGNORECASE | re.DOTALL,
)


def _compact_clauses(text: str, kind: CompactionType, table: Table) -> tuple[bool, int, str | None]:
    """AND WAIT, CLUSTERED INTO n BUCKETS and ORDER BY, in any order (Hive 4's grammar)."""
    wait, number_of_buckets, order_by = False, 0, None
    for clause in _CLAUSE.finditer(text):
        if clause.group("wait"):
            wait = True
        elif clause.group("buckets") is not None:
            raw = clause.group("buckets")
            if not raw.isdigit():
                raise InvalidRebalanceError(
                    "number of buckets", raw, f"an integer from 1 to {MAX_REBALANCE_BUCKETS}"
                )
            number_of_buckets = check_bucket_count(int(raw))
        else:
            keys = parse_order_by(clause.group("order"), [column.name for column in table.columns])
            order_by = format_order_by(keys)
    if kind is not CompactionType.REBALANCE and (number_of_buckets or order_by):
        # Hive 4's Worker logs a warning and ignores them; acidflow refuses, nothing is queued.
        raise InvalidRebalanceError(
            "clause for a " + repr(kind.value) + " compaction",
            "CLUSTERED INTO" if number_of_buckets else "ORDER BY",
            "CLUSTERED INTO n BUCKETS and ORDER BY only with COMPACT 'rebalance'",
        )
    return wait, number_of_buckets, order_by


def _wait(metastore: Metastore, compaction_id: int, lock_manager: LockManager) -> CompactionInfo:
    # The embedded AND WAIT: run queued compactions (oldest first) until this one has left the queue.
    # Each holds its partition's maintenance lock, as `acidflow compact` does; killed, this process's
    # entry and lock session are recovered by the next worker run (dead local process).
    while True:
        info = metastore.get_compaction(compaction_id)
        if info.state not in _ACTIVE:
            return info
        if (
            # A failed compaction is this statement's result (its message), not an error line.
            not run_worker(
                metastore, max_compactions=1, lock_manager=lock_manager, failure_log_level=logging.INFO
            )
            and metastore.get_compaction(compaction_id).state in _ACTIVE
        ):
            return metastore.get_compaction(compaction_id)  # claimed by another live worker


def _compaction_rows(infos: list[CompactionInfo]) -> pa.Table:
    def ms(seconds: float | None) -> int | None:
        return None if seconds is None else round(seconds * 1000)

    def duration(info: CompactionInfo) -> int | None:
        if info.start_time is None or info.end_time is None:
            return None
        return round((info.end_time - info.start_time) * 1000)

    return pa.table(
        {
            "compactionid": pa.array([i.id for i in infos], pa.int64()),
            "dbname": pa.array([i.table.split(".", 1)[0] for i in infos], pa.string()),
            "tabname": pa.array([i.table.split(".", 1)[-1] for i in infos], pa.string()),
            "partname": pa.array([i.partition for i in infos], pa.string()),
            "type": pa.array([i.compaction_type.value.upper() for i in infos], pa.string()),
            "state": pa.array([_STATE_TEXT[i.state] for i in infos], pa.string()),
            "workerid": pa.array([i.worker_id for i in infos], pa.string()),
            "enqueuetime": pa.array([ms(i.enqueue_time) for i in infos], pa.int64()),
            "starttime": pa.array([ms(i.start_time) for i in infos], pa.int64()),
            "duration": pa.array([duration(i) for i in infos], pa.int64()),
            "errormessage": pa.array([i.error_message for i in infos], pa.string()),
            "initiatorid": pa.array([i.initiator_id for i in infos], pa.string()),
            "txnid": pa.array([i.txn_id for i in infos], pa.int64()),
            "nexttxnid": pa.array([i.next_txn_id for i in infos], pa.int64()),
            "committime": pa.array([ms(i.commit_time) for i in infos], pa.int64()),
            "highestwriteid": pa.array([i.highest_write_id for i in infos], pa.int64()),
        }
    )


@register_statement(
    "show_compactions",
    pattern=(
        rf"SHOW\s+COMPACTIONS(?:\s+(?!TYPE\b|STATE\b)(?P<table>{_NAME})(?:\s+{_SPEC})?)?"
        r"(?:\s+TYPE\s+'(?P<type>\w+)')?(?:\s+STATE\s+'(?P<state>[\w ]+)')?\s*;?"
    ),
)
def show_compactions(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """SHOW COMPACTIONS with Hive 4's filters: table (and partition), TYPE and STATE."""
    match = statement.match
    if match is None:
        raise UnsupportedStatementError(statement.text, "no pattern match", "SHOW COMPACTIONS")
    metastore = context.warehouse.metastore
    table_name = match.group("table")
    partition: str | None = None
    full_name: str | None = None
    if table_name is not None:
        table = metastore.get_table(table_name.replace("`", ""))
        full_name = table.full_name
        if match.group("partition") is not None:
            partition = _partition_name(table, match.group("partition"), statement.text)
    infos = metastore.show_compactions(full_name)
    if partition is not None:
        infos = [i for i in infos if i.partition == partition]
    if match.group("type"):
        wanted = match.group("type").lower()
        if wanted not in ("minor", "major", "rebalance"):
            raise UnsupportedStatementError(
                statement.text, f"unknown compaction type {wanted!r}", "'minor', 'major' or 'rebalance'"
            )
        infos = [i for i in infos if i.compaction_type.value == wanted]
    if match.group("state"):
        wanted = match.group("state").lower().replace("_", " ")
        if wanted not in _STATE_TEXT.values():
            raise UnsupportedStatementError(
                statement.text,
                f"unknown compaction state {wanted!r}",
                f"one of {sorted(_STATE_TEXT.values())}",
            )
        infos = [i for i in infos if _STATE_TEXT[i.state] == wanted]
    return StatementResult("show_compactions", rows=_compaction_rows(infos))


@register_statement("abort_compactions", pattern=r"ABORT\s+COMPACTIONS\s+(?P<ids>\d+(?:[\s,]+\d+)*)\s*;?")
def abort_compactions(context: StatementContext, statement: ParsedStatement) -> StatementResult:
    """ABORT COMPACTIONS id ..: abort initiated compactions; one result row per ID (Hive 4)."""
    match = statement.match
    if match is None:
        raise UnsupportedStatementError(statement.text, "no pattern match", "ABORT COMPACTIONS 1 2")
    ids = [int(t) for t in match.group("ids").replace(",", " ").split()]
    for compaction_id in ids:
        if not 1 <= compaction_id <= _LONG_MAX:  # Hive's parser reads each ID as a long
            raise InvalidMetastoreRequestError(
                "compaction ID", compaction_id, f"a positive integer <= {_LONG_MAX} (a 64-bit long)"
            )
    statuses: list[str] = []
    messages: list[str] = []
    for compaction_id in ids:
        try:
            context.warehouse.metastore.abort_compaction(compaction_id)
        except AcidError as error:
            statuses.append("Error")
            messages.append(str(error))
        else:
            statuses.append("Success")
            messages.append("Successfully aborted compaction")
    rows = pa.table(
        {
            "compactionid": pa.array(ids, pa.int64()),
            "status": pa.array(statuses, pa.string()),
            "message": pa.array(messages, pa.string()),
        }
    )
    return StatementResult("abort_compactions", rows=rows)
