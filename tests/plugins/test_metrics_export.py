"""The backlog gauges leave through Airflow's metrics (OpenTelemetry here) under Hive's names.

A subprocess configures Airflow's stats as a task process does (``[metrics] otel_on``), measures a
real warehouse with an open and an aborted transaction and sends ``backlog_metrics`` with
``emit_metrics``; a local HTTP server plays the OTLP collector and decodes what arrives.
(StatsD needs the ``statsd`` package, which is not installed here; the code path is the same.)
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = r"""
import sys
from airflow.sdk.observability.metrics.stats_utils import get_stats_factory
from airflow.sdk.observability.stats import initialize
initialize(factory=get_stats_factory(), export_legacy_names=False)

from acid_core.metastore import open_metastore
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse
from acidflow_airflow.backlog import backlog_metrics, collect_backlog, queue_summary
from acidflow_airflow.config import AcidflowConfig
from acidflow_airflow.sensors import emit_metrics

warehouse = sys.argv[1]
with Warehouse.open(warehouse) as store:
    session = SqlSession(store)
    session.execute("CREATE TABLE clicks (id int) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    for i in range(3):
        session.execute(f"INSERT INTO clicks VALUES ({i})")
with open_metastore(None, warehouse) as metastore:
    metastore.abort_txn(metastore.open_txn("bob", "etl1"))
    metastore.open_txn("alice", "etl2")
    rows = collect_backlog(metastore, AcidflowConfig(warehouse=warehouse))
    emit_metrics(backlog_metrics(rows, queue_summary(metastore)))

from opentelemetry.metrics import get_meter_provider
get_meter_provider().force_flush()
print("FLUSHED")
"""


class _Collector(http.server.BaseHTTPRequestHandler):
    bodies: list[bytes] = []  # noqa: RUF012 - the test collector's inbox

    def do_POST(self):
        type(self).bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _gauges(bodies):
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    values = {}
    for body in bodies:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.gauge.data_points:
                        values[metric.name] = point.as_double or float(point.as_int)
    return values


@pytest.mark.timeout(300)
def test_backlog_metrics_reach_an_otlp_collector_with_hive_names(tmp_path):
    _Collector.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(tmp_path / "airflow"),
            "AIRFLOW__METRICS__OTEL_ON": "True",
            "AIRFLOW__METRICS__OTEL_HOST": "127.0.0.1",
            "AIRFLOW__METRICS__OTEL_PORT": str(server.server_address[1]),
            "AIRFLOW__METRICS__OTEL_INTERVAL_MILLISECONDS": "60000",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugins")]),
            "USER": os.environ.get("USER") or "acidflow",
        }
        result = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(tmp_path / "warehouse")],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert "FLUSHED" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
    finally:
        server.shutdown()
        server.server_close()
    gauges = _gauges(_Collector.bodies)
    assert gauges["airflow.num_open_non_repl_transactions"] == 1.0
    assert gauges["airflow.num_aborted_transactions"] == 1.0
    assert gauges["airflow.oldest_open_non_repl_txn_id"] > gauges["airflow.oldest_aborted_txn_id"] > 0
    assert gauges["airflow.compaction_num_active_deltas.default.clicks"] == 3.0
    assert gauges["airflow.compaction_num_initiated"] == 0.0
    assert "airflow.compaction_oldest_enqueue_age_in_sec" in gauges
