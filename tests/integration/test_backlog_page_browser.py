"""The backlog page in a real headless chromium, served by a running ``airflow api-server``.

Expected counts come from the demo warehouse's directories on disk (names parsed here, not by
acidflow): each web_events partition holds 12 inserts, one delete and one update. The growing
backlog is real INSERTs into ``default.clicks``, measured at chosen times through the sensor's
recording path (``AcidWarehouseHook.backlog(record=True)``), so the page has days of history.
Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.integration("browser"), pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DAY = 86400.0
_CELLS = (
    "[...document.querySelectorAll('#backlog tbody tr')].map(tr => Object.assign("
    "{hidden: tr.hidden}, Object.fromEntries([...tr.querySelectorAll('td[data-col]')]"
    ".map(td => [td.dataset.col, td.innerText.trim()]))))"
)


def _disk_counts(partition: Path) -> tuple[int, int]:
    names = [p.name for p in partition.iterdir() if p.is_dir()]
    return (
        sum(name.startswith("delta_") for name in names),
        sum(name.startswith("delete_delta_") for name in names),
    )


@pytest.mark.timeout(300)
def test_backlog_page_and_api_answer_401_without_credentials(airflow_api_server):
    url = airflow_api_server.url
    assert httpx.get(f"{url}/acidflow/", timeout=30).status_code == 401
    assert httpx.get(f"{url}/acidflow/api/backlog", timeout=30).status_code == 401
    response = httpx.post(
        f"{url}/acidflow/api/compact", json={"table": "default.web_events", "type": "major"}, timeout=30
    )
    assert response.status_code == 401
    bad = httpx.get(f"{url}/acidflow/api/backlog", headers={"Authorization": "Bearer not-a-jwt"}, timeout=30)
    assert bad.status_code in (401, 403)


@pytest.mark.timeout(300)
def test_backlog_page_is_registered_as_external_view(airflow_api_server):
    headers = {"Authorization": f"Bearer {airflow_api_server.token}"}
    plugins = httpx.get(f"{airflow_api_server.url}/api/v2/plugins", headers=headers, timeout=30).json()
    acidflow = next(p for p in plugins["plugins"] if p["name"] == "acidflow")
    assert acidflow["external_views"][0]["href"] == "/acidflow/"
    assert acidflow["fastapi_apps"][0]["url_prefix"] == "/acidflow"


@pytest.mark.timeout(300)
def test_backlog_page_shows_demo_backlog_and_compact_now_starts_a_run(airflow_api_server, browser):
    server = airflow_api_server
    table_dir = Path(server.warehouse) / "web_events"
    browser.set_cookie("_token", server.token, server.url)
    browser.navigate(f"{server.url}/acidflow/")
    browser.wait_for("document.querySelectorAll('#backlog tbody tr').length >= 5", 60)
    rows = browser.evaluate(_CELLS)
    by_key = {(row["table"], row["partition"]): row for row in rows}
    assert ("default.employee", "") in by_key
    for ds in ("2024-01-01", "2024-01-02", "2024-01-03"):
        row = by_key[("default.web_events", f"ds={ds}")]
        deltas, delete_deltas = _disk_counts(table_dir / f"ds={ds}")
        assert (int(row["deltas"]), int(row["delete_deltas"])) == (deltas, delete_deltas)
        assert deltas + delete_deltas == 15
        assert row["decision"] == "major no_base_and_delta_num_over_threshold"
        assert row["last_compaction"] == "never"
        assert row["total_bytes"].endswith("KiB")
    assert by_key[("default.employee", "")]["decision"].startswith("none ")
    assert browser.evaluate("document.querySelector('#queue') !== null")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = browser.screenshot(ARTIFACTS / "backlog_page.png")
    assert shot.stat().st_size > 10_000

    browser.evaluate(
        "document.querySelector('#backlog tbody tr[data-partition=\"ds=2024-01-02\"] button.compact-now').click()"
    )
    status = browser.wait_for(
        "document.getElementById('status').textContent.startsWith('started') && "
        "document.getElementById('status').textContent",
        60,
    )
    run_id = status.split(" run ", 1)[1]
    headers = {"Authorization": f"Bearer {server.token}"}
    run = httpx.get(
        f"{server.url}/api/v2/dags/acidflow_compaction/dagRuns/{run_id}", headers=headers, timeout=30
    ).json()
    assert run["conf"] == {
        "table": "default.web_events",
        "partition": "ds=2024-01-02",
        "type": "major",
        "statement": "",
    }
    assert run["state"] == "queued"
    browser.screenshot(ARTIFACTS / "backlog_page_compact_now.png")


@pytest.mark.timeout(300)
def test_platform_dags_are_active_when_the_platform_starts(airflow_api_server, browser):
    headers = {"Authorization": f"Bearer {airflow_api_server.token}"}
    dags = httpx.get(
        f"{airflow_api_server.url}/api/v2/dags",
        params={"dag_id_pattern": "acidflow"},
        headers=headers,
        timeout=30,
    ).json()["dags"]
    assert {d["dag_id"]: d["is_paused"] for d in dags} == {
        "acidflow_sensor": False,
        "acidflow_compaction": False,
        "acidflow_cleaner": False,
    }
    # What a new user sees on Airflow's DAG list (the page the issue found showing 0 active DAGs).
    browser.set_cookie("_token", airflow_api_server.token, airflow_api_server.url)
    browser.navigate(f"{airflow_api_server.url}/dags")
    browser.wait_for("document.body.innerText.includes('acidflow_sensor')", 90)
    ARTIFACTS.mkdir(exist_ok=True)
    browser.screenshot(ARTIFACTS / "airflow_dags_active.png")


def _grow_clicks_over_four_days(warehouse: str, now: float) -> None:
    """4 INSERTs a day into default.clicks, measured by the sensor's recording path each day; 4 more today."""
    from acidflow_airflow.config import AcidflowConfig
    from acidflow_airflow.hooks import AcidWarehouseHook

    from acid_core.sql.engine import SqlSession
    from acid_core.writes import Warehouse

    hook = AcidWarehouseHook(AcidflowConfig(warehouse=warehouse))
    with Warehouse.open(warehouse) as store:
        session = SqlSession(store)
        session.execute(
            "CREATE TABLE clicks (id int, url string) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
        )
        for day in range(5):
            for i in range(4):
                session.execute(f"INSERT INTO clicks VALUES ({day * 10 + i}, 'https://example.org/{i}')")
            if day < 4:
                hook.backlog(tables=["default.clicks"], record=True, now=now - (4 - day) * DAY)


