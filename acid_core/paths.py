"""Parse and format Hive ACID directory and file names.

A full-ACID partition directory looks like::

    base_0000005_v0000123/          major-compacted rows for write IDs <= 5 (visibility txn 123)
    delta_0000006_0000006_0000/     inserts of write ID 6, statement 0
    delete_delta_0000009_0000009/   deletes of write ID 9
        bucket_00000                one file per bucket inside each directory
        bucket_00000_flush_length   streaming side file: the committed length of bucket_00000
        _orc_acid_version           contains "2": the ACID file format version
        _metadata_acid              {"thisFileVersion":"0","dataFormat":"compacted"} (Hive 3 bases)
    000000_0, 000000_0_copy_1       original files of a table converted from non-ACID

Names follow Hive's AcidUtils: base_%07d[_v%07d], [delete_]delta_%07d_%07d[_%04d][_v%07d],
bucket_%05d[_<attempt>]. Numbers are parsed the way Hive's ``Long.parseLong`` does for the digits
Hive writes, so unpadded names such as ``delta_1_10`` are valid; only ASCII digits are accepted.
Like Hive, anything whose name starts with ``base_``, ``delta_`` or ``delete_delta_`` *is* an ACID
directory, so a malformed one is an error rather than something silently skipped.

Invariants: ``parse_*(x.to_name()) == x`` for every valid value; min_write_id <= max_write_id;
write and transaction IDs fit a signed 64-bit long, statement and bucket IDs a signed 32-bit int.
Not here: listing files, deciding visibility (see ``state``), anything with a clock.
Errors: ``parse_*`` raises ``InvalidPathError``; ``try_parse_*`` returns None for non-ACID names
such as ``_orc_acid_version``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from acid_core.errors import InvalidPathError, InvalidWriteIdRangeError

__all__ = [
    "ACID_FORMAT_FILE",
    "BASE_PREFIX",
    "DELETE_DELTA_PREFIX",
    "DELTA_PREFIX",
    "LONG_MAX",
    "LONG_MIN",
    "METADATA_FILE",
    "SIDE_FILE_SUFFIX",
    "VISIBILITY_PREFIX",
    "AcidDirName",
    "BaseDir",
    "BucketFile",
    "DeleteDeltaDir",
    "DeltaDir",
    "OriginalFile",
    "format_bucket_file",
    "is_acid_dir_name",
    "is_hidden_name",
    "is_side_file_name",
    "parse_acid_dir",
    "parse_base_dir",
    "parse_bucket_file",
    "parse_delta_dir",
    "parse_delta_key",
    "parse_original_file",
    "side_file_name",
    "try_parse_acid_dir",
    "try_parse_bucket_file",
    "try_parse_original_file",
]

BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
VISIBILITY_PREFIX = "_v"
BUCKET_PREFIX = "bucket_"
SIDE_FILE_SUFFIX = "_flush_length"
ACID_FORMAT_FILE = "_orc_acid_version"
METADATA_FILE = "_metadata_acid"

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1

_DIGITS = re.compile(r"[0-9]+")
_SIGNED_DIGITS = re.compile(r"-?[0-9]+")
# AcidUtils.BUCKET_PATTERN: bucket_([0-9]+)(_[0-9]+)?$
_BUCKET = re.compile(r"bucket_([0-9]+)(?:_([0-9]+))?")
# AcidUtils.ORIGINAL_PATTERN and ORIGINAL_PATTERN_COPY: [0-9]+_[0-9]+(_copy_[0-9]+)?
_ORIGINAL = re.compile(r"([0-9]+)_([0-9]+)(?:_copy_([0-9]+))?")


def _long(name: str, text: str, what: str, *, signed: bool = False) -> int:
    pattern = _SIGNED_DIGITS if signed else _DIGITS
    if not pattern.fullmatch(text):
        raise InvalidPathError(name, f"{what} {text!r} is not a number", _expected_for(name))
    value = int(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidPathError(name, f"{what} {text!r} does not fit a 64-bit long", _expected_for(name))
    return value


def _int(name: str, text: str, what: str) -> int:
    if not _DIGITS.fullmatch(text):
        raise InvalidPathError(name, f"{what} {text!r} is not a number", _expected_for(name))
    value = int(text)
    if value > _INT_MAX:
        raise InvalidPathError(name, f"{what} {text!r} does not fit a 32-bit int", _expected_for(name))
    return value


def _expected_for(name: str) -> str:
    if name.startswith(BASE_PREFIX):
        return "base_<writeId>[_v<visibilityTxnId>]"
    if name.startswith(DELETE_DELTA_PREFIX):
        return "delete_delta_<min>_<max>[_<stmt>][_v<visibilityTxnId>]"
    if name.startswith(DELTA_PREFIX):
        return "delta_<min>_<max>[_<stmt>][_v<visibilityTxnId>]"
    if name.startswith(BUCKET_PREFIX):
        return "bucket_<bucketId>[_<attemptId>]"
    return "<bucket>_<n>[_copy_<n>]"


def _split_visibility(name: str, body: str) -> tuple[str, int]:
    # Hive: filename.indexOf("_v"); everything after it is the visibility transaction ID.
    idx = body.find(VISIBILITY_PREFIX)
    if idx < 0:
        return body, 0
    return body[:idx], _long(name, body[idx + len(VISIBILITY_PREFIX) :], "visibility transaction ID")


@dataclass(frozen=True, slots=True)
class BaseDir:
    """A ``base_N[_vT]`` directory: every row with write ID <= N, rewritten.

    Attributes:
        write_id: N, the highest write ID the base contains.
        visibility_txn_id: T, the compactor transaction that must commit before readers may use
            it; 0 (no suffix) means always visible.
    """

    write_id: int
    visibility_txn_id: int = 0

    def to_name(self) -> str:
        """Format as Hive does: ``base_%07d`` plus ``_v%07d`` when there is a visibility txn."""
        name = f"{BASE_PREFIX}{self.write_id:07d}"
        return f"{name}{VISIBILITY_PREFIX}{self.visibility_txn_id:07d}" if self.visibility_txn_id else name


@dataclass(frozen=True, slots=True)
class DeltaDir:
    """A ``delta_min_max[_stmt][_vT]`` directory of insert (and legacy update) events.

    Attributes:
        min_write_id: the lowest write ID whose events it may hold.
        max_write_id: the highest write ID whose events it may hold.
        statement_id: the statement within the transaction, or None for names without one
            (pre-1.3 deltas, streaming deltas and minor-compaction output).
        visibility_txn_id: the compactor transaction that must commit first; 0 means none.
    """

    PREFIX: ClassVar[str] = DELTA_PREFIX

    min_write_id: int
    max_write_id: int
    statement_id: int | None = None
    visibility_txn_id: int = 0

    @property
    def is_delete(self) -> bool:
        """True for ``delete_delta_*`` directories."""
        return False

    def to_name(self) -> str:
        """Format as Hive's ``AcidUtils.deltaSubdir`` / ``deleteDeltaSubdir`` do."""
        name = f"{self.PREFIX}{self.min_write_id:07d}_{self.max_write_id:07d}"
        if self.statement_id is not None:
            name = f"{name}_{self.statement_id:04d}"
        if self.visibility_txn_id:
            name = f"{name}{VISIBILITY_PREFIX}{self.visibility_txn_id:07d}"
        return name


