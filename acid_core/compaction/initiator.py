"""Should this table or partition be compacted now, and how? Hive's ``Initiator``, as a pure function.

::

    PartitionFacts (sizes and counts from a directory state)  ─┐
    InitiatorConfig (defaults, then TBLPROPERTIES overrides)  ─┼─> decide_compaction ─> Decision
    queue and history of this partition (CompactionRecord)    ─┘        type or None, reason, numbers

Rules, in Hive's order (``Initiator.run`` / ``checkForCompaction`` / ``determineCompactionType``,
``CompactionTxnHandler.checkFailedCompactions``, Hive 4 ``hive.compactor.aborted.txn.time.threshold``):

1. ``NO_AUTO_COMPACTION=true`` in TBLPROPERTIES (any case): never auto-compacted.
2. An initiated or working compaction of the same table/partition: skip (one waiting for the
   cleaner does not block a new one).
3. The last ``failed_threshold`` (2) finished compactions all failed (or did not initiate), the
   newest of them less than ``failed_retry_seconds`` (7 days) ago: skip. A manual compaction that
   succeeds afterwards ends the streak, so auto-compaction resumes.
4. More than ``aborted_threshold`` (1000) aborted directories, or one older than
   ``aborted_time_threshold_seconds`` (12 h): major.
5. Base bytes (base plus original files) of 0 with deltas present: "no base". Otherwise delta bytes
   / base bytes above ``delta_pct_threshold`` (0.1): major.
6. More than ``delta_num_threshold`` (10) current deltas: major without a base or for insert-only
   tables, else minor. Otherwise: not now.
7. acidflow's own, off by default (Hive 4 only rebalances on request): with
   ``acidflow.compactor.rebalance.buckets`` N > 0, a major decision for a full-ACID table that is
   not explicitly bucketed becomes a rebalance into N buckets (same reason, same numbers).

Which partitions a cycle lists (``listing_reason``, Hive's ``findPotentialCompactions``: only
tables/partitions with writes or aborts in ``COMPLETED_TXN_COMPONENTS`` / ``TXN_COMPONENTS`` since
the previous cycle). A table's first cycle, or a cycle whose settings differ from the previous
one's (``initiator_fingerprint``: thresholds, TBLPROPERTIES, location, type, creation time), lists
every partition. Otherwise a partition is listed only when one of these holds, each against
``since`` = the previous cycle's start minus ``INITIATOR_LOOKBACK_SECONDS`` (writers' clocks and
commit latency):

* it was created at or after ``since`` (a new partition);
* the table was written since and the metastore cannot tell which partition (``whole_table``: a
  Hive Metastore reached by Thrift only knows a table's write-ID list);
* a write committed at or after ``since``, or an aborted write not yet cleaned (the aborted
  count and age rules change with time alone);
* a compaction of it is queued, working or ready for cleaning, or finished at or after ``since``,
  or its newest finished compaction failed (the failed-retry rule changes with time alone; Hive 4's
  query also always returns a partition whose newest ``COMPLETED_COMPACTIONS`` row is 'a' or 'f').

Every input of ``decide_compaction`` is then unchanged for a skipped partition, so its decision is
the previous cycle's "not now" (a "compact" decision left a queued compaction, which is listed).

Overrides: ``compactorthreshold.hive.compactor.delta.num.threshold``,
``compactorthreshold.hive.compactor.delta.pct.threshold``,
``compactorthreshold.hive.compactor.abortedtxn.threshold`` (and the time, failed-count and retry
settings under the same prefix, and ``compactorthreshold.acidflow.compactor.rebalance.buckets``) in
TBLPROPERTIES replace the defaults for that table.

Invariants: every Decision, including "not now", names its reason and the numbers behind it; the
result depends only on the arguments (the clock is the ``now`` argument).
Not here: listing files, reading the queue (the worker's shell gathers the facts), enqueuing.
Errors: ``InvalidCompactionConfigError`` for an override that does not parse or is out of range.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from acid_core.errors import InvalidCompactionConfigError

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

__all__ = [
    "ABORTED_TXN_THRESHOLD",
    "ABORTED_TXN_TIME_THRESHOLD",
    "COMPACTOR_THRESHOLD_PREFIX",
    "DELTA_NUM_THRESHOLD",
    "DELTA_PCT_THRESHOLD",
    "FAILED_COMPACTS_THRESHOLD",
    "FAILED_RETRY_TIME",
    "INITIATOR_LOOKBACK_SECONDS",
    "REBALANCE_BUCKETS",
    "NO_AUTO_COMPACTION",
    "CompactionRecord",
    "CompactionType",
    "Decision",
    "DecisionReason",
    "InitiatorConfig",
    "ListingReason",
    "PartitionFacts",
    "decide_compaction",
    "initiator_fingerprint",
    "is_no_auto_compaction",
    "listing_reason",
]

COMPACTOR_THRESHOLD_PREFIX: Final = "compactorthreshold."
DELTA_NUM_THRESHOLD: Final = "hive.compactor.delta.num.threshold"
DELTA_PCT_THRESHOLD: Final = "hive.compactor.delta.pct.threshold"
ABORTED_TXN_THRESHOLD: Final = "hive.compactor.abortedtxn.threshold"
ABORTED_TXN_TIME_THRESHOLD: Final = "hive.compactor.aborted.txn.time.threshold"
FAILED_COMPACTS_THRESHOLD: Final = "hive.compactor.initiator.failed.compacts.threshold"
FAILED_RETRY_TIME: Final = "hive.compactor.initiator.failed.retry.time"
REBALANCE_BUCKETS: Final = "acidflow.compactor.rebalance.buckets"
"""acidflow's own (Hive 4 never initiates a rebalance): a major decision becomes a rebalance into N."""
NO_AUTO_COMPACTION: Final = "no_auto_compaction"
INITIATOR_LOOKBACK_SECONDS: Final = 300.0
"""How far before the previous cycle's start a change still counts as new: commit timestamps come
from the writers' clocks and become visible when their database transaction commits."""