@pytest.mark.timeout(300)
def test_backlog_page_growing_backlog_shows_trend_sorts_filters_and_failure_reason(
    airflow_api_server, browser
):
    from acid_core.metastore import CompactionType, open_metastore

    server = airflow_api_server
    _grow_clicks_over_four_days(server.warehouse, time.time())
    with open_metastore(None, server.warehouse) as metastore:
        compaction_id = metastore.enqueue_compaction("default.clicks", None, CompactionType.MINOR)
        metastore.find_next_to_compact("browser-test-worker")
        metastore.mark_failed(compaction_id, "disk quota exceeded on /warehouse/clicks")
    deltas_on_disk = sum(p.name.startswith("delta_") for p in (Path(server.warehouse) / "clicks").iterdir())
    assert deltas_on_disk == 20

    browser.set_cookie("_token", server.token, server.url)
    browser.navigate(f"{server.url}/acidflow/")
    browser.wait_for(
        "document.querySelector('#backlog tbody tr[data-table=\"default.clicks\"]') !== null", 60
    )
    clicks = next(r for r in browser.evaluate(_CELLS) if r["table"] == "default.clicks")
    assert clicks["deltas"] == "20"
    assert clicks["level"] == "ok"
    # 4 samples a day apart (4, 8, 12, 16) and 20 now: +4 a day, critical above 50 -> 31/4 days.
    assert clicks["time_to_critical"] == "7d 18h"
    assert clicks["last_compaction"].startswith(f"failed minor #{compaction_id}")
    assert "disk quota exceeded" in clicks["last_compaction"]
    points = browser.evaluate(
        '[...document.querySelectorAll(\'#backlog tr[data-table="default.clicks"] td[data-col="deltas"] svg\')]'
        ".map(svg => svg.dataset.points)"
    )
    assert points == ["5"]

    browser.evaluate("document.querySelector('#backlog th[data-key=\"deltas\"]').click()")
    order = [r["table"] for r in browser.evaluate(_CELLS)]
    assert order[0] == "default.clicks"  # most deltas first
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.screenshot(ARTIFACTS / "backlog_page_growing.png").stat().st_size > 10_000

    browser.evaluate(
        "const f = document.getElementById('filter'); f.value = 'web_ev';f.dispatchEvent(new Event('input'))"
    )
    visible = [(r["table"], r["partition"]) for r in browser.evaluate(_CELLS) if not r["hidden"]]
    assert sorted(visible) == [("default.web_events", f"ds=2024-01-0{day}") for day in (1, 2, 3)]
    assert browser.evaluate("document.getElementById('shown').textContent").startswith("3 of ")

    browser.evaluate(
        "const s = document.getElementById('state-filter'); s.value = 'failed';"
        "s.dispatchEvent(new Event('input'))"
    )
    failed = browser.evaluate(
        "[...document.querySelectorAll('#queue tbody tr')].filter(tr => !tr.hidden)"
        ".map(tr => [...tr.cells].map(td => td.innerText))"
    )
    assert [(row[0], row[1], row[4], row[9]) for row in failed] == [
        (str(compaction_id), "default.clicks", "failed", "disk quota exceeded on /warehouse/clicks")
    ]
    browser.screenshot(ARTIFACTS / "backlog_page_filtered.png")
