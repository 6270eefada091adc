"""The initiator on S3 (moto's server): a cycle after the first lists only the partitions changed since.

Requests are counted at the server (its access log): the first cycle lists the table once; the
second, after a write into one partition of twelve, sends LIST requests for that partition only and
no HEAD; a third with nothing changed sends no request at all.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from acid_core.cli import main as acidflow

pytestmark = [pytest.mark.integration("s3"), pytest.mark.slow]

PARTITIONS = 12


@pytest.fixture
def s3(s3_env, tmp_path, monkeypatch):
    for name in ("ACIDFLOW_LOCK_MANAGER", "ACIDFLOW_ZOOKEEPER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACIDFLOW_METASTORE", f"sqlite:///{tmp_path / 'metastore.sqlite'}")
    monkeypatch.setenv("ACIDFLOW_WAREHOUSE", s3_env.warehouse)
    return s3_env


def _cli(capsys, *argv: str) -> list[str]:
    code = acidflow(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [line for line in captured.out.splitlines() if line.strip()]


def _initiate(s3, capsys) -> tuple[list[str], list[tuple[str, str]]]:
    """One cycle: the partitions it decided, and (method, LIST prefix or key) of each request."""
    mark = s3.server.mark()
    lines = _cli(capsys, "initiate", "--json", "--lookback-seconds", "0")
    requests = []
    for method, path, _status in s3.server.requests(since=mark):
        url = urlsplit(path)
        query = parse_qs(url.query)
        requests.append((method, query["prefix"][0] if "prefix" in query else url.path))
    return [json.loads(line)["partition"] for line in lines], requests


def test_second_initiator_cycle_lists_only_the_changed_partition(s3, capsys):
    values = ", ".join(f"({p}, 'v', {p})" for p in range(PARTITIONS))
    _cli(
        capsys,
        "sql",
        "CREATE TABLE t (id int, v string) PARTITIONED BY (p int) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')",
        f"INSERT INTO t PARTITION (p) VALUES {values}",
        f"INSERT INTO t PARTITION (p) VALUES {values}",
    )
    first, requests = _initiate(s3, capsys)
    assert sorted(first) == sorted(f"p={p}" for p in range(PARTITIONS))
    lists = [target for method, target in requests if method == "GET" and not target.startswith("/")]
    assert lists == ["warehouse/t/"], requests  # the table at once: one page holds it

    _cli(capsys, "sql", "INSERT INTO t PARTITION (p) VALUES (100, 'w', 7)")
    second, requests = _initiate(s3, capsys)
    assert second == ["p=7"]
    assert requests, "the changed partition was not listed"
    assert all(target == "warehouse/t/p=7/" for method, target in requests), requests
    assert [method for method, _ in requests] == ["GET"]

    third, requests = _initiate(s3, capsys)
    assert (third, requests) == ([], [])