_FAILED_STATES: Final = frozenset({"failed", "did_not_initiate"})
_FINISHED_STATES: Final = frozenset({"failed", "did_not_initiate", "succeeded", "refused", "aborted"})
_ACTIVE_STATES: Final = frozenset({"initiated", "working"})
_MAX_BUCKETS: Final = 4096  # BucketCodec V1: 12 bits of bucket ID
_TIME_UNITS: Final = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0, "d": 86400.0}


class CompactionType(StrEnum):
    """Minor, major or rebalance; the same values as ``acid_core.metastore.CompactionType``."""

    MAJOR = "major"
    MINOR = "minor"
    REBALANCE = "rebalance"


class DecisionReason(StrEnum):
    """Why the initiator decided what it did."""

    NO_AUTO_COMPACTION = "no_auto_compaction"
    ALREADY_QUEUED = "already_queued"
    TOO_MANY_FAILURES = "too_many_failures"
    TOO_MANY_ABORTS = "too_many_aborts"
    OLD_ABORTS = "old_aborts"
    DELTA_PCT = "delta_pct_over_threshold"
    NO_BASE = "no_base_and_delta_num_over_threshold"
    INSERT_ONLY = "insert_only_and_delta_num_over_threshold"
    DELTA_NUM = "delta_num_over_threshold"
    BELOW_THRESHOLDS = "below_thresholds"


