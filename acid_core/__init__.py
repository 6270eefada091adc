"""acidflow's engine: Hive ACID names, snapshots, directory state, event files, transactions.

Public re-exports only; every name here is documented in its own module.
"""

from __future__ import annotations

from acid_core.bucket_codec import BucketCodec, decode_bucket_property, encode_bucket_property
from acid_core.errors import (
    AcidError,
    CommitConflictError,
    CommitStateUnknownError,
    InvalidPathError,
    InvalidWriteIdListError,
    InvalidWriteIdRangeError,
    LockLostError,
    LockTimeoutError,
    MissingDependencyError,
    NoSuchTableError,
    NotEnoughHistoryError,
    StorageError,
    TableAlreadyExistsError,
)
from acid_core.paths import (
    BaseDir,
    BucketFile,
    DeleteDeltaDir,
    DeltaDir,
    OriginalFile,
    parse_acid_dir,
    parse_base_dir,
    parse_bucket_file,
    parse_delta_dir,
    try_parse_acid_dir,
)
from acid_core.state import AcidDirectoryState, ListingEntry
from acid_core.writeids import (
    RangeResponse,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    parse_valid_txn_list,
    parse_valid_write_id_list,
    to_compactor_write_id_list,
)

__all__ = [
    # names
    "BaseDir",
    "BucketFile",
    "DeleteDeltaDir",
    "DeltaDir",
    "OriginalFile",
    "parse_acid_dir",
    "parse_base_dir",
    "parse_bucket_file",
    "parse_delta_dir",
    "try_parse_acid_dir",
    # bucket codec
    "BucketCodec",
    "decode_bucket_property",
    "encode_bucket_property",
    # snapshots
    "RangeResponse",
    "ValidCompactorWriteIdList",
    "ValidTxnList",
    "ValidWriteIdList",
    "parse_valid_txn_list",
    "parse_valid_write_id_list",
    "to_compactor_write_id_list",
    # directory state
    "AcidDirectoryState",
    "ListingEntry",
    # errors
    "AcidError",
    "CommitConflictError",
    "CommitStateUnknownError",
    "InvalidPathError",
    "InvalidWriteIdListError",
    "InvalidWriteIdRangeError",
    "LockLostError",
    "LockTimeoutError",
    "MissingDependencyError",
    "NoSuchTableError",
    "NotEnoughHistoryError",
    "StorageError",
    "TableAlreadyExistsError",
]
