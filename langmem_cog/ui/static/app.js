// langmem-cog memory inspector: vanilla JS, no dependencies.
// Every piece of data is written with textContent (via h()), never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);

// h("li", {className: "x", dataset: {turnId: "D1:2"}}, "text", child): build an element safely.
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "className" || key === "title" || key === "hidden" || key === "value") el[key] = value;
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function clear(el) { el.replaceChildren(); return el; }
const day = (iso) => (iso ? String(iso).slice(0, 10) : "—");
const num = (x, d = 3) => (typeof x === "number" ? x.toFixed(d) : "—");

function setStatus(text, isError = false) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", isError);
}

// The server's access token comes with the page's address (http://127.0.0.1:PORT/?token=...) and is
// sent on every API call as a header (never in the API's URLs).
const TOKEN = new URLSearchParams(location.search).get("token");

async function api(path, params) {
  const url = path + "?" + new URLSearchParams(params).toString();
  const headers = { Accept: "application/json" };
  if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
  const res = await fetch(url, { headers, cache: "no-store", credentials: "omit" });
  let body;
  try { body = await res.json(); } catch (e) { throw new Error(`${res.status} ${res.statusText}`); }
  if (!res.ok) {
    const message = body && body.error ? body.error : `${res.status} ${res.statusText}`;
    throw new Error(res.status === 401 ? `401 unauthorized: ${message}` : message);
  }
  return body;
}

const state = { ns: null, graph: null, namespaces: [] };

// ------------------------------------------------------------------ tabs
function showTab(tab) {
  for (const btn of document.querySelectorAll("nav [role=tab]")) {
    const on = btn === tab;
    btn.setAttribute("aria-selected", on ? "true" : "false");
    $(btn.dataset.panel).hidden = !on;
  }
  if (tab.id === "tab-graph") loadGraph();
  if (tab.id === "tab-timeline") loadPersons();
}

// ------------------------------------------------------------------ namespaces
async function loadNamespaces() {
  const { namespaces } = await api("/api/namespaces", {});
  state.namespaces = namespaces;
  const sel = clear($("ns"));
  for (const n of namespaces) sel.append(h("option", { value: n.namespace }, n.namespace));
  const wanted = new URLSearchParams(location.search).get("ns");
  if (wanted && namespaces.some((n) => n.namespace === wanted)) sel.value = wanted;
  if (!namespaces.length) setStatus("the store holds no namespaces: start with --demo or --load-locomo", true);
  else setStatus(`${namespaces.length} namespace(s)`);
  selectNamespace();
}

function selectNamespace() {
  state.ns = $("ns").value || null;
  state.graph = null;
  const info = state.namespaces.find((n) => n.namespace === state.ns);
  $("ns-info").textContent = info ? `${info.turns} turns` : "";
  const dl = clear($("examples"));
  for (const q of (info && info.examples) || []) dl.append(h("option", { value: q }));
  for (const id of ["search-results"]) $(id).hidden = true;
  const active = document.querySelector("nav [aria-selected=true]");
  if (active && active.id !== "tab-search") showTab(active);
}

// ------------------------------------------------------------------ search
function turnItem(e, gold, extra) {
  const li = h("li", { className: gold.has(e.turn_id) ? "turn gold" : "turn", dataset: { turnId: e.turn_id } },
    h("span", { className: "turn-id" }, e.turn_id),
    h("span", { className: "meta" }, `${day(e.timestamp)} · score ${num(e.score)}`, extra ? ` · ${extra}` : ""),
    h("span", { className: "text" }, h("span", { className: "speaker" }, `${e.speaker}: `), e.text));
  if (gold.has(e.turn_id)) li.title = "expected evidence (from the dataset)";
  return li;
}

async function runSearch(ev) {
  if (ev) ev.preventDefault();
  const q = $("q").value.trim();
  if (!state.ns || !q) return;
  const params = { ns: state.ns, q, k: $("k").value || "10" };
  if ($("now").value.trim()) params.now = $("now").value.trim();
  setStatus("searching…");
  $("search-btn").disabled = true;
  try {
    const r = await api("/api/search", params);
    renderSearch(r);
    setStatus(`${r.results.length} retrieved (${r.retrieval}); ${r.n_evidence} grounded turn(s) in ${r.steps} operator step(s); ${r.raw.length} raw hit(s)`);
  } catch (e) {
    setStatus(e.message, true);
  } finally {
    $("search-btn").disabled = false;
  }
}

