"""The backlog page in a real headless chromium, served by a running ``airflow api-server``.

Expected counts come from the demo warehouse's directories on disk (names parsed here, not by
acidflow): each web_events partition holds 12 inserts, one delete and one update.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.integration("browser"), pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


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
    rows = browser.evaluate(
        "[...document.querySelectorAll('#backlog tbody tr')].map(tr => [...tr.cells].map(td => td.innerText))"
    )
    by_key = {(row[0], row[1]): row for row in rows}
    assert ("default.employee", "") in by_key
    for ds in ("2024-01-01", "2024-01-02", "2024-01-03"):
        row = by_key[("default.web_events", f"ds={ds}")]
        deltas, delete_deltas = _disk_counts(table_dir / f"ds={ds}")
        assert (int(row[4]), int(row[5])) == (deltas, delete_deltas)
        assert deltas + delete_deltas == 15
        assert row[12] == "major"
        assert row[13].startswith("no_base_and_delta_num_over_threshold")
    assert by_key[("default.employee", "")][12] == "none"
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
