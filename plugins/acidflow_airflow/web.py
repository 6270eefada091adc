"""The backlog page and its API: a FastAPI app mounted by the plugin at ``/acidflow``.

::

    GET  /acidflow/              the page (HTML + a little JS; the UI embeds it as an external view)
    GET  /acidflow/api/backlog   {"rows": [...], "queue": {...}, "generated": t, "window_seconds": w}
                                 rows carry their history (server-drawn SVG sparklines of the
                                 sensor's samples) and the time to their critical level
    POST /acidflow/api/compact   {"table", "partition", "type"} or {"statement"}
                                 -> validated, then a run of acidflow_compaction with that conf

Every route depends on Airflow's ``get_user`` (a JWT in ``Authorization: Bearer`` or the UI's
``_token`` cookie): without credentials the answer is 401. "compact now" also needs permission
to create runs of the compaction DAG (the auth manager's ``is_authorized_dag``).
Errors: an invalid request answers 400 with the validation message and queues nothing.
"""

from __future__ import annotations

import html
from typing import Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import Body, Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse

__all__ = ["COMPACTION_DAG_ID", "create_app"]

COMPACTION_DAG_ID = "acidflow_compaction"


def _backlog() -> dict[str, Any]:
    from acidflow_airflow.config import load_config
    from acidflow_airflow.hooks import AcidWarehouseHook

    return AcidWarehouseHook(load_config()).backlog_page()