function renderSearch(r) {
  const gold = new Set(r.gold || []);
  const route = clear($("route"));
  route.append(h("span", { className: "pill intent" }, `intent ${r.intent}`));
  if (r.time_window) route.append(h("span", { className: "pill" }, `window ${day(r.time_window[0])} .. ${day(r.time_window[1])}`));
  for (const name of r.entities || []) route.append(h("span", { className: "pill" }, `entity ${name}`));
  route.append(h("span", { className: "pill" }, `stopped: ${r.reason || "—"}`));
  const g = $("gold");
  g.hidden = !r.gold;
  g.textContent = r.gold ? `expected evidence (from the dataset): ${r.gold.join(", ")}` : "";

  const body = clear($("trace").tBodies[0]);
  for (const t of r.trace) {
    body.append(h("tr", {},
      h("td", {}, t.step), h("td", {}, t.operator), h("td", {}, t.n_results), h("td", {}, num(t.ms, 1)),
      h("td", { className: "args" }, JSON.stringify(t.args)), h("td", { className: "args" }, (t.top || []).slice(0, 5).join(", "))));
  }
  $("retrieval-mode").textContent = `(the default retriever: ${r.retrieval})`;
  const results = clear($("results"));
  for (const e of r.results) results.append(turnItem(e, gold, `${e.stage}${e.claim_status ? " · claim " + e.claim_status : ""}` +
    `${e.fact_status ? " · state " + e.fact_status : ""}${e.placed_by ? " · placed as " + e.placed_by.replace("_", " ") : ""}`));
  if (!r.results.length) results.append(h("li", { className: "muted" }, "nothing retrieved"));
  const evidence = clear($("evidence"));
  for (const e of r.evidence) evidence.append(turnItem(e, gold, `via ${e.node} (${e.node_type}), step ${e.step}`));
  if (!r.evidence.length) evidence.append(h("li", { className: "muted" }, "no turn grounded"));
  const raw = clear($("raw"));
  for (const e of r.raw) raw.append(turnItem(e, gold, `dense ${num(e.dense_score)} · bm25 ${num(e.lexical_score, 2)}`));
  $("search-results").hidden = false;
}

// ------------------------------------------------------------------ graph
function turnsCell(turns, max = 6) {
  const shown = turns.slice(0, max).join(", ");
  return turns.length > max ? `${shown} … (+${turns.length - max})` : shown;
}

async function loadGraph() {
  if (!state.ns) return;
  if (state.graph && state.graph.namespace === state.ns) return;
  setStatus("loading graph…");
  try {
    state.graph = await api("/api/graph", { ns: state.ns });
    renderGraph(state.graph);
    setStatus(`graph of ${state.ns}` + (state.graph.truncated.length ? ` (lists cut at ${state.graph.limit}: ${state.graph.truncated.join(", ")})` : "")
      + (state.graph.note ? ` (${state.graph.note})` : ""));
  } catch (e) {
    setStatus(e.message, true);
  }
}

function renderGraph(g) {
  const counts = clear($("graph-counts"));
  for (const [k, v] of Object.entries(g.counts)) counts.append(h("span", { className: "pill" }, `${v} ${k}`));
  for (const [k, v] of Object.entries(g.edges)) counts.append(h("span", { className: "pill muted" }, `${v} ${k}`));

  const claims = clear($("claims").tBodies[0]);
  for (const c of g.claims) {
    const links = [...c.supersedes.map((x) => `supersedes ${x}`), ...c.conflicts_with.map((x) => `conflicts ${x}`)];
    claims.append(h("tr", { dataset: { id: c.id } },
      h("td", { className: "date" }, day(c.timestamp)), h("td", { className: "speaker" }, c.speaker),
      h("td", {}, h("span", { className: `badge ${c.status}` }, c.status)), h("td", {}, c.target),
      h("td", {}, c.polarity > 0 ? "+" : c.polarity < 0 ? "−" : "0"), h("td", {}, c.content),
      h("td", {}, turnsCell(c.turns)), h("td", {}, links.join("; "))));
  }
  const facts = clear($("facts"));
  const sorted = [...g.facts].sort((a, b) => Number(b.consolidated) - Number(a.consolidated));
  for (const f of sorted) {
    const li = h("li", { dataset: { id: f.id } },
      f.consolidated ? h("span", { className: "badge consolidated" }, "consolidated") : null, " ",
      h("strong", {}, f.text), " ",
      h("span", { className: "meta" }, `${f.subject} · ${f.predicate} · turns ${turnsCell(f.turns)}`,
        f.valid_from ? ` · from ${day(f.valid_from)}` : "", f.valid_to ? ` to ${day(f.valid_to)}` : ""));
    if (f.supported_by.length) {
      li.append(h("ul", {}, f.supported_by.map((e) => h("li", {},
        h("span", { className: "meta" }, `SUPPORTED_BY ${e.id} · ${day(e.start || e.said_at)} · `), e.text,
        h("span", { className: "meta" }, ` [${e.turns.join(", ")}]`)))));
    }
    facts.append(li);
  }
  const persons = clear($("persons").tBodies[0]);
  for (const p of g.persons) {
    persons.append(h("tr", {}, h("td", { className: "speaker" }, p.name), h("td", {}, p.aliases.join(", ")),
      h("td", {}, p.n_turns), h("td", { className: "date" }, day(p.first_seen)), h("td", { className: "date" }, day(p.last_seen))));
  }
  const events = clear($("events").tBodies[0]);
  for (const e of g.events) {
    events.append(h("tr", {}, h("td", { className: "date" }, day(e.start)), h("td", { className: "date" }, day(e.said_at)), h("td", {}, e.participants.join(", ")),
      h("td", {}, e.text, e.time_text ? h("span", { className: "meta" }, ` (“${e.time_text}”)`) : null),
      h("td", {}, e.concepts.join(", ")), h("td", {}, turnsCell(e.turns))));
  }
  const concepts = clear($("concepts").tBodies[0]);
  for (const c of g.concepts) {
    concepts.append(h("tr", {}, h("td", {}, c.name), h("td", {}, c.kind || ""), h("td", {}, c.n_turns), h("td", {}, c.aliases.join(", "))));
  }
  filterGraph();
}