@dataclass(frozen=True, slots=True)
class DeleteDeltaDir(DeltaDir):
    """A ``delete_delta_min_max[_stmt][_vT]`` directory of delete events (split-update)."""

    PREFIX: ClassVar[str] = DELETE_DELTA_PREFIX

    @property
    def is_delete(self) -> bool:
        """True for ``delete_delta_*`` directories."""
        return True


AcidDirName = BaseDir | DeltaDir


def is_hidden_name(name: str) -> bool:
    """Whether Hive's hidden-file filter skips this name (it starts with ``_`` or ``.``)."""
    return name.startswith(("_", "."))


def is_acid_dir_name(name: str) -> bool:
    """Whether a directory with this name is an ACID directory (base, delta or delete delta)."""
    return name.startswith((BASE_PREFIX, DELTA_PREFIX, DELETE_DELTA_PREFIX))


def parse_base_dir(name: str) -> BaseDir:
    """Parse ``base_N`` or ``base_N_vT``.

    Args:
        name: the directory's own name, without parent path.

    Returns:
        The parsed base.

    Raises:
        InvalidPathError: the name does not start with ``base_`` or its numbers do not parse.

    >>> parse_base_dir("base_0000005_v0000123")
    BaseDir(write_id=5, visibility_txn_id=123)
    """
    if not name.startswith(BASE_PREFIX):
        raise InvalidPathError(name, "does not start with 'base_'", "base_<writeId>[_v<visibilityTxnId>]")
    body, visibility = _split_visibility(name, name[len(BASE_PREFIX) :])
    # Hive's conversion compaction can write base_<Long.MIN_VALUE>, so a sign is allowed here.
    return BaseDir(_long(name, body, "write ID", signed=True), visibility)


