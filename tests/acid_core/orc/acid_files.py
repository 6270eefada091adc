"""A small private writer of ACID event files and original files for reader tests (pyorc).

Independent of acidflow's own writer on purpose: the reader is checked against files built here
from first principles (Hive's event schema, BucketCodec V1, Hive's user metadata).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyorc

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Sequence

ROW_TYPE = "struct<k:bigint,v:string>"
EVENT_NAMES = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")

Event = tuple[int, int, int, int, int, tuple | None]
"""(operation, originalTransaction, bucket property, rowId, currentTransaction, row or None)."""


def bucket_property(bucket_id: int, statement_id: int = 0) -> int:
    """BucketCodec V1, written out from Hive's bit layout (not acidflow's codec)."""
    return (1 << 29) | (bucket_id << 16) | statement_id


def event_type(row_type: str = ROW_TYPE, *, lower_case: bool = False) -> str:
    names = [n.lower() for n in EVENT_NAMES] if lower_case else list(EVENT_NAMES)
    kinds = ["int", "bigint", "int", "bigint", "bigint", row_type]
    return "struct<" + ",".join(f"{n}:{k}" for n, k in zip(names, kinds, strict=True)) + ">"


def write_events(
    path: str | os.PathLike[str],
    events: Iterable[Event],
    *,
    row_type: str = ROW_TYPE,
    lower_case: bool = False,
    stats: bool = True,
    stripe_size: int = 64 * 1024 * 1024,
    batch_size: int = 1024,
) -> Path:
    """Write one event file (parents created), with Hive's hive.acid.stats when ``stats``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    counts = [0, 0, 0]
    with target.open("wb") as out:
        small = {"compression_block_size": 1024, "memory_block_size": 1024} if stripe_size < 65536 else {}
        writer = pyorc.Writer(
            out,
            event_type(row_type, lower_case=lower_case),
            stripe_size=stripe_size,
            batch_size=batch_size,
            **small,
        )
        last_key = None
        for event in events:
            counts[event[0]] += 1
            last_key = event[1:4]
            writer.write(event)
        if stats:
            writer.set_user_metadata(**{"hive.acid.stats": ",".join(map(str, counts)).encode()})
            writer.set_user_metadata(**{"hive.acid.version": b"2"})
            if last_key is not None:
                key = f"{last_key[0]},{last_key[1]},{last_key[2]};".encode()
                writer.set_user_metadata(**{"hive.acid.key.index": key})
        writer.close()
    return target


def write_plain(path: str | os.PathLike[str], rows: Sequence[tuple], orc_type: str = ROW_TYPE) -> Path:
    """Write a plain (non-ACID) ORC file, e.g. an original file of a converted table."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        writer = pyorc.Writer(out, orc_type)
        writer.writerows(rows)
        writer.close()
    return target


def inserts(
    write_id: int, bucket_id: int, rows: Sequence[tuple], *, first_row_id: int = 0, statement_id: int = 0
):
    """Insert events of one write ID into one bucket, numbered from ``first_row_id``."""
    prop = bucket_property(bucket_id, statement_id)
    return [(0, write_id, prop, first_row_id + i, write_id, row) for i, row in enumerate(rows)]


def deletes(write_id: int, keys: Iterable[tuple[int, int, int]]):
    """Delete events (row null) of ``keys`` = (originalTransaction, bucket property, rowId), sorted."""
    return [(2, o, b, r, write_id, None) for o, b, r in sorted(keys)]
