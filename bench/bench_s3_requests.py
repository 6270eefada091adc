"""Cost on an object store is requests: what `state`, an initiator cycle, a major compaction and a clean ask S3.

    python -m bench.bench_s3_requests [--partitions 10] [--inserts 5] [--buckets 2] [--smoke]

An S3-compatible server (``moto_server``, started here on a free loopback port, as the tests'
``tests/fixtures/s3.py`` does) logs every HTTP request it serves; the counts below are read from
that log, at the server, so they include whatever pyarrow's S3 client does (retries, directory
markers, bucket checks). The metastore is a SQLite file on the local disk (not counted).

The table: ``--partitions`` partitions, each with ``--inserts`` insert deltas over ``--buckets``
buckets, written through ``acidflow sql``. Measured, each as the real command in this process:

* ``acidflow state <table>/p=0``              one partition's directory state
* ``acidflow initiate``                       one initiator cycle over every partition (queues them)
* ``acidflow compact --type major`` of p=0    write, verify, move the output into place, commit
* ``acidflow clean``                          the obsolete inputs of that compaction

Printed: requests per operation, by method (GET = listings and reads, HEAD = stats, PUT = writes
and copies, POST = multipart uploads and batch deletes, DELETE = single deletes), the table's
object count, and requests per partition for the initiator.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


def _acidflow(*argv: str) -> None:
    from acid_core.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(list(argv))
    if code != 0:
        raise SystemExit(f"acidflow {' '.join(argv)} failed: {err.getvalue().strip()}")


def _count(server: object, since: int) -> collections.Counter[str]:
    return collections.Counter(method for method, _path, _status in server.requests(since=since))  # type: ignore[attr-defined]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--inserts", type=int, default=5, help="insert deltas per partition")
    parser.add_argument("--buckets", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="CI-sized run: proves the benchmark works")
    args = parser.parse_args(argv)
    if args.smoke:
        args.partitions, args.inserts = 2, 2

    from tests.fixtures.s3 import S3Server

    work = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    server = S3Server(work)
    saved = dict(os.environ)
    try:
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        server.create_bucket(bucket)
        os.environ.update(server.environment())
        os.environ["ACIDFLOW_WAREHOUSE"] = warehouse = f"s3://{bucket}/warehouse"
        os.environ["ACIDFLOW_METASTORE"] = f"sqlite:///{work / 'metastore.sqlite'}"
        os.environ["ACIDFLOW_LOCK_MANAGER"] = "sql"
        os.environ.pop("ACIDFLOW_ZOOKEEPER", None)
        _acidflow(
            "sql",
            f"CREATE TABLE t (id int, v string) PARTITIONED BY (p int) CLUSTERED BY (id) INTO {args.buckets} "
            "BUCKETS STORED AS ORC TBLPROPERTIES ('transactional'='true')",
        )
        for n in range(args.inserts):
            values = ", ".join(
                f"({p * 1000 + n * args.buckets + b}, 'v', {p})"
                for p in range(args.partitions)
                for b in range(args.buckets)
            )
            _acidflow("sql", f"INSERT INTO t PARTITION (p) VALUES {values}")
        table = f"{warehouse}/t"
        rows: list[tuple[str, collections.Counter[str]]] = []
        for label, command in (
            ("state p=0", ("state", f"{table}/p=0", "--json")),
            ("initiate (one cycle)", ("initiate",)),
            (
                "compact major p=0",
                (
                    "compact",
                    "--table",
                    "t",
                    "--partition",
                    "p=0",
                    "--type",
                    "major",
                    "--executor",
                    "embedded",
                ),
            ),
            ("clean", ("clean",)),
        ):
            mark = server.mark()
            _acidflow(*command)
            rows.append((label, _count(server, mark)))
        import pyarrow.fs as pa_fs

        listing = pa_fs.S3FileSystem(
            endpoint_override=server.endpoint, access_key="testing", secret_key="testing", region="us-east-1"
        ).get_file_info(pa_fs.FileSelector(f"{bucket}/warehouse/t", recursive=True))
        files = sum(1 for info in listing if info.type == pa_fs.FileType.File)
        print(
            f"table: {args.partitions} partitions x {args.inserts} insert deltas x {args.buckets} buckets; "
            f"{files} objects after the clean"
        )
        methods = ["GET", "HEAD", "PUT", "POST", "DELETE"]
        print(f"{'operation':<22} {'requests':>8}  " + "  ".join(f"{m:>6}" for m in methods))
        for label, counts in rows:
            print(
                f"{label:<22} {sum(counts.values()):>8}  "
                + "  ".join(f"{counts.get(m, 0):>6}" for m in methods)
            )
        initiate = sum(rows[1][1].values())
        print(f"initiator: {initiate / args.partitions:.1f} requests per partition")
        return 0
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
