// policyforge dashboard: live lists, live session parts, charts (Plotly) and steering buttons.
"use strict";

const POLL_MS = 3000;

// Control, format and invisible characters of generated text as visible escapes, as
// workflows/contracts/shown.py writes them: a direction override (\u202e) would make
// "DEVORPPA" read "APPROVED", a zero-width character would hide text.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}]/gu;

function visible(text) {
  return String(text).replace(HIDDEN, (ch) => {
    const code = ch.codePointAt(0);
    if (code < 0x100) return `\\x${code.toString(16).padStart(2, "0")}`;
    if (code < 0x10000) return `\\u${code.toString(16).padStart(4, "0")}`;
    return `\\U${code.toString(16).padStart(8, "0")}`;
  });
}

// Plotly reads a subset of HTML in trace names, legends, hover labels and titles (<a href>,
// <b>, <br>, entities): escaped, a term named "<a href=...>" is drawn as those characters.
function plotlyText(text) {
  return visible(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

async function postJSON(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function cell(row, text, href) {
  const td = row.insertCell();
  if (href) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = visible(text);
    td.appendChild(a);
  } else {
    td.textContent = visible(text);
  }
  return td;
}

// --- the session list ---------------------------------------------------------------------------

function listParams() {
  const form = document.getElementById("filters");
  const params = new URLSearchParams();
  for (const [key, value] of new FormData(form)) if (value) params.set(key, value);
  return params;
}

async function refreshList() {
  const params = listParams();
  const error = document.getElementById("list-error");
  try {
    const response = await fetch(`/api/sessions?${params}`, { credentials: "same-origin" });
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
    error.hidden = true;
    showPager(params, data.next_page);
    const body = document.querySelector("#sessions tbody");
    body.replaceChildren();
    if (!data.sessions.length) {
      const row = body.insertRow();
      const td = cell(row, "No session matches.");
      td.colSpan = 9;
      td.className = "muted";
    }
    for (const s of data.sessions) {
      const row = body.insertRow();
      row.dataset.session = s.session_id;
      cell(row, s.session_id, `/sessions/${encodeURIComponent(s.session_id)}`);
      cell(row, s.prompt || "");
      cell(row, s.env_id || "");
      cell(row, s.model || "");
      const stage = cell(row, (s.stage || s.workflow_status).replace("_", " "));
      stage.className = `stage stage-${s.stage || ""}`;
      if (s.workflow_status !== "Running" && s.workflow_status !== "Completed") {
        stage.textContent += ` (${s.workflow_status.toLowerCase()})`;
      }
      cell(row, s.iteration ?? "");
      cell(row, s.best_score == null ? "—" : s.best_score.toFixed(2));
      cell(row, s.passed == null ? "" : s.passed ? "yes" : "no");
      cell(row, s.started.replace("T", " ").replace("+00:00", " UTC"));
    }
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
  }
}

// Links to the first and the next page of the list, with the same filters.
function showPager(params, nextPage) {
  const next = document.getElementById("next-page");
  const first = document.getElementById("first-page");
  const at = (page) => {
    const p = new URLSearchParams(params);
    if (page) p.set("page", page); else p.delete("page");
    return `/?${p}`;
  };
  next.hidden = !nextPage;
  if (nextPage) next.href = at(nextPage);
  first.hidden = !params.get("page");
  first.href = at("");
}

function startList() {
  const form = document.getElementById("filters");
  form.addEventListener("change", () => {
    form.elements.page.value = "";  // other filters: from their first page
    history.replaceState(null, "", `/?${listParams()}`);
    refreshList();
  });
  form.addEventListener("submit", (e) => e.preventDefault());
  refreshList();
  setInterval(refreshList, POLL_MS);
}

// --- charts -----------------------------------------------------------------------------------

function drawCharts(root) {
  if (!window.Plotly) return;
  for (const div of root.querySelectorAll(".chart:not([data-drawn])")) {
    const series = JSON.parse(div.dataset.series);
    const traces = Object.entries(series)
      .filter(([name]) => name !== "x")
      .map(([name, y]) => ({ x: series.x, y, name: plotlyText(name.replace(/^term_/, "")), mode: "lines+markers", type: "scatter" }));
    const layout = {
      title: { text: plotlyText(div.dataset.title), font: { size: 14 } },
      margin: { l: 50, r: 10, t: 36, b: 40 },
      height: 260,
      xaxis: { title: { text: "timesteps" } },
      legend: { orientation: "h", y: -0.3 },
    };
    window.Plotly.newPlot(div, traces, layout, { displayModeBar: false, responsive: true });
    div.dataset.drawn = "1";
  }
}

// --- a session page ---------------------------------------------------------------------------

async function refreshSession() {
  const id = document.body.dataset.session;
  const response = await fetch(`/api/sessions/${encodeURIComponent(id)}/parts`, { credentials: "same-origin" });
  if (!response.ok) return;
  const data = await response.json();
  document.body.dataset.state = data.state;
  if (data.version === document.body.dataset.version) return;
  document.body.dataset.version = data.version;
  const container = document.getElementById("parts");
  for (const [name, html] of Object.entries(data.parts)) {
    let section = container.querySelector(`section[data-part="${name}"]`);
    // Only parts that changed are replaced: a video playing in a finished iteration plays on.
    if (section && section.dataset.hash === data.hashes[name]) continue;
    if (!section) {
      section = document.createElement("section");
      section.className = "part";
      section.dataset.part = name;
      container.appendChild(section);
    }
    // What a person was just told (e.g. "approved") outlives the re-render the answer causes.
    const kept = [...section.querySelectorAll("[data-keep][id]")].map((el) => [el.id, el.textContent, el.className]);
    section.innerHTML = html;
    for (const [keptId, text, cls] of kept) {
      const el = section.querySelector(`#${keptId}`);
      if (el) { el.textContent = text; el.className = cls; }
    }
    section.dataset.hash = data.hashes[name];
    drawCharts(section);
  }
}

async function steer(button) {
  const id = document.body.dataset.session;
  const action = button.dataset.action;
  const answer = document.getElementById("steer-answer");
  let body = {};
  if (action === "approve") body = { approve: button.dataset.approve === "true", note: document.getElementById("approve-note").value };
  if (action === "feedback") body = { text: document.getElementById("feedback-text").value };
  if (action === "extend") body = { iterations: parseInt(document.getElementById("extend-n").value, 10) };
  if (action === "abort") {
    if (!window.confirm("Abort this session? Running work is cancelled; the best policy so far is kept.")) return;
    body = { reason: document.getElementById("abort-reason").value };
  }
  button.disabled = true;
  try {
    const data = await postJSON(`/api/sessions/${encodeURIComponent(id)}/${action}`, body);
    answer.textContent = data.answer;
    answer.className = "answer ok";
  } catch (e) {
    answer.textContent = e.message;
    answer.className = "answer error";
  } finally {
    button.disabled = false;
  }
  refreshSession();
}

function startSession() {
  drawCharts(document);
  document.addEventListener("click", (e) => {
    const button = e.target.closest("button[data-action]");
    if (button) steer(button);
  });
  const tick = async () => {
    try {
      await refreshSession();
    } finally {
      if (document.body.dataset.state === "Running") setTimeout(tick, POLL_MS);
    }
  };
  setTimeout(tick, POLL_MS);
}

// --- sign-out ---------------------------------------------------------------------------------

function startSignOut() {
  const button = document.getElementById("sign-out");
  if (!button) return;
  button.addEventListener("click", async () => {
    try {
      await postJSON("/logout", {});
    } finally {
      window.location.assign("/login");
    }
  });
}

// --- a benchmark page: refresh while it runs ----------------------------------------------------

function startBenchmark() {
  if (document.body.dataset.state === "Running") setTimeout(() => window.location.reload(), 5000);
}

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  startSignOut();
  if (page === "sessions") startList();
  if (page === "session") startSession();
  if (page === "benchmark") startBenchmark();
});
