"""acidflow's engine: Hive ACID names, snapshots, directory state, event files, transactions.

Public re-exports only, loaded on first use; every name here is documented in its own module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

# The re-exports load on first use (PEP 562): `import acid_core.cli` for one command must not pay
# for every pure module it does not use (the `acidflow` start-up budget, issue 14 goal 3).
_MODULES: dict[str, str] = {
    "BucketCodec": "acid_core.bucket_codec",
    "decode_bucket_property": "acid_core.bucket_codec",
    "encode_bucket_property": "acid_core.bucket_codec",
    "AcidError": "acid_core.errors",
    "CommitConflictError": "acid_core.errors",
    "CommitStateUnknownError": "acid_core.errors",
    "InvalidPathError": "acid_core.errors",
    "InvalidWriteIdListError": "acid_core.errors",
    "InvalidWriteIdRangeError": "acid_core.errors",
    "LockLostError": "acid_core.errors",
    "LockTimeoutError": "acid_core.errors",
    "MissingDependencyError": "acid_core.errors",
    "NoSuchTableError": "acid_core.errors",
    "NotEnoughHistoryError": "acid_core.errors",
    "StorageError": "acid_core.errors",
    "TableAlreadyExistsError": "acid_core.errors",
    "BaseDir": "acid_core.paths",
    "BucketFile": "acid_core.paths",
    "DeleteDeltaDir": "acid_core.paths",
    "DeltaDir": "acid_core.paths",
    "OriginalFile": "acid_core.paths",
    "parse_acid_dir": "acid_core.paths",
    "parse_base_dir": "acid_core.paths",
    "parse_bucket_file": "acid_core.paths",
    "parse_delta_dir": "acid_core.paths",
    "try_parse_acid_dir": "acid_core.paths",
    "AcidDirectoryState": "acid_core.state",
    "ListingEntry": "acid_core.state",
    "RangeResponse": "acid_core.writeids",
    "ValidCompactorWriteIdList": "acid_core.writeids",
    "ValidTxnList": "acid_core.writeids",
    "ValidWriteIdList": "acid_core.writeids",
    "parse_valid_txn_list": "acid_core.writeids",
    "parse_valid_write_id_list": "acid_core.writeids",
    "to_compactor_write_id_list": "acid_core.writeids",
}


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
