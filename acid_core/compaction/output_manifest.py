"""What a compaction wrote, recorded before its commit, so the cleaner can check it before deleting.

::

    <table>/_acidflow_cleaner/output/c<compaction>.json
        {"compaction": 7, "partition": "ds=1" | null,
         "directories": {"base_0000012_v0000031": {"bucket_00000": 1000, ...}, ...}}

    write_output_manifest(io, table_root, 7, "ds=1", {"base_...": {"bucket_00000": 1000}})
    recorded_rows(io, table_root, "ds=1")   -> {"base_...": {"bucket_00000": 1000}, ...}
    prune_output_manifests(io, table_root, "ds=1", root)   manifests whose directories are all gone

The worker writes one after the output is verified and in place, before ``commit_txn``; the
cleaner, before its first delete, compares the ORC footer row count of every file of a superseding
directory with what the manifest recorded (issue 24: a base corrupted or truncated after its
compaction committed must not cost the deltas that still hold its rows). Hive's cleaner does not
check; acidflow does. Directories acidflow did not write (Hive's, Spark's, Trino's) have no
manifest: their footers are read, which catches a file that no longer reads at all.

Invariants: a manifest only names directories of its own partition, by name (never a path); only
files holding events are listed (a bucket file of no events is not, and the cleaner's check leaves
such files out of the footers too). A manifest is input, not trust: it can only stop a delete,
never cause one; one that does not parse stops the clean (named). A manifest is pruned once every directory it names is gone (aborted
output deleted, or superseded and cleaned).
Not here: reading footers (``orc.files.read_footers``), deciding what is obsolete (``cleaner``).
Errors: ``CorruptDataError`` (a manifest that does not parse), ``StorageError`` from the store.
"""

from __future__ import annotations

import json
import posixpath
from typing import TYPE_CHECKING, Final

from acid_core.errors import CorruptDataError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from acid_core.fs import FileIO

__all__ = ["LEDGER_DIR", "prune_output_manifests", "recorded_rows", "write_output_manifest"]

LEDGER_DIR: Final = "_acidflow_cleaner"
"""The compactor's own directory in a table location (ledger, output manifests); readers skip ``_`` names."""

_OUTPUT: Final = "output"


def _directory(io: FileIO, table_root: str) -> str:
    return io.join(table_root, LEDGER_DIR, _OUTPUT)


def write_output_manifest(
    io: FileIO,
    table_root: str,
    compaction_id: int,
    partition: str | None,
    rows: Mapping[str, Mapping[str, int]],
) -> None:
    """Record the rows of every file a compaction wrote (``{directory name: {file name: rows}}``)."""
    directories = {
        name: {file: int(count) for file, count in sorted(files.items()) if count > 0}
        for name, files in sorted(rows.items())
    }
    payload = {"compaction": compaction_id, "partition": partition, "directories": directories}
    io.mkdirs(_directory(io, table_root))
    io.write_bytes_atomic(
        io.join(_directory(io, table_root), f"c{compaction_id}.json"),
        json.dumps(payload, indent=1, sort_keys=True).encode(),
    )


def _manifests(io: FileIO, table_root: str) -> list[tuple[str, object, dict[str, object]]]:
    """``(path, partition, directories)`` of every manifest of the table."""
    directory = _directory(io, table_root)
    if io.info(directory) is None:
        return []
    found = []
    for entry in io.list_dir(directory):
        if entry.is_dir or not entry.name.endswith(".json"):
            continue
        try:
            data = json.loads(io.read_bytes(entry.path))
            directories = data.get("directories") if isinstance(data, dict) else None
            if not isinstance(directories, dict):
                raise ValueError("no 'directories' object")
        except ValueError as e:
            raise CorruptDataError(
                entry.path,
                f"the compaction output manifest does not parse ({e})",
                "a JSON object {'compaction', 'partition', 'directories'} written by acidflow's worker; "
                "nothing was deleted",
            ) from e
        found.append((entry.path, data.get("partition"), directories))
    return found


def recorded_rows(io: FileIO, table_root: str, partition: str | None) -> dict[str, dict[str, int]]:
    """``{directory name: {file name: rows}}`` of every manifest of one partition (None: unpartitioned)."""
    recorded: dict[str, dict[str, int]] = {}
    for path, owner, directories in _manifests(io, table_root):
        if owner != partition:
            continue
        for name, files in directories.items():
            if not isinstance(files, dict) or not all(
                isinstance(count, int) and not isinstance(count, bool) for count in files.values()
            ):
                raise CorruptDataError(
                    path,
                    f"the manifest's entry for {name!r} is not a map of file names to row counts",
                    "{'bucket_00000': 1000, ...}; nothing was deleted",
                )
            recorded[posixpath.basename(str(name))] = {str(file): int(count) for file, count in files.items()}
    return recorded


def prune_output_manifests(io: FileIO, table_root: str, partition: str | None, root: str) -> list[str]:
    """Delete the manifests of one partition whose directories are all gone; returns their paths."""
    pruned = []
    for path, owner, directories in _manifests(io, table_root):
        if owner != partition:
            continue
        if all(io.info(io.join(root, posixpath.basename(str(name)))) is None for name in directories):
            io.delete_file(path)
            pruned.append(path)
    return pruned
