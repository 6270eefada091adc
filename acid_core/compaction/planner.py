"""Plan one compaction from a directory state: which directories go in, which come out. Pure.

::

    compactor's snapshot of p=1 (hwm 9, aborted {4}, compaction txn 31)
        base_0000003_v0000020/                    ┐
        delta_0000005_0000005_0000/               │ major: base_0000009_v0000031/
        delete_delta_0000006_0000006_0000/        │   (deletes applied, aborted events dropped,
        delta_0000007_0000009/   (streaming)      ┘    row ids kept)
        delta_0000004_0000004_0000/  aborted: no input, cleaned later

        minor: delta_0000005_0000009_v0000031/ + delete_delta_0000005_0000009_v0000031/
               (the deltas only; deletes kept, not applied; aborted events dropped)

Rules (Hive's ``CompactorMR`` / ``MajorQueryCompactor`` / ``MinorQueryCompactor`` and ``Worker``):

- Inputs are what a reader with the compactor's ValidCompactorWriteIdList merges: the state's
  base, current deltas and original files. Nothing above the compactor's high watermark (the
  lowest open write ID minus one) is touched.
- Major writes ``base_<hwm>`` and folds in the original files (their synthetic row IDs become real
  ones); it is needed when there is any delta or original file. A base alone has nothing to do.
  Below a delta across the high watermark (a streaming batch still open) the base stops at that
  delta's first write ID minus one: it must not claim rows it does not hold (``_base_write_id``).
- Minor writes ``delta_<min>_<max>`` (if any insert delta is an input) and
  ``delete_delta_<min>_<max>`` (if any delete delta is), ``min``/``max`` over the input deltas; it
  is needed when the deltas span two or more write-ID ranges.
- The output carries ``_v<compaction txn>`` so readers ignore it until that transaction commits;
  with ``hive31_names`` (Hive 3.1 readers do not know ``_v``) it has no suffix, and a base gets a
  ``_metadata_acid`` marker instead.
- Rebalance (Hive 4, ``RebalanceQueryCompactor``) writes ``base_<hwm>`` like major, and is needed
  whenever there is any data, a base alone included: the new base, with the same write ID and a
  newer ``_v``, supersedes the old one (``getAcidState`` keeps the later of two equal bases).
- "Nothing to do" still reports whether obsolete or aborted directories exist, so the caller can
  hand them to the cleaner without rewriting anything.

Invariants: every input delta lies inside the output range; after the output commits, a reader at
the compactor's snapshot reads the output instead of every input (the inputs become obsolete).
Not here: listing files or buckets (``worker``), reading or writing, the queue.
Errors: ``InvalidCompactionConfigError`` for a compaction type that is neither minor nor major.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acid_core.compaction.initiator import CompactionType
from acid_core.errors import InvalidCompactionConfigError
from acid_core.paths import (
    DELETE_DELTA_PREFIX,
    BaseDir,
    DeleteDeltaDir,
    DeltaDir,
    parse_delta_dir,
    try_parse_acid_dir,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from acid_core.state import AcidDirectoryState
    from acid_core.writeids import ValidWriteIdList

__all__ = [
    "HIVE31_NAMES",
    "CompactionPlan",
    "NothingToCompact",
    "is_hive31_names",
    "plan_compaction",
]

HIVE31_NAMES: Final = "acidflow.compactor.hive31-names"
"""Table or compaction property: ``true`` writes output names without ``_v<txn>`` (Hive 3.1 style)."""


def is_hive31_names(properties: Mapping[str, str]) -> bool:
    """Whether ``HIVE31_NAMES`` is ``true`` in these properties (key and value case-insensitive)."""
    return any(k.lower() == HIVE31_NAMES and v.strip().lower() == "true" for k, v in properties.items())


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What one compaction reads and writes, relative to the table or partition directory.

    Attributes:
        compaction_type: minor, major or rebalance.
        base: the input base, or None.
        original_files: input original files (major only), relative paths in reading order.
        original_directories: non-ACID subdirectories holding some of ``original_files``.
        deltas: input insert deltas, in reading order.
        delete_deltas: input delete deltas, in reading order.
        outputs: the directories to write (``BaseDir`` or ``DeltaDir``/``DeleteDeltaDir``).
        highest_write_id: the compactor's high watermark (what the queue entry records).
        visibility_txn_id: the compaction transaction (0 when names carry no ``_v``).
        metadata_marker: write ``_metadata_acid`` into the output base (no ``_v`` suffix).
    """

    compaction_type: CompactionType
    base: str | None
    original_files: tuple[str, ...]
    original_directories: tuple[str, ...]
    deltas: tuple[str, ...]
    delete_deltas: tuple[str, ...]
    outputs: tuple[BaseDir | DeltaDir, ...]
    highest_write_id: int
    visibility_txn_id: int
    metadata_marker: bool

    @property
    def input_names(self) -> tuple[str, ...]:
        """Every top-level input name (base, deltas, delete deltas, originals' top-level names)."""
        tops = {path.split("/", 1)[0] for path in self.original_files}
        names = ((self.base,) if self.base else ()) + self.deltas + self.delete_deltas
        return names + tuple(sorted(tops))

    @property
    def output_names(self) -> tuple[str, ...]:
        """The names of the output directories."""
        return tuple(output.to_name() for output in self.outputs)


