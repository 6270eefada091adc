"""The backlog page and its API: a FastAPI app mounted by the plugin at ``/acidflow``.

::

    GET  /acidflow/              the page (HTML + a little JS; the UI embeds it as an external view)
    GET  /acidflow/api/backlog   {"rows": [...], "queue": {...}, "generated": t}
    POST /acidflow/api/compact   {"table", "partition", "type"} or {"statement"}
                                 -> validated, then a run of acidflow_compaction with that conf

Every route depends on Airflow's ``get_user`` (a JWT in ``Authorization: Bearer`` or the UI's
``_token`` cookie): without credentials the answer is 401. "compact now" also needs permission
to create runs of the compaction DAG (the auth manager's ``is_authorized_dag``).
Errors: an invalid request answers 400 with the validation message and queues nothing.
"""

from __future__ import annotations

import html
import time
from typing import Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import Body, Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse

__all__ = ["COMPACTION_DAG_ID", "create_app"]

COMPACTION_DAG_ID = "acidflow_compaction"


def _backlog() -> dict[str, Any]:
    from acidflow_airflow.config import load_config
    from acidflow_airflow.hooks import AcidWarehouseHook

    hook = AcidWarehouseHook(load_config())
    return {"rows": hook.backlog(), "queue": hook.queue_summary(), "generated": time.time()}


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>acidflow backlog</title>
<style>
 body{font-family:system-ui,sans-serif;margin:1.2rem;color:#1b1f23}
 table{border-collapse:collapse;margin-bottom:1.5rem;font-size:.9rem}
 th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left}
 th{background:#f6f8fa} td.num{text-align:right}
 tr.critical td{background:#ffebe9} tr.warning td{background:#fff8c5}
 button{cursor:pointer} #status{margin:.5rem 0;font-weight:600}
</style></head><body>
<h1>Hive ACID backlog</h1>
<p>Per table and partition: what a reader merges now, what the cleaner may delete, and what
Hive's initiator would do. <span id="generated"></span></p>
<div id="status"></div>
<h2>Tables and partitions</h2>
<table id="backlog"><thead><tr>
 <th>table</th><th>partition</th><th>owner</th><th>level</th><th>deltas</th><th>delete deltas</th>
 <th>aborted</th><th>obsolete</th><th>delta bytes</th><th>delete delta bytes</th><th>aborted bytes</th>
 <th>obsolete bytes</th><th>decision</th><th>reason</th><th>compact now</th></tr></thead><tbody></tbody></table>
<h2>Compaction queue and history</h2>
<table id="queue"><thead><tr><th>id</th><th>table</th><th>partition</th><th>type</th><th>state</th>
<th>enqueued</th><th>worker</th><th>error</th></tr></thead><tbody></tbody></table>
<script>
const esc = s => (s === null || s === undefined) ? "" : String(s).replace(/[&<>"']/g,
  c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
const when = t => t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "";
async function load() {
  const r = await fetch("api/backlog", {credentials: "same-origin"});
  if (!r.ok) { document.getElementById("status").textContent = "backlog: HTTP " + r.status; return; }
  const data = await r.json();
  document.getElementById("generated").textContent = "Measured " + when(data.generated) + " UTC.";
  const body = document.querySelector("#backlog tbody"); body.innerHTML = "";
  for (const row of data.rows) {
    const tr = document.createElement("tr"); tr.className = row.level;
    tr.dataset.table = row.table; tr.dataset.partition = row.partition || "";
    const type = row.compaction_type || "major";
    tr.innerHTML = [row.table, row.partition, row.owner, row.level].map(v => `<td>${esc(v)}</td>`).join("") +
      [row.deltas, row.delete_deltas, row.aborted, row.obsolete, row.delta_bytes, row.delete_delta_bytes,
       row.aborted_bytes, row.obsolete_bytes].map(v => `<td class="num">${esc(v)}</td>`).join("") +
      `<td>${esc(row.compaction_type || "none")}</td><td title="${esc(row.message)}">${esc(row.reason)}: ${esc(row.message)}</td>` +
      `<td><button class="compact-now" data-type="${esc(type)}">compact now (${esc(type)})</button></td>`;
    body.appendChild(tr);
  }
  const q = document.querySelector("#queue tbody"); q.innerHTML = "";
  for (const e of data.queue.entries) {
    const tr = document.createElement("tr");
    tr.innerHTML = [e.id, e.table, e.partition, e.type, e.state, when(e.enqueue_time), e.worker_id, e.error_message]
      .map(v => `<td>${esc(v)}</td>`).join("");
    q.appendChild(tr);
  }
}
document.addEventListener("click", async ev => {
  const b = ev.target.closest("button.compact-now"); if (!b) return;
  const tr = b.closest("tr");
  const r = await fetch("api/compact", {method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({table: tr.dataset.table, partition: tr.dataset.partition || null, type: b.dataset.type})});
  const data = await r.json();
  document.getElementById("status").textContent = r.ok
    ? `started ${data.dag_id} run ${data.dag_run_id}` : `refused: ${data.detail}`;
});
load();
</script></body></html>
"""


def _authorize_trigger(user: Any) -> None:  # noqa: ANN401
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails

    allowed = get_auth_manager().is_authorized_dag(
        method="POST", access_entity=DagAccessEntity.RUN, details=DagDetails(id=COMPACTION_DAG_ID), user=user
    )
    if not allowed:
        raise HTTPException(status_code=403, detail=f"not allowed to trigger {COMPACTION_DAG_ID}")


def _trigger(conf: dict[str, Any], user: Any) -> dict[str, Any]:  # noqa: ANN401
    from airflow.api.common.trigger_dag import trigger_dag
    from airflow.utils.types import DagRunTriggeredByType

    run = trigger_dag(
        COMPACTION_DAG_ID,
        triggered_by=DagRunTriggeredByType.REST_API,
        triggering_user_name=getattr(user, "get_name", lambda: None)(),
        conf=conf,
        note="compact now (acidflow backlog page)",
    )
    if run is None:
        raise HTTPException(status_code=409, detail=f"{COMPACTION_DAG_ID} could not be triggered")
    return {"dag_id": COMPACTION_DAG_ID, "dag_run_id": run.run_id, "conf": conf}


def create_app() -> FastAPI:
    """The FastAPI app; every route requires an authenticated Airflow user."""
    app = FastAPI(title="acidflow backlog", dependencies=[Depends(get_user)])

    @app.get("/", response_class=HTMLResponse)
    def page() -> str:
        return _PAGE

    @app.get("/api/backlog")
    def backlog() -> dict[str, Any]:
        return _backlog()

    @app.post("/api/compact")
    def compact(
        request: dict[str, Any] = Body(...),  # noqa: B008
        user: Any = Depends(get_user),  # noqa: ANN401, B008
    ) -> dict[str, Any]:
        from acid_core.errors import AcidError
        from acidflow_airflow.config import load_config
        from acidflow_airflow.hooks import AcidMetastoreHook
        from acidflow_airflow.operators import validate_targets
        from acidflow_airflow.requests import request_from_params

        _authorize_trigger(user)
        params = {k: request.get(k) for k in ("statement", "table", "partition", "type")}
        try:
            parsed = request_from_params(params)
            with AcidMetastoreHook(load_config()).metastore() as metastore:
                validate_targets(metastore, [parsed.to_dict()])
        except AcidError as error:
            raise HTTPException(status_code=400, detail=html.escape(str(error), quote=False)) from error
        conf = {
            "table": parsed.table,
            "partition": parsed.partition,
            "type": parsed.compaction_type,
            "statement": "",
        }
        return _trigger(conf, user)

    return app