_DELTA_FAST = re.compile(r"(delete_)?delta_([0-9]+)_([0-9]+)(?:_([0-9]+))?(?:_v([0-9]+))?")
_FAST_MAX_DIGITS = 18  # any run of up to 18 digits fits a signed 64-bit long


def _delta_key_of(parsed: DeltaDir) -> tuple[int, int, int, int, bool]:
    statement = -1 if parsed.statement_id is None else parsed.statement_id
    return parsed.min_write_id, parsed.max_write_id, statement, parsed.visibility_txn_id, parsed.is_delete


def parse_delta_key(name: str) -> tuple[int, int, int, int, bool]:
    """Parse a delta name into ``(min, max, statement or -1, visibility, is_delete)``.

    The fast path for listings of 100,000 directories: one regular expression and plain tuples.
    ``-1`` for "no statement ID" is Hive's own encoding and sorts such deltas first, as Hive does.

    Raises:
        InvalidPathError: as ``parse_delta_dir``.

    >>> parse_delta_key("delete_delta_0000005_0000007_0002")
    (5, 7, 2, 0, True)
    """
    match = _DELTA_FAST.fullmatch(name)
    if match is None:
        return _delta_key_of(parse_delta_dir(name))  # raises the precise error
    delete, low, high, statement, visibility = match.groups()
    if (
        len(low) > _FAST_MAX_DIGITS
        or len(high) > _FAST_MAX_DIGITS
        or (statement is not None and len(statement) > 9)
        or (visibility is not None and len(visibility) > _FAST_MAX_DIGITS)
    ):
        # Too long for the fast path: let parse_delta_dir range-check every number.
        return _delta_key_of(parse_delta_dir(name))
    min_write_id, max_write_id = int(low), int(high)
    if min_write_id > max_write_id:
        raise InvalidWriteIdRangeError(name, min_write_id, max_write_id)
    return (
        min_write_id,
        max_write_id,
        -1 if statement is None else int(statement),
        0 if visibility is None else int(visibility),
        delete is not None,
    )


def parse_delta_dir(name: str) -> DeltaDir:
    """Parse ``delta_min_max[_stmt][_vT]`` or ``delete_delta_min_max[_stmt][_vT]``.

    Args:
        name: the directory's own name, without parent path.

    Returns:
        A ``DeltaDir``, or a ``DeleteDeltaDir`` for ``delete_delta_`` names.

    Raises:
        InvalidPathError: the prefix is wrong or a number does not parse.
        InvalidWriteIdRangeError: min write ID > max write ID.

    >>> parse_delta_dir("delta_1_10")
    DeltaDir(min_write_id=1, max_write_id=10, statement_id=None, visibility_txn_id=0)
    """
    cls: type[DeltaDir]
    if name.startswith(DELETE_DELTA_PREFIX):
        cls = DeleteDeltaDir
    elif name.startswith(DELTA_PREFIX):
        cls = DeltaDir
    else:
        raise InvalidPathError(
            name, "does not start with 'delta_' or 'delete_delta_'", "delta_<min>_<max>[_<stmt>]"
        )
    body, visibility = _split_visibility(name, name[len(cls.PREFIX) :])
    parts = body.split("_")
    if len(parts) not in (2, 3):
        raise InvalidPathError(name, f"{len(parts)} numbers after the prefix", _expected_for(name))
    min_write_id = _long(name, parts[0], "min write ID")
    max_write_id = _long(name, parts[1], "max write ID")
    statement_id = _int(name, parts[2], "statement ID") if len(parts) == 3 else None
    if min_write_id > max_write_id:
        raise InvalidWriteIdRangeError(name, min_write_id, max_write_id)
    return cls(min_write_id, max_write_id, statement_id, visibility)