@dataclass(frozen=True, slots=True)
class NothingToCompact:
    """The compaction has nothing to rewrite.

    Attributes:
        reason: one sentence, with the counts.
        cleanable: obsolete or aborted directories exist, which the cleaner may still delete.
    """

    reason: str
    cleanable: bool


def _base_write_id(state: AcidDirectoryState, high_watermark: int) -> int:
    """The write ID a major compaction's base may claim: the high watermark, or below a delta across it.

    A delta that holds write IDs on both sides of the compactor's high watermark (a streaming
    batch ``delta_327_328`` whose 327 committed while 328 is still open) is not an input: the
    compactor's list sees its range as unresolved. Its committed rows of 327 are then in no input,
    so ``base_327`` would claim them without holding them, and a reader (``getAcidState``) reads
    that delta only for the write IDs above the base: once 328 aborts, 327's rows would be lost.
    The base stops below such a delta instead (``base_326``), as Hive's ``CompactorMR`` names its
    base after the highest write ID of its inputs; never below the current base.
    """
    cut = high_watermark
    for name in state.ignored:
        parsed = try_parse_acid_dir(name)
        if isinstance(parsed, DeltaDir) and parsed.min_write_id <= high_watermark < parsed.max_write_id:
            cut = min(cut, parsed.min_write_id - 1)
    base = state.base_dir
    return cut if base is None else max(cut, base.write_id)


def plan_compaction(
    state: AcidDirectoryState,
    compaction_type: CompactionType | str,
    write_ids: ValidWriteIdList,
    *,
    compaction_txn_id: int,
    hive31_names: bool = False,
) -> CompactionPlan | NothingToCompact:
    """Plan a compaction of the directory whose state (at the compactor's snapshot) is ``state``.

    Args:
        state: ``AcidDirectoryState`` computed with ``write_ids`` and the compaction txn's snapshot.
        compaction_type: ``minor``, ``major`` or ``rebalance``.
        write_ids: the compactor's ValidCompactorWriteIdList of the table.
        compaction_txn_id: the compaction transaction (the ``_v`` suffix).
        hive31_names: write names without ``_v`` (see the module docstring).

    Returns:
        The plan, or ``NothingToCompact``.

    Raises:
        InvalidCompactionConfigError: an unknown compaction type.
    """
    try:
        kind = CompactionType(str(compaction_type).lower())
    except ValueError as e:
        raise InvalidCompactionConfigError(
            "compaction type", compaction_type, "'minor', 'major' or 'rebalance'"
        ) from e
    cleanable = bool(state.obsolete or state.aborted)
    deltas = tuple(name for name in state.deltas if not name.startswith(DELETE_DELTA_PREFIX))
    delete_deltas = tuple(name for name in state.deltas if name.startswith(DELETE_DELTA_PREFIX))
    visibility = 0 if hive31_names else compaction_txn_id
    if kind is CompactionType.REBALANCE and not (state.base or state.deltas or state.original_files):
        return NothingToCompact("rebalance compaction not needed: no data", cleanable)
    if kind is CompactionType.MAJOR or kind is CompactionType.REBALANCE:
        if kind is CompactionType.MAJOR and not state.deltas and not state.original_files:
            what = "only a base" if state.base else "no data"
            return NothingToCompact(
                f"major compaction not needed: {what}, no deltas or original files", cleanable
            )
        base_write_id = _base_write_id(state, write_ids.high_watermark)
        return CompactionPlan(
            kind,
            state.base,
            state.original_files,
            state.original_directories,
            deltas,
            delete_deltas,
            (BaseDir(base_write_id, visibility),),
            write_ids.high_watermark,
            visibility,
            metadata_marker=hive31_names,
        )
    parsed = [parse_delta_dir(name) for name in state.deltas]
    ranges = {(d.min_write_id, d.max_write_id) for d in parsed}
    if len(ranges) < 2:
        return NothingToCompact(
            f"minor compaction not needed: {len(state.deltas)} delta directories over {len(ranges)} "
            "write-ID range(s); at least two ranges are needed",
            cleanable,
        )
    low = min(d.min_write_id for d in parsed)
    high = max(d.max_write_id for d in parsed)
    outputs: list[BaseDir | DeltaDir] = []
    if deltas:
        outputs.append(DeltaDir(low, high, None, visibility))
    if delete_deltas:
        outputs.append(DeleteDeltaDir(low, high, None, visibility))
    return CompactionPlan(
        kind,
        None,
        (),
        (),
        deltas,
        delete_deltas,
        tuple(outputs),
        write_ids.high_watermark,
        visibility,
        metadata_marker=False,
    )