@dataclass(frozen=True, slots=True)
class InitiatorConfig:
    """Thresholds, with Hive's defaults.

    Attributes:
        delta_num_threshold: more current deltas than this starts a compaction (Hive: 10).
        delta_pct_threshold: delta bytes / base bytes above this starts a major one (Hive: 0.1).
        aborted_threshold: more aborted directories than this starts a major one (Hive: 1000).
        aborted_time_threshold_seconds: an aborted directory older than this starts a major one
            (Hive 4: 12 h); a negative value disables the rule.
        failed_threshold: this many consecutive failures stop auto-compaction (Hive: 2).
        failed_retry_seconds: ... until the newest failure is this old (Hive 4: 7 days).
        rebalance_buckets: above 0, a major decision for a full-ACID table that is not explicitly
            bucketed queues a rebalance into this many buckets instead (rule 7); 0 (default): off.
    """

    delta_num_threshold: int = 10
    delta_pct_threshold: float = 0.1
    aborted_threshold: int = 1000
    aborted_time_threshold_seconds: float = 12 * 3600.0
    failed_threshold: int = 2
    failed_retry_seconds: float = 7 * 86400.0
    rebalance_buckets: int = 0

    def with_table_properties(self, properties: Mapping[str, str]) -> InitiatorConfig:
        """This config with the table's ``compactorthreshold.<hive setting>`` overrides applied.

        Raises:
            InvalidCompactionConfigError: an override that does not parse or is out of range.
        """
        if not properties:
            return self
        lowered = {key.lower(): value for key, value in properties.items()}
        changes: dict[str, object] = {}
        for setting, attribute, parse in _OVERRIDES:
            key = COMPACTOR_THRESHOLD_PREFIX + setting
            if key in lowered:
                changes[attribute] = parse(key, lowered[key])
        return replace(self, **changes) if changes else self  # type: ignore[arg-type]