# The sparklines arrive as SVG drawn by the server (acidflow_airflow.trends) from numbers only;
# every other value is escaped before it reaches innerHTML. No chart library, no CDN.
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>acidflow backlog</title>
<style>
 body{font-family:system-ui,sans-serif;margin:1.2rem;color:#1b1f23}
 table{border-collapse:collapse;margin-bottom:1.5rem;font-size:.85rem}
 th,td{border:1px solid #d0d7de;padding:.25rem .45rem;text-align:left;vertical-align:middle}
 th{background:#f6f8fa;white-space:nowrap} th[data-key]{cursor:pointer} th.sorted-asc:after{content:" \\25B2"}
 th.sorted-desc:after{content:" \\25BC"} td.num{text-align:right;white-space:nowrap}
 td.num svg{display:block;margin-left:auto}
 tr.critical td{background:#ffebe9} tr.warning td{background:#fff8c5}
 .state-failed,.state-refused,.state-aborted{color:#cf222e;font-weight:600}
 .state-succeeded,.state-ready_for_cleaning{color:#1a7f37} .state-working,.state-initiated{color:#9a6700}
 button{cursor:pointer} #status{margin:.5rem 0;font-weight:600} .controls{margin:.5rem 0 .8rem}
 .controls input,.controls select{margin-right:1rem;padding:.2rem} .muted{color:#57606a}
 .chips span{display:inline-block;border:1px solid #d0d7de;border-radius:1rem;padding:.1rem .6rem;margin:.1rem}
 .err{color:#cf222e;max-width:28rem;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
</style></head><body>
<h1>Hive ACID backlog</h1>
<p>Per table and partition: what a reader merges now, how it grew over the last
<span id="window"></span> (sensor samples), when it reaches its critical level at that pace, and what
Hive's initiator would do. <span id="generated" class="muted"></span></p>
<div class="chips" id="counts"></div>
<div id="status"></div>
<h2>Tables and partitions</h2>
<div class="controls">
 <label>Filter <input id="filter" type="search" placeholder="table, partition or owner"></label>
 <label>Level <select id="level-filter"><option value="">all</option><option>critical</option>
 <option>warning</option><option>ok</option></select></label>
 <span id="shown" class="muted"></span>
</div>
<table id="backlog"><thead><tr>
 <th data-key="table">table</th><th data-key="partition">partition</th><th data-key="owner">owner</th>
 <th data-key="level">level</th><th data-key="deltas">deltas</th><th data-key="delete_deltas">delete deltas</th>
 <th data-key="total_bytes">delta bytes</th><th data-key="oldest_delta_age">oldest delta</th>
 <th data-key="aborted">aborted</th><th data-key="obsolete">obsolete</th>
 <th data-key="last_compaction">last compaction</th><th data-key="decision">decision</th>
 <th data-key="time_to_critical">time to critical</th><th>compact now</th></tr></thead><tbody></tbody></table>
<h2>Compaction queue and history</h2>
<div class="controls"><label>State <select id="state-filter"><option value="">all</option>
 <option>initiated</option><option>working</option><option>ready_for_cleaning</option><option>succeeded</option>
 <option>failed</option><option>refused</option><option>aborted</option><option>did_not_initiate</option>
 </select></label></div>
<table id="queue"><thead><tr><th>id</th><th>table</th><th>partition</th><th>type</th><th>state</th>
<th>enqueued</th><th>started</th><th>ended</th><th>worker</th><th>failure reason</th></tr></thead><tbody></tbody></table>
<h2>What the cleaner waits for</h2>
<table id="readers"><thead><tr><th>reader</th><th>who</th><th>open for</th></tr></thead><tbody></tbody></table>
<script>
const esc = s => (s === null || s === undefined) ? "" : String(s).replace(/[&<>"']/g,
  c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
const when = t => t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "";
function dur(s) {
  if (s === null || s === undefined) return "";
  s = Math.max(0, Math.floor(s)); const out = [];
  for (const [u, n] of [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]]) {
    if (s >= n || (u === "s" && !out.length)) { out.push(Math.floor(s / n) + u); s %= n; }
    if (out.length === 2) break;
  }
  return out.join(" ");
}
const spark = (row, name) => (row.history && row.history[name]) ? row.history[name].svg : "";
let sortKey = null, sortDir = 1;
function cell(col, sort, html, cls) {
  return `<td data-col="${col}" data-sort="${esc(sort)}"${cls ? ` class="${cls}"` : ""}>${html}</td>`;
}
function lastCompaction(c) {
  if (!c) return cell("last_compaction", "", '<span class="muted">never</span>');
  const t = c.end_time || c.start_time || c.enqueue_time;
  const err = c.error_message ? `<div class="err" title="${esc(c.error_message)}">${esc(c.error_message)}</div>` : "";
  return cell("last_compaction", t || 0,
    `<span class="state-${esc(c.state)}">${esc(c.state)}</span> ${esc(c.type)} #${esc(c.id)}<br>` +
    `<span class="muted">${esc(when(t))}</span>${err}`);
}
function render(rows) {
  const body = document.querySelector("#backlog tbody"); body.innerHTML = "";
  for (const row of rows) {
    const tr = document.createElement("tr"); tr.className = row.level;
    tr.dataset.table = row.table; tr.dataset.partition = row.partition || "";
    tr.dataset.search = [row.table, row.partition, row.owner].join(" ").toLowerCase();
    const type = row.compaction_type || "major";
    const ttc = row.time_to_critical;
    tr.innerHTML =
      cell("table", row.table, esc(row.table)) + cell("partition", row.partition || "", esc(row.partition)) +
      cell("owner", row.owner || "", esc(row.owner)) + cell("level", {critical: 2, warning: 1, ok: 0}[row.level], esc(row.level)) +
      cell("deltas", row.deltas, `${esc(row.deltas)}${spark(row, "deltas")}`, "num") +
      cell("delete_deltas", row.delete_deltas, esc(row.delete_deltas), "num") +
      cell("total_bytes", row.total_bytes, `<span title="${esc(row.delta_bytes_human)} in deltas, ` +
        `${esc(row.delete_delta_bytes_human)} in delete deltas">${esc(row.total_bytes_human)}</span>${spark(row, "bytes")}`, "num") +
      cell("oldest_delta_age", row.oldest_delta_age === null ? -1 : row.oldest_delta_age,
        `${esc(row.oldest_delta_age_human || "-")}${spark(row, "oldest_delta_age")}`, "num") +
      cell("aborted", row.aborted, `${esc(row.aborted)}<br><span class="muted">${esc(row.aborted_bytes_human)}</span>`, "num") +
      cell("obsolete", row.obsolete, `${esc(row.obsolete)}<br><span class="muted">${esc(row.obsolete_bytes_human)}</span>`, "num") +
      lastCompaction(row.last_compaction) +
      cell("decision", row.compaction_type || "none",
        `<b>${esc(row.compaction_type || "none")}</b> <span class="muted" title="${esc(row.message)}">${esc(row.reason)}</span>`) +
      cell("time_to_critical", ttc === null || ttc === undefined ? 1e15 : ttc,
        ttc === null || ttc === undefined ? '<span class="muted">not growing</span>' : (ttc === 0 ? "<b>now</b>" : esc(dur(ttc))), "num") +
      `<td><button class="compact-now" data-type="${esc(type)}">compact now (${esc(type)})</button></td>`;
    body.appendChild(tr);
  }
  applySort(); applyFilter();
}
function applySort() {
  document.querySelectorAll("#backlog th").forEach(th => th.classList.remove("sorted-asc", "sorted-desc"));
  if (!sortKey) return;
  document.querySelector(`#backlog th[data-key="${sortKey}"]`).classList.add(sortDir > 0 ? "sorted-asc" : "sorted-desc");
  const body = document.querySelector("#backlog tbody");
  const value = tr => { const v = tr.querySelector(`td[data-col="${sortKey}"]`).dataset.sort;
    const n = Number(v); return v !== "" && !isNaN(n) ? n : v; };
  [...body.rows].sort((a, b) => { const x = value(a), y = value(b);
    return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * sortDir; })
    .forEach(tr => body.appendChild(tr));
}
function applyFilter() {
  const text = document.getElementById("filter").value.trim().toLowerCase();
  const level = document.getElementById("level-filter").value;
  let shown = 0; const rows = document.querySelectorAll("#backlog tbody tr");
  rows.forEach(tr => { const ok = (!text || tr.dataset.search.includes(text)) && (!level || tr.className === level);
    tr.hidden = !ok; shown += ok; });
  document.getElementById("shown").textContent = `${shown} of ${rows.length} shown`;
  const state = document.getElementById("state-filter").value;
  document.querySelectorAll("#queue tbody tr").forEach(tr => { tr.hidden = !!state && tr.dataset.state !== state; });
}
async function load() {
  const r = await fetch("api/backlog", {credentials: "same-origin"});
  if (!r.ok) { document.getElementById("status").textContent = "backlog: HTTP " + r.status; return; }
  const data = await r.json();
  document.getElementById("generated").textContent = "Measured " + when(data.generated) + " UTC.";
  document.getElementById("window").textContent = dur(data.window_seconds);
  document.getElementById("counts").innerHTML = Object.entries(data.queue.counts)
    .map(([k, v]) => `<span data-state="${esc(k)}">${esc(k)}: <b>${esc(v)}</b></span>`).join("");
  const q = document.querySelector("#queue tbody"); q.innerHTML = "";
  for (const e of [...data.queue.entries].reverse()) {
    const tr = document.createElement("tr"); tr.dataset.state = e.state;
    tr.innerHTML = [e.id, e.table, e.partition, e.type].map(v => `<td>${esc(v)}</td>`).join("") +
      `<td class="state-${esc(e.state)}">${esc(e.state)}</td>` +
      [when(e.enqueue_time), when(e.start_time), when(e.end_time), e.worker_id].map(v => `<td>${esc(v)}</td>`).join("") +
      `<td class="reason">${esc(e.error_message)}</td>`;
    q.appendChild(tr);
  }
  const readers = document.querySelector("#readers tbody"); readers.innerHTML = "";
  for (const t of data.queue.open_txns) {
    readers.insertAdjacentHTML("beforeend",
      `<tr><td>open transaction ${esc(t.txn_id)}</td><td>${esc(t.user)}@${esc(t.host)}</td><td>${esc(dur(t.age))}</td></tr>`);
  }
  for (const l of data.queue.leases) {
    readers.insertAdjacentHTML("beforeend",
      `<tr><td>lease ${esc(l.lease_id)} on ${esc(l.table)}</td><td>${esc(l.owner)}</td><td>${esc(dur(data.generated - l.created))}</td></tr>`);
  }
  if (!readers.rows.length) readers.innerHTML = '<tr><td colspan="3" class="muted">none: the cleaner is not held back</td></tr>';
  render(data.rows);
}
document.querySelector("#backlog thead").addEventListener("click", ev => {
  const th = ev.target.closest("th[data-key]"); if (!th) return;
  sortDir = sortKey === th.dataset.key ? -sortDir : (["table", "partition", "owner"].includes(th.dataset.key) ? 1 : -1);
  sortKey = th.dataset.key; applySort();
});
for (const id of ["filter", "level-filter", "state-filter"]) document.getElementById(id).addEventListener("input", applyFilter);
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
