"""Load the directory state of a table or partition from storage: the I/O shell around ``state``.

::

    load_directory_state(file_io, "/warehouse/db/t/p=1", write_ids, txns)
        1. list the directory's children                  (FileIO.list_dir)
        2. list non-ACID subdirectories recursively       (original files of converted tables)
        3. read _metadata_acid of bases without _v        (Hive 3 compactor marker)
        4. AcidDirectoryState.from_listing(...)            (pure)

Not here: any decision (all of it is in ``state``).
Errors: ``StorageError`` for a missing directory (a base's ``_metadata_acid`` that vanished after
the listing counts as absent); whatever ``from_listing`` raises.
Concurrency: a listing is a snapshot of a moment; a cleaner deleting obsolete directories at the
same time can only remove what this snapshot does not read (Hive's cleaner rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acid_core.errors import StorageError
from acid_core.paths import (
    BASE_PREFIX,
    DELETE_DELTA_PREFIX,
    DELTA_PREFIX,
    METADATA_FILE,
    VISIBILITY_PREFIX,
    is_hidden_name,
)
from acid_core.state import AcidDirectoryState, ListingEntry, ListingRow

if TYPE_CHECKING:
    from acid_core.fs import FileIO
    from acid_core.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["list_partition", "load_directory_state"]

_DELTA_PREFIXES = (DELTA_PREFIX, DELETE_DELTA_PREFIX)


def list_partition(file_io: FileIO, path: str) -> tuple[list[ListingRow], dict[str, str]]:
    """List what ``AcidDirectoryState.from_listing`` needs from one directory.

    Returns:
        The entries (children, plus files below non-ACID subdirectories, relative to ``path``)
        and the ``_metadata_acid`` texts of base directories without a ``_v`` suffix.
    """
    entries: list[ListingRow] = file_io.list_entries(path)
    metadata: dict[str, str] = {}
    prefix_length = len(path.rstrip("/")) + 1
    # One tight pass picks the few directories that need more I/O (bases, original directories).
    others = [e[0] for e in entries if e[1] and not e[0].startswith(_DELTA_PREFIXES)]
    for name in others:
        if is_hidden_name(name):
            continue
        child = file_io.join(path, name)
        if not name.startswith(BASE_PREFIX):
            for below in file_io.list_tree(child):
                entries.append(ListingEntry(below.path[prefix_length:], below.is_dir, below.size))
        elif VISIBILITY_PREFIX not in name:
            marker = file_io.join(child, METADATA_FILE)
            if file_io.info(marker) is not None:
                text = _read_unless_gone(file_io, marker)
                if text is not None:
                    metadata[name] = text
    return entries, metadata


def _read_unless_gone(file_io: FileIO, marker: str) -> str | None:
    # A cleaner may delete an obsolete base between the listing and this read (found by the HMS
    # fault soak: a minor compaction failed on a vanished base's marker). Gone means not compactor
    # output, as Hive's MetaDataFile.isCompacted reads a missing file; a base this snapshot does
    # read is never deleted under it, and reading its files would fail loudly anyway.
    try:
        return file_io.read_bytes(marker).decode("utf-8", errors="replace")
    except StorageError:
        if file_io.info(marker) is not None:
            raise
        return None


def load_directory_state(
    file_io: FileIO,
    path: str,
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None = None,
    *,
    ignore_empty_files: bool = False,
) -> AcidDirectoryState:
    """List ``path`` and decide its state for the snapshot (see ``AcidDirectoryState.from_listing``)."""
    entries, metadata = list_partition(file_io, path)
    return AcidDirectoryState.from_listing(
        entries, write_ids, txns, metadata_files=metadata, ignore_empty_files=ignore_empty_files
    )