def parse_acid_dir(name: str) -> AcidDirName:
    """Parse any ACID directory name (base, delta or delete delta).

    Raises:
        InvalidPathError: the name is not an ACID directory name, or is a malformed one.
    """
    if name.startswith(BASE_PREFIX):
        return parse_base_dir(name)
    return parse_delta_dir(name)


def try_parse_acid_dir(name: str) -> AcidDirName | None:
    """Like ``parse_acid_dir`` but returns None instead of raising."""
    try:
        return parse_acid_dir(name)
    except InvalidPathError:
        return None


@dataclass(frozen=True, slots=True)
class BucketFile:
    """A ``bucket_NNNNN[_attempt]`` file inside a base or delta directory."""

    bucket_id: int
    attempt_id: int | None = None

    def to_name(self) -> str:
        """Format as Hive does: ``bucket_%05d`` plus ``_<attempt>`` when present."""
        return format_bucket_file(self.bucket_id, self.attempt_id)


def format_bucket_file(bucket_id: int, attempt_id: int | None = None) -> str:
    """``bucket_%05d[_<attempt>]``, Hive's ``AcidUtils.createBucketFile``."""
    name = f"{BUCKET_PREFIX}{bucket_id:05d}"
    return name if attempt_id is None else f"{name}_{attempt_id}"


def parse_bucket_file(name: str) -> BucketFile:
    """Parse ``bucket_NNNNN`` or ``bucket_NNNNN_<attempt>``.

    Raises:
        InvalidPathError: the name is not a bucket file name (side files included).
    """
    match = _BUCKET.fullmatch(name)
    if match is None:
        raise InvalidPathError(name, "not a bucket file name", "bucket_<bucketId>[_<attemptId>]")
    attempt = match.group(2)
    return BucketFile(
        _int(name, match.group(1), "bucket ID"), None if attempt is None else _int(name, attempt, "attempt")
    )


def try_parse_bucket_file(name: str) -> BucketFile | None:
    """Like ``parse_bucket_file`` but returns None instead of raising."""
    try:
        return parse_bucket_file(name)
    except InvalidPathError:
        return None


def is_side_file_name(name: str) -> bool:
    """Whether this is a streaming ``bucket_N_flush_length`` side file."""
    return name.startswith(BUCKET_PREFIX) and name.endswith(SIDE_FILE_SUFFIX)


def side_file_name(bucket_file_name: str) -> str:
    """The side file that records the committed length of a streaming bucket file."""
    return bucket_file_name + SIDE_FILE_SUFFIX


@dataclass(frozen=True, slots=True)
class OriginalFile:
    """An original (pre-ACID) file name ``NNNNNN_N[_copy_N]``.

    Attributes:
        bucket_id: the number before the first ``_`` (Hive's ``AcidUtils.parseBucketId``).
        task_suffix: the number after it (the writer's attempt).
        copy_number: N of ``_copy_N``, or None.
    """

    bucket_id: int
    task_suffix: int = 0
    copy_number: int | None = None
    width: int = 6

    def to_name(self) -> str:
        """Format with the bucket zero-padded to ``width`` digits (Hive writes 6)."""
        name = f"{self.bucket_id:0{self.width}d}_{self.task_suffix}"
        return name if self.copy_number is None else f"{name}_copy_{self.copy_number}"


def parse_original_file(name: str) -> OriginalFile:
    """Parse an original file name ``000000_0`` or ``000000_0_copy_1``.

    Raises:
        InvalidPathError: the name does not match Hive's original-file patterns.
    """
    match = _ORIGINAL.fullmatch(name)
    if match is None:
        raise InvalidPathError(name, "not an original file name", "<bucket>_<n>[_copy_<n>]")
    copy = match.group(3)
    return OriginalFile(
        _int(name, match.group(1), "bucket ID"),
        _int(name, match.group(2), "task suffix"),
        None if copy is None else _int(name, copy, "copy number"),
        len(match.group(1)),
    )


def try_parse_original_file(name: str) -> OriginalFile | None:
    """Like ``parse_original_file`` but returns None instead of raising."""
    try:
        return parse_original_file(name)
    except InvalidPathError:
        return None
