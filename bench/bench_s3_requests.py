"""Cost on an object store is requests: what `state`, initiator cycles, a major compaction and a clean ask S3.

    python -m bench.bench_s3_requests [--partitions 1000] [--inserts 5] [--buckets 2] [--changed 10] [--smoke]

An S3-compatible server (``moto_server``, started here on a free loopback port, as the tests'
``tests/fixtures/s3.py`` does) logs every HTTP request it serves; the counts below are read from
that log, at the server, so they include whatever pyarrow's S3 client does (retries, directory
markers, bucket checks). The metastore is a SQLite file on the local disk (not counted).

The table: ``--partitions`` partitions, each with ``--inserts`` insert deltas over ``--buckets``
buckets, written through ``acidflow sql`` on the local disk, then its objects uploaded to the
bucket (one PUT each, boto3) and a copy of its metastore pointed at them: acidflow's INSERT on S3
costs ~40 requests per partition and delta (directory markers, the ``_orc_acid_version`` file
written and renamed, multipart uploads): an estimated hour for 1,000 x 5 x 2 against moto on a
loaded machine (bench/RESULTS.md), and that write path is not what is measured here. Counting starts after the upload.
Measured, each as the real command in this process:

* ``acidflow state <table>/p=N``               every partition's directory state, one call each
* ``acidflow initiate``                        the first cycle (lists the whole table)
* ``acidflow initiate``                        the second, after an INSERT into ``--changed``
                                               partitions (lists only those)
* ``acidflow compact --type major`` of p=0     write, verify, move the output into place, commit
* ``acidflow clean``                           the obsolete inputs of that compaction
* the same major compaction of the same data on the local disk: wall time, S3 / local

Requests are classified from the access log (method and path only): LIST = a GET of the bucket
with ``list-type``; GET = an object read; HEAD; PUT = an upload part, a directory marker (a key
ending in ``/``) or a bucket; COPY = a PUT of an object key without a query string (pyarrow
uploads every object as a multipart upload, so a bare PUT of a key is a CopyObject: a move);
POST = multipart start/complete and batch deletes; DELETE = single deletes.

Goals (``bench.goals``): ``state`` LISTs <= 1.2x the minimum, one paged LIST per partition
(``state`` reads one directory per call, and each partition here is under 1,000 keys, one page);
the first initiator cycle's LISTs <= 1.2x the pages of one recursive listing of the table
(ceil(keys / 1000), the fewest any listing of every partition can cost); no HEAD per object in
``state`` and the initiator; the second cycle's LISTs <= 1.2x one per changed partition, and none
for an unchanged one. The compaction's wall time on S3 vs local disk is printed as a ratio (no
target: it is what S3 costs here, over a loopback moto server, not a goal).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import math
import os
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from bench import goals

if TYPE_CHECKING:
    from collections.abc import Sequence

COMMAND = "python -m bench.bench_s3_requests"
METHODS = ["LIST", "GET", "HEAD", "PUT", "COPY", "POST", "DELETE"]


def _acidflow(*argv: str) -> None:
    from acid_core.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(list(argv))
    if code != 0:
        raise SystemExit(f"acidflow {' '.join(argv)} failed: {err.getvalue().strip()}")


def _classify(method: str, path: str) -> tuple[str, str]:
    """(kind, LIST prefix or object path) of one logged request."""
    url = urlsplit(path)
    query = parse_qs(url.query, keep_blank_values=True)
    if method == "GET" and "list-type" in query:
        return "LIST", query.get("prefix", [""])[0]
    if method == "PUT" and not url.query and url.path.count("/") > 1 and not url.path.endswith("/"):
        return "COPY", url.path
    return method, url.path


def _requests(server: object, since: int) -> list[tuple[str, str]]:
    return [_classify(m, p) for m, p, _status in server.requests(since=since)]  # type: ignore[attr-defined]


def _build(partitions: int, inserts: int, buckets: int) -> None:
    _acidflow(
        "sql",
        f"CREATE TABLE t (id int, v string) PARTITIONED BY (p int) CLUSTERED BY (id) INTO {buckets} "
        "BUCKETS STORED AS ORC TBLPROPERTIES ('transactional'='true')",
    )
    for n in range(inserts):
        values = ", ".join(
            f"({p * 1000 + n * buckets + b}, 'v', {p})" for p in range(partitions) for b in range(buckets)
        )
        _acidflow("sql", f"INSERT INTO t PARTITION (p) VALUES {values}")


def _upload(server: object, bucket: str, local_table: Path) -> int:
    """PUT every file below ``local_table`` to ``bucket/warehouse/t/...``; returns the object count."""
    from concurrent.futures import ThreadPoolExecutor

    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint,  # type: ignore[attr-defined]
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    files = [path for path in local_table.rglob("*") if path.is_file()]

    def put(path: Path) -> None:
        key = f"warehouse/t/{path.relative_to(local_table).as_posix()}"
        client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, files))
    return len(files)


def _point_at(metastore: Path, local_warehouse: str, warehouse: str) -> None:
    """Rewrite the locations of a copied metastore from the local warehouse to the bucket."""
    with contextlib.closing(sqlite3.connect(metastore)) as db, db:
        for table, column in (("DBS", "DB_LOCATION_URI"), ("TBLS", "LOCATION"), ("PARTITIONS", "LOCATION")):
            db.execute(
                f'UPDATE "{table}" SET "{column}" = ? || substr("{column}", ?)',
                (warehouse, len(local_warehouse) + 1),
            )


def _compact_p0() -> float:
    started = time.perf_counter()
    _acidflow("compact", "--table", "t", "--partition", "p=0", "--type", "major", "--executor", "embedded")
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--inserts", type=int, default=5, help="insert deltas per partition")
    parser.add_argument("--buckets", type=int, default=2)
    parser.add_argument("--changed", type=int, default=10, help="partitions written before the second cycle")
    parser.add_argument("--smoke", action="store_true", help="CI-sized run: proves the benchmark works")
    args = parser.parse_args(argv)
    if args.smoke:
        args.partitions, args.inserts, args.changed = 3, 2, 1
    if not 1 <= args.changed < args.partitions:
        parser.error(f"--changed {args.changed}: expected 1 <= changed < --partitions ({args.partitions})")

    from tests.fixtures.s3 import S3Server

    work = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    server = S3Server(work)
    saved = dict(os.environ)
    command = f"{COMMAND} --partitions {args.partitions} --inserts {args.inserts} --buckets {args.buckets}"
    command += f" --changed {args.changed}" + (" --smoke" if args.smoke else "")
    try:
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        server.create_bucket(bucket)
        os.environ.update(server.environment())
        os.environ["ACIDFLOW_LOCK_MANAGER"] = "sql"
        os.environ.pop("ACIDFLOW_ZOOKEEPER", None)
        local = work / "local"
        local.mkdir()
        local_warehouse = str(local / "warehouse")
        os.environ["ACIDFLOW_WAREHOUSE"] = local_warehouse
        os.environ["ACIDFLOW_METASTORE"] = f"sqlite:///{local / 'metastore.sqlite'}"
        started = time.perf_counter()
        _build(args.partitions, args.inserts, args.buckets)
        build_seconds = time.perf_counter() - started
        warehouse = f"s3://{bucket}/warehouse"
        started = time.perf_counter()
        uploaded = _upload(server, bucket, local / "warehouse" / "t")
        upload_seconds = time.perf_counter() - started
        shutil.copy(local / "metastore.sqlite", work / "metastore.sqlite")
        _point_at(work / "metastore.sqlite", local_warehouse, warehouse)
        os.environ["ACIDFLOW_WAREHOUSE"] = warehouse
        os.environ["ACIDFLOW_METASTORE"] = f"sqlite:///{work / 'metastore.sqlite'}"
        table = f"{warehouse}/t"
        import pyarrow.fs as pa_fs

        s3 = pa_fs.S3FileSystem(
            endpoint_override=server.endpoint, access_key="testing", secret_key="testing", region="us-east-1"
        )

        def keys() -> int:
            listing = s3.get_file_info(pa_fs.FileSelector(f"{bucket}/warehouse/t", recursive=True))
            return sum(1 for info in listing if info.type == pa_fs.FileType.File)

        table_keys = keys()
        rows: list[tuple[str, list[tuple[str, str]]]] = []

        mark = server.mark()
        for p in range(args.partitions):
            _acidflow("state", f"{table}/p={p}", "--json")
        rows.append((f"state, each of {args.partitions} partitions", _requests(server, mark)))

        mark = server.mark()
        _acidflow("initiate", "--lookback-seconds", "0")
        rows.append(("initiate, first cycle", _requests(server, mark)))

        changed = list(range(1, args.changed + 1))
        values = ", ".join(f"({100_000 + p}, 'w', {p})" for p in changed)
        _acidflow("sql", f"INSERT INTO t PARTITION (p) VALUES {values}")
        mark = server.mark()
        _acidflow("initiate", "--lookback-seconds", "0")
        second = _requests(server, mark)
        rows.append((f"initiate, second ({args.changed} changed)", second))

        mark = server.mark()
        s3_seconds = _compact_p0()
        rows.append(("compact major p=0", _requests(server, mark)))
        mark = server.mark()
        _acidflow("clean")
        rows.append(("clean", _requests(server, mark)))

        # The same compaction of the same data on the local disk (the table the upload came from).
        os.environ["ACIDFLOW_WAREHOUSE"] = local_warehouse
        os.environ["ACIDFLOW_METASTORE"] = f"sqlite:///{local / 'metastore.sqlite'}"
        local_seconds = _compact_p0()

        print(
            f"table: {args.partitions} partitions x {args.inserts} insert deltas x {args.buckets} buckets: "
            f"{table_keys} objects before the cycles ({build_seconds:.0f} s to write through acidflow sql "
            f"locally, {upload_seconds:.0f} s to upload {uploaded} objects)"
        )
        print(f"{'operation':<34} {'requests':>8}  " + "  ".join(f"{m:>6}" for m in METHODS))
        for label, requests in rows:
            counts = collections.Counter(kind for kind, _ in requests)
            print(f"{label:<34} {len(requests):>8}  " + "  ".join(f"{counts.get(m, 0):>6}" for m in METHODS))
        count = {label: collections.Counter(kind for kind, _ in reqs) for label, reqs in rows}
        state_counts, first_counts, second_counts = (count[label] for label, _ in rows[:3])
        goals.report(
            "s3-1",
            "state: LISTs / one paged LIST per partition",
            state_counts["LIST"] / args.partitions,
            1.2,
            command=command,
            smoke=args.smoke,
        )
        pages = math.ceil(table_keys / 1000)
        goals.report(
            "s3-2",
            f"first initiator cycle: LISTs / pages of one recursive table listing ({pages})",
            first_counts["LIST"] / pages,
            1.2,
            command=command,
            smoke=args.smoke,
        )
        goals.report(
            "s3-3",
            "state + first initiator cycle: HEADs per object",
            (state_counts["HEAD"] + first_counts["HEAD"]) / table_keys,
            0.01,
            command=command,
            smoke=args.smoke,
        )
        changed_prefixes = tuple(f"warehouse/t/p={p}/" for p in changed)
        lists = [target for kind, target in second if kind == "LIST"]
        outside = [target for target in lists if not target.startswith(changed_prefixes)]
        goals.report(
            "s3-4",
            "second initiator cycle: LISTs / changed partitions",
            len(lists) / args.changed,
            1.2,
            command=command,
            smoke=args.smoke,
        )
        goals.report(
            "s3-5",
            "second initiator cycle: LISTs of unchanged partitions / unchanged partitions",
            len(outside) / (args.partitions - args.changed),
            0.0,
            command=command,
            smoke=args.smoke,
        )
        print(
            f"second cycle: {len(lists)} LISTs for {args.changed} changed partitions, {len(outside)} "
            f"outside them, {second_counts['HEAD']} HEADs"
        )
        print(
            f"RATIO major compaction of p=0, S3 / local disk: {s3_seconds / local_seconds:.2f}x "
            f"({s3_seconds:.2f} s / {local_seconds:.2f} s)"
        )
        return 0
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