function filterGraph() {
  const needle = $("graph-filter").value.trim().toLowerCase();
  for (const row of document.querySelectorAll("#panel-graph tbody tr, #facts > li")) {
    row.hidden = Boolean(needle) && !row.textContent.toLowerCase().includes(needle);
  }
}

// ------------------------------------------------------------------ timeline
async function loadPersons() {
  await loadGraph();
  if (!state.graph) return;
  const sel = $("person");
  const current = sel.value;
  clear(sel);
  for (const p of state.graph.persons) sel.append(h("option", { value: p.id }, `${p.name} (${p.n_turns} turns)`));
  if (current && state.graph.persons.some((p) => p.id === current)) sel.value = current;
  await loadTimeline();
}

async function loadTimeline() {
  const person = $("person").value;
  if (!state.ns || !person) return;
  try {
    const t = await api("/api/timeline", { ns: state.ns, person });
    renderTimeline(t);
    setStatus(`timeline of ${t.person.name}`);
  } catch (e) {
    setStatus(e.message, true);
  }
}

function renderTimeline(t) {
  $("timeline-info").textContent = `${t.events.length} event(s), ${t.linked} linked by NEXT edges`;
  const ol = clear($("timeline"));
  for (const e of t.events) {
    const li = h("li", { dataset: { id: e.id } },
      h("strong", {}, day(e.start || e.said_at)), " ",
      e.time_text ? h("span", { className: "meta" }, `(“${e.time_text}”, said ${day(e.said_at)}) `) : null,
      e.text,
      e.concepts.length ? h("span", { className: "meta" }, ` · ${e.concepts.join(", ")}`) : null);
    for (const q of e.evidence || []) {
      li.append(h("span", { className: "quote" }, h("span", { className: "turn-id" }, q.turn_id),
        h("span", { className: "speaker" }, `${q.speaker}: `), q.text));
    }
    ol.append(li);
  }
  const facts = clear($("person-facts"));
  for (const f of t.facts) facts.append(h("li", {}, h("strong", {}, f.text), h("span", { className: "meta" }, ` [${f.turns.join(", ")}]`)));
  if (!t.facts.length) facts.append(h("li", { className: "muted" }, "none"));
}

// ------------------------------------------------------------------ start
document.addEventListener("DOMContentLoaded", async () => {
  for (const tab of document.querySelectorAll("nav [role=tab]")) tab.addEventListener("click", () => showTab(tab));
  $("ns").addEventListener("change", selectNamespace);
  $("search-form").addEventListener("submit", runSearch);
  $("graph-filter").addEventListener("input", filterGraph);
  $("person").addEventListener("change", loadTimeline);
  try {
    await loadNamespaces();
    const q = new URLSearchParams(location.search).get("q");
    if (q) { $("q").value = q; await runSearch(); }
    document.body.dataset.ready = "true";
  } catch (e) {
    setStatus(e.message, true);
  }
});
