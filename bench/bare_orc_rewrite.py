"""The bare baseline of goal 23e, run as a fresh process: read a partition's files, write the survivors.

    python bench/bare_orc_rewrite.py PARTITION_DIR OUTPUT_FILE stripe|dataset

One thread of pyarrow and nothing else (this file imports only the standard library and
pyarrow, so the process's start-up is the interpreter's and pyarrow's): every ``bucket_*`` file
under ``PARTITION_DIR`` is read, the delete deltas' first (only their row count is kept), then the
insert events are written with one ``pyarrow.orc.ORCWriter`` (ZLIB, 64 MiB stripes, as
acidflow's base), up to the number of rows that survive the deletes (inserts - delete events:
the bench's deletes hit distinct live rows); the rest of the inputs is still read. No merge, no
delete lookup, no validation, no ACID metadata, no verification, no metastore.

``stripe`` reads each stripe whole (``ORCFile.read_stripe``); ``dataset`` reads 65,536-row
batches through a ``pyarrow.dataset`` ORC fragment (goal 1a's baseline; importing
``pyarrow.dataset`` also imports pandas through pyarrow's pandas shim). ``bench_compaction``
runs both and takes the faster as the baseline. Prints one JSON line: rows written, delete
events read, input files.
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    location, output, mode = argv
    import pyarrow as pa
    import pyarrow.orc as paorc

    if mode == "dataset":
        import pyarrow.dataset as ds
        from pyarrow.fs import LocalFileSystem

        local = LocalFileSystem()

        def batches(path: str):
            fragment = ds.OrcFileFormat().make_fragment(path, filesystem=local)
            yield from fragment.to_batches(batch_size=65536, use_threads=False)

    elif mode == "stripe":

        def batches(path: str):
            orc_file = paorc.ORCFile(path)
            for stripe in range(orc_file.nstripes):
                yield orc_file.read_stripe(stripe)

    else:
        raise SystemExit(f"read mode {mode!r}: expected stripe or dataset")
    inputs = sorted(
        os.path.join(top, name)
        for top, _, names in os.walk(location)
        for name in names
        if name.startswith("bucket_")
    )
    deletes = [path for path in inputs if "delete_delta_" in os.path.relpath(path, location)]
    inserts = [path for path in inputs if path not in set(deletes)]
    deleted = sum(batch.num_rows for path in deletes for batch in batches(path))
    surviving = sum(paorc.ORCFile(path).nrows for path in inserts) - deleted
    writer = paorc.ORCWriter(output, compression="zlib", stripe_size=64 * 1024 * 1024)
    written = 0
    for path in inserts:
        for batch in batches(path):
            keep = min(batch.num_rows, surviving - written)
            if keep > 0:
                writer.write(pa.Table.from_batches([batch.slice(0, keep)]))
                written += keep
    writer.close()
    print(json.dumps({"written": written, "deleted": deleted, "files": len(inputs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
