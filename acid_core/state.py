"""Which directories a reader merges: Hive's ``AcidUtils.getAcidState``, as a pure function.

Given the listing of a table or partition directory and a snapshot, decide for every child::

    base_0000005/                  base      the best base valid for the snapshot
    base_0000002/                  obsolete  covered by the newer base
    delta_0000003_0000004/         obsolete  covered by the base (max write ID <= 5)
    delta_0000006_0000006_0000/    delta     read, in Hive's order
    delete_delta_0000006_0000006_0000/ delta read (the "twin" of the insert delta)
    delta_0000007_0000007_0000/    aborted   write ID 7 aborted: never read, cleaned later
    delta_0000009_0000009_0000/    ignored   write ID 9 is open (or above the high watermark)
    000000_0                       obsolete  original file, superseded by the base
    _orc_acid_version, .hive-staging  ignored  hidden names

Rules (Hive 4.x, ``AcidUtils.getAcidState`` / ``processBaseDir`` / ``processDeltaDir`` /
``findBestWorkingDeltas``):

- A directory with a ``_vT`` suffix is usable only if transaction T is committed in the
  ValidTxnList; if T is aborted it is listed as aborted, otherwise ignored.
- Bases: an insert-overwrite base whose write ID is aborted is aborted. The newest base wins; of
  two bases with one write ID, a committed compactor base beats an insert-overwrite one; a losing
  base is obsolete. A base is valid if its write ID is Long.MIN_VALUE, <= the lowest open write
  ID, or (compacted: ``_v`` or ``_metadata_acid``) ``isValidBase`` / (insert overwrite) committed.
- Deltas: all-aborted ranges are aborted; ranges with no valid write ID are ignored; the rest sort
  by (min asc, max desc, statement asc with "none" first, name) and a delta is read if it adds a
  valid write ID past what is already covered, belongs to the same multi-statement transaction, or
  is the twin (same range and statement) of the previous one; everything else is obsolete.
- With a base, original files and directories are obsolete; without one they are read, sorted by
  path.
- ``obsolete`` keeps Hive's order: superseded bases (children processed in name order, as HDFS
  lists them), original files, original directories, then shadowed deltas in delta order.
- Only a compacted base that is not valid for the snapshot: ``NotEnoughHistoryError``.

Invariants: every top-level name lands in exactly one of base / deltas / obsolete / aborted /
original_files / original_directories / ignored; the result depends only on the arguments.
Not here: listing a filesystem (see ``directory``), reading files, anything with a clock.
Errors: ``InvalidPathError`` for a malformed ACID-looking directory name or ``_metadata_acid``;
``NotEnoughHistoryError`` as above.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from acid_core.errors import InvalidPathError, NotEnoughHistoryError
from acid_core.paths import (
    BASE_PREFIX,
    DELETE_DELTA_PREFIX,
    DELTA_PREFIX,
    LONG_MAX,
    LONG_MIN,
    METADATA_FILE,
    BaseDir,
    DeltaDir,
    is_hidden_name,
    parse_base_dir,
    parse_delta_dir,
    parse_delta_key,
)
from acid_core.writeids import RangeResponse, ValidCompactorWriteIdList, ValidTxnList, ValidWriteIdList

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["AcidDirectoryState", "ListingEntry", "ListingRow", "is_compacted_metadata"]

_ALL_COMMITTED = ValidTxnList()
_INT_MAX = 2**31 - 1
# int() accepts surrounding whitespace and a sign, which Hive's parseLong of a name never sees.
_INT_LENIENCY = (" ", "\t", "\n", "\r", "\x0b", "\x0c", "+", "-")
_DELTA_PREFIXES = (DELTA_PREFIX, DELETE_DELTA_PREFIX)


class ListingEntry(NamedTuple):
    """One listed path, relative to the table or partition directory.

    A named tuple rather than a dataclass: listings hold 100,000 entries and this is the hot path.

    Attributes:
        path: ``/``-separated path relative to the partition directory (``delta_1_1`` or
            ``subdir/000000_0`` for a file inside an original directory).
        is_dir: whether it is a directory.
        size: the file size in bytes (0 for directories).
    """

    path: str
    is_dir: bool
    size: int = 0


# What from_listing accepts: a ListingEntry or a plain (path, is_dir, size) tuple, which is what
# FileIO.list_entries returns, so a listing of 100,000 entries is never copied.
ListingRow = tuple[str, bool, int]


def is_compacted_metadata(dir_name: str, text: str) -> bool:
    """Whether a ``_metadata_acid`` file marks its directory as compactor output.

    Hive 3 marks compacted bases with ``{"thisFileVersion": "0", "dataFormat": "compacted"}``
    (``AcidUtils.MetaDataFile``); any other version or format is an error there, and here.

    Raises:
        InvalidPathError: the file is not JSON, or has another version or data format.
    """
    where = f"{dir_name}/{METADATA_FILE}"
    expected = '{"thisFileVersion": "0", "dataFormat": "compacted"}'
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InvalidPathError(where, "is not JSON", expected) from e
    if not isinstance(data, dict) or str(data.get("thisFileVersion", "")).lower() != "0":
        raise InvalidPathError(where, f"unexpected metadata version in {text!r}", expected)
    if data.get("dataFormat") != "compacted":
        raise InvalidPathError(where, f"unexpected dataFormat in {text!r}", expected)
    return True


@dataclass(frozen=True, slots=True)
class AcidDirectoryState:
    """What a reader with a given snapshot merges, and what is obsolete or aborted.

    Every name is relative to the table or partition directory.

    Attributes:
        base: the base directory to read, or None.
        deltas: delta and delete-delta directories to read, in Hive's reading order.
        obsolete: directories and original files covered by what is read (cleanable once no
            reader needs them), in the order Hive's ``getAcidState`` fills its obsolete list:
            bases superseded while the children are processed in listing (name) order, then (with
            a base) the original files and original directories, then the deltas
            ``findBestWorkingDeltas`` shadows, in delta order (min write ID ascending, max
            descending, statement ascending).
        aborted: directories holding only aborted writes (never read; cleanable).
        original_files: original (pre-ACID) files to read, in Hive's order; empty with a base.
        original_directories: non-ACID subdirectories whose files are in ``original_files``.
        ignored: everything else: hidden names, directories not visible in this snapshot.
        aborted_write_ids: write IDs of the aborted directories.
        has_uncompacted_aborts: a read delta also holds some aborted write IDs (Hive keeps the
            aborted transactions' metadata until such a delta is compacted).
    """

    base: str | None
    deltas: tuple[str, ...]
    obsolete: tuple[str, ...]
    aborted: tuple[str, ...]
    original_files: tuple[str, ...]
    original_directories: tuple[str, ...]
    ignored: tuple[str, ...]
    aborted_write_ids: frozenset[int]
    has_uncompacted_aborts: bool

    @property
    def base_dir(self) -> BaseDir | None:
        """The parsed base directory, or None."""
        return None if self.base is None else parse_base_dir(self.base)

    @property
    def delta_dirs(self) -> tuple[DeltaDir, ...]:
        """The parsed deltas, in reading order (parsed on each access)."""
        return tuple(parse_delta_dir(name) for name in self.deltas)

    def to_json_dict(self) -> dict[str, object]:
        """The ``acidflow state --json`` object."""
        return {
            "base": self.base,
            "deltas": list(self.deltas),
            "obsolete": list(self.obsolete),
            "aborted": list(self.aborted),
            "original_files": list(self.original_files),
        }

    @classmethod
    def from_listing(
        cls,
        entries: Iterable[ListingRow],
        write_ids: ValidWriteIdList,
        txns: ValidTxnList | None = None,
        *,
        metadata_files: Mapping[str, str] | None = None,
        ignore_empty_files: bool = False,
    ) -> AcidDirectoryState:
        """Decide the state of one table or partition directory.

        Args:
            entries: the directory's children, plus (recursively) the files inside its non-ACID
                subdirectories, as ``ListingEntry`` or any ``ListingRow``; entries inside ACID
                directories are ignored.
            write_ids: the reader's (or compactor's) ValidWriteIdList for the table.
            txns: the ValidTxnList deciding ``_vT`` visibility; None means every transaction is
                committed.
            metadata_files: for base directories, the text of their ``_metadata_acid`` file if
                one exists (the marker of Hive 3 compactor output), keyed by directory name.
            ignore_empty_files: skip zero-length original files (Hive's ``ignoreEmptyFiles``).

        Returns:
            The state.

        Raises:
            InvalidPathError: a directory named like an ACID directory does not parse.
            NotEnoughHistoryError: only a compacted base that erased history the snapshot needs.
        """
        return _Builder(write_ids, txns or _ALL_COMMITTED, metadata_files or {}).build(
            entries, ignore_empty_files
        )


class _Builder:
    """One run of getAcidState; mutable scratch space, never escapes ``from_listing``."""

    def __init__(self, write_ids: ValidWriteIdList, txns: ValidTxnList, metadata: Mapping[str, str]) -> None:
        self.write_ids, self.txns, self.metadata = write_ids, txns, metadata
        self.base: BaseDir | None = None
        self.base_name: str | None = None
        self.oldest_base: BaseDir | None = None
        self.oldest_base_name = ""
        self.obsolete: list[str] = []
        self.aborted: list[str] = []
        self.aborted_write_ids: set[int] = set()
        self.uncompacted_aborts = False
        self.ignored: list[str] = []
        # (min, -max, statement or -1, name) of every delta with something visible: plain tuple
        # order is exactly ParsedDeltaLight.compareTo (min asc, max desc, statement asc, path)
        self.current: list[tuple[int, int, int, str]] = []

    def _is_compacted(self, base: BaseDir, name: str) -> bool:
        if base.visibility_txn_id > 0:
            return True
        text = self.metadata.get(name)
        return text is not None and is_compacted_metadata(name, text)

    def _is_usable(self, name: str, visibility_txn_id: int) -> bool:
        # AcidUtils.isDirUsable: a _vT directory exists only once its compactor txn committed.
        if visibility_txn_id == 0 or self.txns.is_txn_valid(visibility_txn_id):
            return True
        if self.txns.is_txn_aborted(visibility_txn_id):
            self.aborted.append(name)
        else:
            self.ignored.append(name)  # its compactor is still running (or above the watermark)
        return False

    def _is_valid_base(self, base: BaseDir, compacted: bool) -> bool:
        write_id = base.write_id
        if write_id == LONG_MIN:
            return True  # written by the first compaction of a table converted to ACID
        min_open = self.write_ids.min_open_id
        if min_open is not None and write_id <= min_open:
            return True
        if compacted:
            return self.write_ids.is_valid_base(write_id)
        return self.write_ids.is_write_id_valid(write_id)  # insert overwrite: like a delta

    def _process_base(self, name: str) -> None:
        parsed = parse_base_dir(name)
        if not self._is_usable(name, parsed.visibility_txn_id):
            return
        if self.oldest_base is None or self.oldest_base.write_id > parsed.write_id:
            self.oldest_base, self.oldest_base_name = parsed, name
        compacted = self._is_compacted(parsed, name)
        if self.write_ids.is_write_id_aborted(parsed.write_id) and not compacted:
            self.aborted.append(name)  # an aborted insert overwrite
            self.aborted_write_ids.add(parsed.write_id)
            return
        base = self.base
        if (
            base is None
            or base.write_id < parsed.write_id
            or (
                base.write_id == parsed.write_id
                and compacted
                and self.txns.is_txn_valid(parsed.visibility_txn_id)
            )
        ):
            if self._is_valid_base(parsed, compacted):
                if self.base_name is not None:
                    self.obsolete.append(self.base_name)
                self.base, self.base_name = parsed, name
            else:
                self.ignored.append(name)  # not valid for this snapshot, yet not obsolete either
        else:
            self.obsolete.append(name)

    def _process_delta(self, name: str) -> None:
        if "/" in name:
            return  # an entry inside a delta directory, not a child of this one
        self._classify_delta(name, *parse_delta_key(name)[:4])

    def _classify_delta(self, name: str, low: int, high: int, statement: int, visibility: int) -> None:
        if visibility and not self._is_usable(name, visibility):
            return
        write_ids = self.write_ids
        if write_ids.aborted_ids:  # nothing can be aborted in a snapshot without aborted IDs
            abort_range = write_ids.is_write_id_range_aborted(low, high)
            if abort_range is RangeResponse.ALL:
                self.aborted.append(name)
                self.aborted_write_ids.update(range(low, high + 1))
                return
            if abort_range is RangeResponse.SOME:
                self.uncompacted_aborts = True
        if write_ids.is_write_id_range_valid(low, high) is not RangeResponse.NONE:
            self.current.append((low, -high, statement, name))
        else:
            self.ignored.append(name)  # open or above the high watermark: not visible yet

    def _process_deltas_fast(self, names: list[str]) -> None:
        """``_process_delta`` for every name, with the common shapes parsed by ``str.split``.

        ``delta_<a>_<b>[_<s>]`` and ``delete_delta_<a>_<b>[_<s>]``; every other shape (``_v``
        suffixes, huge numbers, anything malformed) goes through ``parse_delta_key``, which
        validates fully and raises the precise error. ``int()`` alone would also accept spaces,
        signs and non-ASCII digits, so the names are first checked in bulk (C-speed scans of one
        joined string); when that check fails every name takes the validating path. In a snapshot
        with no open or aborted IDs a delta is visible iff its min write ID is <= the high
        watermark. Measured in bench/bench_state.py: this loop is a third of a big partition's cost.
        """
        joined = "/".join(names)
        if not joined.isascii() or any(char in joined for char in _INT_LENIENCY):
            for name in names:
                self._process_delta(name)
            return
        write_ids = self.write_ids
        # The reader's list without exceptions: visible iff min <= hwm. The compactor's list
        # overrides range validity (ALL iff max <= hwm), so it never takes this shortcut.
        simple = not write_ids.exceptions and not isinstance(write_ids, ValidCompactorWriteIdList)
        high_watermark = write_ids.high_watermark
        append, ignore = self.current.append, self.ignored.append
        classify, slow = self._classify_delta, self._process_delta
        for name in names:
            parts = name.split("_")
            try:
                if parts[0] == "delete":
                    if len(parts) == 5 and parts[1] == "delta":
                        low, high, statement = int(parts[2]), int(parts[3]), int(parts[4])
                    elif len(parts) == 4 and parts[1] == "delta":
                        low, high, statement = int(parts[2]), int(parts[3]), -1
                    else:
                        slow(name)
                        continue
                elif len(parts) == 4:
                    low, high, statement = int(parts[1]), int(parts[2]), int(parts[3])
                elif len(parts) == 3:
                    low, high, statement = int(parts[1]), int(parts[2]), -1
                else:
                    slow(name)
                    continue
            except ValueError:
                slow(name)  # "_v" suffixes and malformed names: parse_delta_key decides
                continue
            if low > high or high > LONG_MAX or statement > _INT_MAX:
                slow(name)  # raises the precise error
            elif not simple:
                classify(name, low, high, statement, 0)
            elif low <= high_watermark:
                append((low, -high, statement, name))
            else:
                ignore(name)

    def _best_working_deltas(self) -> list[str]:
        # AcidUtils.findBestWorkingDeltas, over tuples for speed.
        write_ids = self.write_ids
        range_valid = write_ids.is_write_id_range_valid
        # Without exceptions a range past `current` is valid iff it starts at or below the hwm.
        simple = not write_ids.exceptions and not isinstance(write_ids, ValidCompactorWriteIdList)
        high_watermark = write_ids.high_watermark
        none = RangeResponse.NONE
        chosen: list[str] = []
        choose = chosen.append
        obsolete = self.obsolete
        current = 0 if self.base is None else self.base.write_id
        last_statement = -1
        prev: tuple[int, int, int, str] | None = None
        self.current.sort()
        for delta in self.current:
            low, negative_high, statement, name = delta
            high = -negative_high
            if high > current:
                if (current < high_watermark) if simple else (range_valid(current + 1, high) is not none):
                    choose(name)
                    current, last_statement, prev = high, statement, delta
                else:
                    # Hive drops it without calling it obsolete: its new write IDs are all open
                    # (or above the high watermark), so it is still needed once they commit.
                    self.ignored.append(name)
            elif high == current and last_statement >= 0:
                choose(name)  # another statement of the same multi-statement transaction
                prev = delta
            elif prev is not None and negative_high == prev[1] and low == prev[0] and statement == prev[2]:
                choose(name)  # the twin: delta_x_y and delete_delta_x_y
                prev = delta
            else:
                obsolete.append(name)
        return chosen

    def build(self, entries: Iterable[ListingRow], ignore_empty_files: bool) -> AcidDirectoryState:
        if not isinstance(entries, list):
            entries = list(entries)
        # Deltas are nearly all of a big partition: split them off with two tight comprehensions
        # rather than one Python loop over every entry.
        delta_names = [e[0] for e in entries if e[1] and e[0].startswith(_DELTA_PREFIXES)]
        rest = [e for e in entries if not (e[1] and e[0].startswith(_DELTA_PREFIXES))]
        top_files: list[ListingRow] = []
        original_dirs: list[str] = []
        nested_files: list[ListingRow] = []
        bases: list[str] = []
        for entry in rest:
            path, is_dir = entry[0], entry[1]
            if "/" in path:
                if not is_dir and not any(is_hidden_name(part) for part in path.split("/")):
                    nested_files.append(entry)
            elif is_hidden_name(path):
                self.ignored.append(path)
            elif not is_dir:
                top_files.append(entry)
            elif path.startswith(BASE_PREFIX):
                bases.append(path)
            else:
                original_dirs.append(path)
        self._process_deltas_fast(delta_names)
        # HDFS lists children sorted by name; only the order of bases can change the outcome
        # (which of two equal bases is "oldest"), so only bases are sorted.
        for name in sorted(bases):
            self._process_base(name)

        original_files: list[str] = []
        kept_dirs: list[str] = []
        if self.base_name is not None:
            # getAcidState: original files, then original directories, each in listing order.
            self.obsolete.extend(sorted(entry[0] for entry in top_files))
            self.obsolete.extend(sorted(original_dirs))
        else:
            kept_dirs = sorted(original_dirs)
            inside = {name + "/" for name in original_dirs}
            for entry in top_files + [e for e in nested_files if e[0][: e[0].index("/") + 1] in inside]:
                if ignore_empty_files and entry[2] == 0:
                    if "/" not in entry[0]:
                        self.ignored.append(entry[0])
                else:
                    original_files.append(entry[0])
            original_files.sort()

        deltas = self._best_working_deltas()

        if (
            self.oldest_base is not None
            and self.base is None
            and self._is_compacted(self.oldest_base, self.oldest_base_name)
        ):
            min_open = self.write_ids.exceptions[0] if self.write_ids.exceptions else None
            raise NotEnoughHistoryError(self.write_ids.high_watermark, min_open, self.oldest_base_name)

        return AcidDirectoryState(
            base=self.base_name,
            deltas=tuple(deltas),
            obsolete=tuple(self.obsolete),  # Hive's order (see AcidDirectoryState.obsolete)
            aborted=tuple(sorted(self.aborted)),
            original_files=tuple(original_files),
            original_directories=tuple(kept_dirs),
            ignored=tuple(sorted(self.ignored)),
            aborted_write_ids=frozenset(self.aborted_write_ids),
            has_uncompacted_aborts=self.uncompacted_aborts,
        )