def _parse_int(key: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError as e:
        raise InvalidCompactionConfigError(key, value, "a non-negative integer") from e
    if number < 0:
        raise InvalidCompactionConfigError(key, value, "a non-negative integer")
    return number


def _parse_float(key: str, value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError as e:
        raise InvalidCompactionConfigError(key, value, "a non-negative number such as 0.1") from e
    if not math.isfinite(number) or number < 0:
        raise InvalidCompactionConfigError(key, value, "a non-negative number such as 0.1")
    return number


def _parse_buckets(key: str, value: str) -> int:
    number = _parse_int(key, value)
    if number > _MAX_BUCKETS:
        raise InvalidCompactionConfigError(key, value, f"0 (off) or a number of buckets up to {_MAX_BUCKETS}")
    return number


def _parse_seconds(key: str, value: str) -> float:
    # HiveConf time values: a number with an optional unit ("12h", "604800s"; bare numbers are seconds).
    text = value.strip().lower()
    digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(digits) :]
    if unit not in _TIME_UNITS and unit != "":
        raise InvalidCompactionConfigError(key, value, "a duration such as 43200, 12h or 7d")
    try:
        number = float(digits)
    except ValueError as e:
        raise InvalidCompactionConfigError(key, value, "a duration such as 43200, 12h or 7d") from e
    return number * _TIME_UNITS.get(unit, 1.0)


_OVERRIDES: Final = (
    (DELTA_NUM_THRESHOLD, "delta_num_threshold", _parse_int),
    (DELTA_PCT_THRESHOLD, "delta_pct_threshold", _parse_float),
    (ABORTED_TXN_THRESHOLD, "aborted_threshold", _parse_int),
    (ABORTED_TXN_TIME_THRESHOLD, "aborted_time_threshold_seconds", _parse_seconds),
    (FAILED_COMPACTS_THRESHOLD, "failed_threshold", _parse_int),
    (FAILED_RETRY_TIME, "failed_retry_seconds", _parse_seconds),
    (REBALANCE_BUCKETS, "rebalance_buckets", _parse_buckets),
)


def is_no_auto_compaction(properties: Mapping[str, str]) -> bool:
    """Hive's ``NO_AUTO_COMPACTION`` table property (key and value case-insensitive)."""
    return any(
        key.lower() == NO_AUTO_COMPACTION and value.strip().lower() == "true"
        for key, value in properties.items()
    )


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """What the initiator needs to know about one table or partition directory.

    Attributes:
        table: ``db.table``.
        partition: the partition name (``k=v``), or None for an unpartitioned table.
        base_bytes: bytes of the current base plus the original files read with it.
        delta_bytes: bytes of the current deltas and delete deltas.
        delta_count: how many current deltas and delete deltas a reader merges.
        aborted_count: aborted directories (never read, waiting for a compaction to clean them).
        oldest_aborted_age_seconds: age of the oldest aborted directory, or None without one.
        insert_only: the table is insert-only (MM): compacted major only, as in Hive.
        bucketed: the table is explicitly bucketed (``CLUSTERED BY``): never rebalanced.
    """

    table: str
    partition: str | None
    base_bytes: int
    delta_bytes: int
    delta_count: int
    aborted_count: int = 0
    oldest_aborted_age_seconds: float | None = None
    insert_only: bool = False
    bucketed: bool = False


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """One queued or finished compaction of the same table/partition (a SHOW COMPACTIONS row).

    Attributes:
        compaction_id: its ID (newer compactions have higher IDs).
        state: a ``CompactionState`` value (``initiated``, ``working``, ``failed``, ...).
        end_time: when it finished (epoch seconds), None while queued.
    """

    compaction_id: int
    state: str
    end_time: float | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The initiator's answer for one table/partition.

    Attributes:
        table: ``db.table``.
        partition: the partition name, or None.
        compaction_type: what to enqueue, or None for "not now".
        reason: the rule that decided.
        message: one human sentence with the numbers.
        numbers: the measured values and the thresholds they were compared with.
        number_of_buckets: a rebalance's number of buckets (0 otherwise).
    """

    table: str
    partition: str | None
    compaction_type: CompactionType | None
    reason: DecisionReason
    message: str
    numbers: Mapping[str, float] = field(default_factory=dict)
    number_of_buckets: int = 0

    @property
    def should_compact(self) -> bool:
        """Whether a compaction should be enqueued."""
        return self.compaction_type is not None

    def to_json_dict(self) -> dict[str, object]:
        """The ``acidflow initiate --json`` object."""
        return {
            "table": self.table,
            "partition": self.partition,
            "compaction_type": None if self.compaction_type is None else self.compaction_type.value,
            "reason": self.reason.value,
            "message": self.message,
            "numbers": dict(self.numbers),
            "number_of_buckets": self.number_of_buckets,
        }


def _consecutive_failures(history: Iterable[CompactionRecord]) -> tuple[int, float | None]:
    """How many of the newest finished compactions failed in a row, and when the newest ended."""
    finished = sorted((r for r in history if r.state in _FINISHED_STATES), key=lambda r: -r.compaction_id)
    count = 0
    newest_end: float | None = None
    for record in finished:
        if record.state not in _FAILED_STATES:
            break
        if newest_end is None:
            newest_end = record.end_time
        count += 1
    return count, newest_end


def decide_compaction(
    facts: PartitionFacts,
    config: InitiatorConfig,
    *,
    table_properties: Mapping[str, str] | None = None,
    history: Iterable[CompactionRecord] = (),
    now: float = 0.0,
) -> Decision:
    """Decide whether and how to compact one table or partition (see the module docstring).

    Args:
        facts: sizes and counts of the directory, as the compactor's snapshot sees it.
        config: the defaults (``with_table_properties`` is applied here with ``table_properties``).
        table_properties: the table's TBLPROPERTIES.
        history: queued and finished compactions of this table/partition.
        now: the current time (epoch seconds), for the failure retry and aborted age rules.

    Returns:
        The decision, with its reason and numbers.

    Raises:
        InvalidCompactionConfigError: a TBLPROPERTIES override does not parse.
    """
    config = config.with_table_properties(table_properties or {})
    decision = _decide(facts, config, table_properties=table_properties, history=history, now=now)
    if (
        decision.compaction_type is CompactionType.MAJOR
        and config.rebalance_buckets > 0
        and not facts.insert_only
        and not facts.bucketed
    ):
        return replace(
            decision,
            compaction_type=CompactionType.REBALANCE,
            message=f"{decision.message}; rebalanced into {config.rebalance_buckets} buckets "
            f"({REBALANCE_BUCKETS})",
            number_of_buckets=config.rebalance_buckets,
        )
    return decision


def _decide(
    facts: PartitionFacts,
    config: InitiatorConfig,
    *,
    table_properties: Mapping[str, str] | None = None,
    history: Iterable[CompactionRecord] = (),
    now: float = 0.0,
) -> Decision:
    """``decide_compaction`` before its rebalance rule (the same arguments, ``config`` already overridden)."""
    properties = table_properties or {}
    history = list(history)

    def decide(
        kind: CompactionType | None, reason: DecisionReason, message: str, **numbers: float
    ) -> Decision:
        return Decision(facts.table, facts.partition, kind, reason, message, numbers)

    # The common path (no queue, no history, no aborts) runs once per partition of every table in
    # a cycle: it skips the history scans and builds its numbers without keyword round trips.

    where = facts.table if facts.partition is None else f"{facts.table} partition {facts.partition}"
    if is_no_auto_compaction(properties):
        return decide(None, DecisionReason.NO_AUTO_COMPACTION, f"{where}: NO_AUTO_COMPACTION=true is set")
    active = sorted(r.compaction_id for r in history if r.state in _ACTIVE_STATES) if history else []
    if active:
        return decide(
            None,
            DecisionReason.ALREADY_QUEUED,
            f"{where}: compaction {active[0]} is already initiated or working",
            compaction_id=active[0],
        )
    failures, last_failure = _consecutive_failures(history) if history else (0, None)
    if config.failed_threshold > 0 and failures >= config.failed_threshold:
        age = math.inf if last_failure is None else now - last_failure
        if age < config.failed_retry_seconds:
            return decide(
                None,
                DecisionReason.TOO_MANY_FAILURES,
                f"{where}: the last {failures} compactions failed (threshold {config.failed_threshold}); "
                f"auto-compaction resumes {config.failed_retry_seconds - age:.0f} s from now or after a "
                "manual compaction succeeds",
                consecutive_failures=failures,
                failed_threshold=config.failed_threshold,
                seconds_since_last_failure=age,
                failed_retry_seconds=config.failed_retry_seconds,
            )
    if facts.aborted_count > config.aborted_threshold:
        return decide(
            CompactionType.MAJOR,
            DecisionReason.TOO_MANY_ABORTS,
            f"{where}: {facts.aborted_count} aborted directories > threshold {config.aborted_threshold}",
            aborted_count=facts.aborted_count,
            aborted_threshold=config.aborted_threshold,
        )
    aborted_age = facts.oldest_aborted_age_seconds
    if (
        facts.aborted_count > 0
        and aborted_age is not None
        and config.aborted_time_threshold_seconds >= 0
        and aborted_age > config.aborted_time_threshold_seconds
    ):
        age = aborted_age
        return decide(
            CompactionType.MAJOR,
            DecisionReason.OLD_ABORTS,
            f"{where}: the oldest aborted directory is {age:.0f} s old > threshold "
            f"{config.aborted_time_threshold_seconds:.0f} s",
            aborted_count=facts.aborted_count,
            oldest_aborted_age_seconds=age,
            aborted_time_threshold_seconds=config.aborted_time_threshold_seconds,
        )
    numbers: dict[str, float] = {
        "base_bytes": facts.base_bytes,
        "delta_bytes": facts.delta_bytes,
        "delta_count": facts.delta_count,
        "delta_num_threshold": config.delta_num_threshold,
    }
    no_base = facts.base_bytes == 0 and facts.delta_bytes > 0
    if not no_base and facts.base_bytes > 0:
        ratio = facts.delta_bytes / facts.base_bytes
        numbers["delta_pct"] = ratio
        numbers["delta_pct_threshold"] = config.delta_pct_threshold
        if ratio > config.delta_pct_threshold:
            return Decision(
                facts.table,
                facts.partition,
                CompactionType.MAJOR,
                DecisionReason.DELTA_PCT,
                f"{where}: delta bytes / base bytes = {facts.delta_bytes}/{facts.base_bytes} = {ratio:.3f} > "
                f"threshold {config.delta_pct_threshold}",
                numbers,
            )
    if facts.delta_count > config.delta_num_threshold:
        counted = f"{facts.delta_count} deltas > threshold {config.delta_num_threshold}"
        if no_base:
            return decide(
                CompactionType.MAJOR, DecisionReason.NO_BASE, f"{where}: no base and {counted}", **numbers
            )
        if facts.insert_only:
            return decide(
                CompactionType.MAJOR,
                DecisionReason.INSERT_ONLY,
                f"{where}: insert-only table and {counted}",
                **numbers,
            )
        return decide(CompactionType.MINOR, DecisionReason.DELTA_NUM, f"{where}: {counted}", **numbers)
    pct = (
        f", delta/base {numbers['delta_pct']:.3f} <= {config.delta_pct_threshold}"
        if "delta_pct" in numbers
        else ""
    )
    return Decision(
        facts.table,
        facts.partition,
        None,
        DecisionReason.BELOW_THRESHOLDS,
        f"{where}: not now: {facts.delta_count} deltas <= threshold {config.delta_num_threshold}{pct}, "
        f"{facts.aborted_count} aborted directories <= threshold {config.aborted_threshold}",
        {"aborted_count": facts.aborted_count, **numbers},
    )


class ListingReason(StrEnum):
    """Why a cycle lists a partition (``listing_reason``); no reason: skipped, unchanged."""

    FIRST_CYCLE = "first_cycle"
    SETTINGS_CHANGED = "settings_changed"
    NEW_PARTITION = "new_partition"
    TABLE_WRITTEN = "table_written"
    WRITTEN = "written"
    ABORTED = "aborted_writes"
    COMPACTION = "compaction_activity"
    FAILED_COMPACTION = "failed_compaction"


def initiator_fingerprint(
    config: InitiatorConfig,
    table_properties: Mapping[str, str],
    *,
    location: str,
    table_type: str,
    num_buckets: int,
    create_time: float,
) -> str:
    """A digest of everything a table's decisions depend on besides its files and its queue.

    Two cycles with the same fingerprint apply the same rules to the same directories: a changed
    threshold (``config`` or a ``compactorthreshold.*`` / ``NO_AUTO_COMPACTION`` TBLPROPERTY), a
    moved or re-created table changes it, and the next cycle lists every partition.
    """
    payload = json.dumps(
        [repr(config), sorted(table_properties.items()), location, table_type, num_buckets, create_time],
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def listing_reason(
    partition: str | None,
    *,
    fingerprint: str,
    previous: tuple[float, str] | None,
    written: Collection[str | None],
    aborted: Collection[str | None],
    history: Iterable[CompactionRecord] = (),
    created_at: float | None = None,
    lookback_seconds: float = INITIATOR_LOOKBACK_SECONDS,
    whole_table: bool = False,
) -> ListingReason | None:
    """Why this cycle must list ``partition``, or None: nothing changed since the previous cycle.

    Args:
        partition: the partition name, or None for an unpartitioned table.
        fingerprint: ``initiator_fingerprint`` of this cycle.
        previous: ``(started_at, fingerprint)`` of the previous cycle over this table, or None.
        written: partitions with a write committed at or after ``previous[0] - lookback_seconds``.
        aborted: partitions with an aborted write not cleaned yet (whatever its time).
        history: queued and finished compactions of this partition.
        created_at: when the partition was created (epoch seconds), if known.
        lookback_seconds: see ``INITIATOR_LOOKBACK_SECONDS``.
        whole_table: the table was written or has aborted writes since the previous cycle and
            the metastore cannot tell which partitions (a Hive Metastore without its backend
            database): every partition is listed.

    Returns:
        The first rule (in the module docstring's order) that requires a listing, or None.
    """
    if previous is None:
        return ListingReason.FIRST_CYCLE
    started_at, previous_fingerprint = previous
    if previous_fingerprint != fingerprint:
        return ListingReason.SETTINGS_CHANGED
    since = started_at - lookback_seconds
    if created_at is not None and created_at >= since:
        return ListingReason.NEW_PARTITION
    if whole_table:
        return ListingReason.TABLE_WRITTEN
    if partition in written:
        return ListingReason.WRITTEN
    if partition in aborted:
        return ListingReason.ABORTED
    newest_finished: CompactionRecord | None = None
    for record in history:
        if record.state not in _FINISHED_STATES:
            return ListingReason.COMPACTION  # queued, working or ready for cleaning
        if record.end_time is None or record.end_time >= since:
            return ListingReason.COMPACTION
        if newest_finished is None or record.compaction_id > newest_finished.compaction_id:
            newest_finished = record
    if newest_finished is not None and newest_finished.state in _FAILED_STATES:
        return ListingReason.FAILED_COMPACTION
    return None
