// The dataset explorer (/explore): a small GraphQL client, no framework and no build step.
// It talks only to POST /api/v1/graphql with the short-lived token the page carries. Every
// value from a dataset reaches the page through textContent or SVG text nodes, never as markup.
"use strict";

const root = document.getElementById("explore");
const endpoint = root.dataset.endpoint;
const token = root.dataset.token;
// The server's limit of dataset fetches in one GraphQL operation (MAX_FETCHES).
const MAX_FETCHES = Number(root.dataset.maxFetches);
const PER_PAGE = 20;
// Grouped statistics ask for this many groups at most (agg `limit`, contract §12.2): an answer
// never grows with the dataset, however many values the grouped field has.
const TOP_GROUPS = 50;
const CHART_BARS = 15;
const MAX_FACETS = 4;
const FACET_VALUES = 8;
const MAX_COLUMNS = 8;
// Facets start open from this width; below it they start folded, so the records come first.
const WIDE = window.matchMedia("(min-width: 50rem)");
const SVG = "http://www.w3.org/2000/svg";

const state = {
  slug: "",
  fields: [],
  idField: null,
  facets: [], // keyword fields with value counts beside the table, best first
  columns: [], // field names shown in the table
  openFacets: new Set(),
  q: "",
  filters: [], // [{field, value}]
  sort: null, // {field, order}
  page: 1,
  lastPage: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function status(text) {
  $("status").textContent = text || "";
}

const number = new Intl.NumberFormat("en");

async function gql(query, variables) {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + token },
    body: JSON.stringify({ query, variables }),
  });
  let body;
  try {
    body = await response.json();
  } catch {
    throw new Error("The API answered " + response.status + ".");
  }
  if (response.status === 401) {
    throw new Error("The explorer's token has expired: reload the page.");
  }
  if (body.errors && body.errors.length) {
    throw new Error(body.errors.map((e) => e.message).join(" "));
  }
  if (!response.ok) throw new Error(body.message || "The API answered " + response.status + ".");
  return body.data;
}

function show(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// Reads a dotted path (geo.city) out of a record.
function pick(record, path) {
  if (Object.prototype.hasOwnProperty.call(record, path)) return record[path];
  let value = record;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = value[part];
  }
  return value;
}

async function loadDatasets() {
  const data = await gql("{ datasets(perPage: 100) { total datasets { slug title recordCount } } }");
  const select = $("dataset");
  select.replaceChildren(el("option", "Pick a dataset…", { value: "" }));
  for (const d of data.datasets.datasets) {
    select.append(el("option", `${d.title} (${number.format(d.recordCount)})`, { value: d.slug }));
  }
  status(data.datasets.total + " datasets.");
}

async function pickDataset(slug) {
  Object.assign(state, { slug, fields: [], idField: null, facets: [], columns: [], q: "", filters: [], sort: null, page: 1, lastPage: null });
  state.openFacets.clear();
  $("q").value = "";
  $("record-detail").hidden = true;
  $("stats").replaceChildren();
  if (!slug) return;
  const data = await gql(
    `query Fields($slug: String!) { dataset(slug: $slug) { title description idField
       fields { name type description filter { exact fulltext sort groupBy } } } }`,
    { slug },
  );
  state.fields = data.dataset.fields;
  state.idField = data.dataset.idField;
  const ranked = await rankKeywords();
  state.facets = ranked.filter((r) => r.groups > 1).slice(0, MAX_FACETS).map((r) => r.field);
  if (WIDE.matches) for (const f of state.facets) state.openFacets.add(f.name);
  state.columns = defaultColumns(ranked);
  fillStatsControls(ranked);
  renderColumnPicker();
  await refresh();
}

// The keyword fields that can be grouped, except the identifier field (one group per record),
// those with at most TOP_GROUPS values first (a phone number or a URL is no facet), each part
// ranked by how much of the dataset their most common values cover: one document asks each
// (at most MAX_FETCHES of them) for its top FACET_VALUES values and its number of values.
async function rankKeywords() {
  const candidates = state.fields
    .filter((f) => f.filter.groupBy && f.name !== "_id" && f.name !== state.idField)
    .slice(0, MAX_FETCHES);
  if (!candidates.length) return [];
  const aggs = candidates.map(
    (f, i) => `k${i}: agg(slug: $slug, groupBy: ${JSON.stringify(f.name)}, limit: ${FACET_VALUES}) {
      totalRecords totalGroups groups { stats { count } } }`,
  );
  const data = await gql(`query Rank($slug: String!) { ${aggs.join("\n")} }`, { slug: state.slug });
  const ranked = candidates.map((field, i) => {
    const agg = data["k" + i];
    const covered = agg.groups.reduce((sum, g) => sum + g.stats.count, 0);
    return { field, groups: agg.totalGroups, coverage: agg.totalRecords ? covered / agg.totalRecords : 0 };
  });
  const many = (r) => (r.groups > TOP_GROUPS ? 1 : 0);
  return ranked.sort((a, b) => many(a) - many(b) || b.coverage - a.coverage || a.groups - b.groups);
}

// The table starts with _id, a text field (a name, a title), the best keyword fields, a date
// and number fields, those the schema describes first; the column picker changes it.
function defaultColumns(ranked) {
  const of = (type) => state.fields.filter((f) => f.type === type && f.name !== state.idField);
  const names = [
    "_id",
    ...of("text").slice(0, 1).map((f) => f.name),
    ...ranked.slice(0, 2).map((r) => r.field.name),
    ...of("date").slice(0, 1).map((f) => f.name),
  ];
  const numbers = of("number");
  for (const f of [...numbers.filter((f) => f.description), ...numbers.filter((f) => !f.description)]) {
    if (names.length < MAX_COLUMNS) names.push(f.name);
  }
  return names;
}

// Group by: every groupable keyword field but the identifier; by default the one with few
// values (at most TOP_GROUPS) that covers the most records.
function fillStatsControls(ranked) {
  const groupBy = $("group-by");
  const statField = $("stat-field");
  groupBy.replaceChildren();
  statField.replaceChildren(el("option", "(count only)", { value: "" }));
  for (const f of state.fields) {
    if (f.filter.groupBy && f.name !== "_id" && f.name !== state.idField) groupBy.append(el("option", f.name, { value: f.name }));
    if (f.type === "number") statField.append(el("option", f.name, { value: f.name }));
  }
  const best = ranked.find((r) => r.groups > 1 && r.groups <= TOP_GROUPS) || ranked[0];
  if (best) groupBy.value = best.field.name;
  updateMetrics();
}

function renderColumnPicker() {
  const list = $("column-list");
  list.replaceChildren();
  for (const f of state.fields) {
    if (f.type === "json") continue;
    const box = el("input", null, { type: "checkbox", value: f.name });
    box.checked = state.columns.includes(f.name);
    box.addEventListener("change", () => {
      state.columns = state.fields.map((g) => g.name).filter((n) => (n === f.name ? box.checked : state.columns.includes(n)));
      if (state.lastPage) renderRecords(state.lastPage);
    });
    const label = el("label", null, { class: "pick" });
    label.append(box, document.createTextNode(" " + f.name));
    list.append(label);
  }
}

// One document: the page of records and the value counts of the facets, under the same
// conditions.
async function refresh() {
  if (!state.slug) return;
  const facets = state.facets;
  const aggs = facets
    .map(
      (f, i) =>
        `f${i}: agg(slug: $slug, groupBy: ${JSON.stringify(f.name)}, q: $q, filters: $filters, limit: ${FACET_VALUES}) {
           totalGroups groups { key stats { count } } }`,
    )
    .join("\n");
  const query = `query Explore($slug: String!, $q: String, $filters: [FieldFilter!], $page: Int,
      $perPage: Int, $sort: [SortKey!]) {
    records(slug: $slug, q: $q, filters: $filters, page: $page, perPage: $perPage, sort: $sort) {
      total page perPage records }
    ${aggs}
  }`;
  status("Loading…");
  const data = await gql(query, {
    slug: state.slug,
    q: state.q || null,
    filters: state.filters.length ? state.filters : null,
    page: state.page,
    perPage: PER_PAGE,
    sort: state.sort ? [state.sort] : null,
  });
  state.lastPage = data.records;
  renderRecords(data.records);
  renderFacets(facets.map((f, i) => [f, data["f" + i]]));
  renderChips();
  status("");
}

function renderRecords(page) {
  const cols = state.columns.map((n) => state.fields.find((f) => f.name === n)).filter(Boolean);
  $("column-count").textContent = `${cols.length} of ${state.fields.length}`;
  const head = el("tr");
  for (const f of cols) {
    const th = el("th", null, { scope: "col" });
    if (f.type === "number") th.className = "num";
    if (f.filter.sort) {
      const button = el("button", f.name, { type: "button", "data-field": f.name, title: "Sort by " + f.name });
      let mark = "";
      if (state.sort && state.sort.field === f.name) {
        mark = state.sort.order === "ASC" ? " ▲" : " ▼";
        th.setAttribute("aria-sort", state.sort.order === "ASC" ? "ascending" : "descending");
      }
      button.textContent = f.name + mark;
      button.addEventListener("click", () => sortBy(f.name).catch(fail));
      th.append(button);
    } else {
      th.textContent = f.name;
      th.classList.add("nosort");
    }
    head.append(th);
  }
  $("records").tHead.replaceChildren(head);
  const body = $("records").tBodies[0];
  body.replaceChildren();
  for (const record of page.records) {
    const tr = el("tr", null, { "data-id": record._id, tabindex: "0" });
    for (const f of cols) {
      const text = show(pick(record, f.name));
      tr.append(el("td", text, f.type === "number" ? { class: "num" } : { title: text }));
    }
    tr.addEventListener("click", () => openRecord(record._id).catch(fail));
    tr.addEventListener("keydown", (e) => {
      if (e.key === "Enter") openRecord(record._id).catch(fail);
    });
    body.append(tr);
  }
  const pages = Math.max(1, Math.ceil(page.total / page.perPage));
  $("total").textContent = number.format(page.total);
  $("total-label").textContent = page.total === 1 ? "record" : "records";
  $("page-info").textContent = `Page ${page.page} of ${number.format(pages)}`;
  $("prev").disabled = page.page <= 1;
  $("next").disabled = page.page >= pages;
}

function renderFacets(list) {
  const aside = $("facets");
  aside.replaceChildren();
  for (const [field, agg] of list) {
    const box = el("details", null, { class: "facet", "data-facet": field.name });
    box.open = state.openFacets.has(field.name);
    box.addEventListener("toggle", () => {
      if (box.open) state.openFacets.add(field.name);
      else state.openFacets.delete(field.name);
    });
    const active = state.filters.filter((f) => f.field === field.name).length;
    box.append(el("summary", active ? `${field.name} (${active})` : field.name));
    const ul = el("ul");
    for (const g of agg.groups) {
      const pressed = state.filters.some((f) => f.field === field.name && f.value === g.key);
      const button = el("button", null, {
        type: "button",
        "aria-pressed": String(pressed),
        "data-value": g.key,
        title: g.key,
      });
      button.append(el("span", g.key === "" ? "(empty)" : g.key, { class: "value" }), el("span", number.format(g.stats.count), { class: "count" }));
      button.addEventListener("click", () => toggleFilter(field.name, g.key).catch(fail));
      const li = el("li");
      li.append(button);
      ul.append(li);
    }
    box.append(ul);
    const more = agg.totalGroups - agg.groups.length;
    if (more > 0) box.append(el("p", `+ ${number.format(more)} more`, { class: "count" }));
    aside.append(box);
  }
}

function renderChips() {
  const chips = $("active-filters");
  chips.replaceChildren();
  for (const f of state.filters) {
    const chip = el("button", `${f.field} = ${f.value} ×`, { type: "button", class: "chip" });
    chip.addEventListener("click", () => toggleFilter(f.field, f.value).catch(fail));
    chips.append(chip);
  }
}

async function toggleFilter(field, value) {
  const at = state.filters.findIndex((f) => f.field === field && f.value === value);
  if (at >= 0) state.filters.splice(at, 1);
  else state.filters.push({ field, value });
  state.page = 1;
  await refresh();
}

async function sortBy(field) {
  if (state.sort && state.sort.field === field) {
    state.sort = { field, order: state.sort.order === "ASC" ? "DESC" : "ASC" };
  } else {
    state.sort = { field, order: "ASC" };
  }
  state.page = 1;
  await refresh();
}

async function openRecord(id) {
  const data = await gql("query One($slug: String!, $id: String!) { record(slug: $slug, id: $id) }", {
    slug: state.slug,
    id,
  });
  $("record-id").textContent = id;
  $("record-json").textContent = JSON.stringify(data.record, null, 2);
  $("record-detail").hidden = false;
  $("record-detail").scrollIntoView({ block: "nearest" });
}

function updateMetrics() {
  const metric = $("metric");
  const withField = $("stat-field").value !== "";
  metric.replaceChildren(el("option", "count", { value: "count" }));
  if (withField) for (const m of ["sum", "avg", "min", "max"]) metric.append(el("option", m, { value: m }));
}

async function showStats() {
  const groupBy = $("group-by").value;
  const field = $("stat-field").value || null;
  const metric = $("metric").value || "count";
  if (!state.slug || !groupBy) return;
  // The groups come largest first by the measure the bars show: the top TOP_GROUPS of them.
  const sort = metric === "count" ? "" : `, sort: {by: ${JSON.stringify(metric)}, order: DESC}`;
  status("Loading…");
  const data = await gql(
    `query Stats($slug: String!, $field: String, $q: String, $filters: [FieldFilter!], $limit: Int) {
       agg(slug: $slug, groupBy: ${JSON.stringify(groupBy)}, field: $field, q: $q, filters: $filters,
           limit: $limit${sort}) {
         totalRecords totalGroups
         groups { key stats { count sum avg min max percentiles { p50 } } } } }`,
    {
      slug: state.slug,
      field,
      q: state.q || null,
      filters: state.filters.length ? state.filters : null,
      limit: TOP_GROUPS,
    },
  );
  renderStats(data.agg, groupBy, field, metric);
  status("");
}

const fmt = (n) => (n === null || n === undefined ? "–" : number.format(Math.round(n * 100) / 100));

function renderStats(agg, groupBy, field, metric) {
  const out = $("stats");
  out.replaceChildren();
  const shown = agg.groups.length;
  const by = metric === "count" ? "" : ` (by ${metric})`;
  const which = shown < agg.totalGroups ? `The top ${number.format(shown)}${by} of ` : "";
  out.append(
    el("p", `${which}${number.format(agg.totalGroups)} groups of ${groupBy} over ${number.format(agg.totalRecords)} records.`, {
      id: "stats-summary",
    }),
  );
  out.append(chart(agg.groups.slice(0, CHART_BARS), metric));
  const table = el("table", null, { id: "stats-table" });
  const head = el("tr");
  const names = field ? [groupBy, "count", "sum", "avg", "min", "max", "median"] : [groupBy, "count"];
  names.forEach((n, i) => head.append(el("th", n, { scope: "col", class: i ? "num" : "" })));
  table.append(el("thead"));
  table.tHead.append(head);
  const body = el("tbody");
  for (const g of agg.groups) {
    const tr = el("tr");
    const key = g.key === "" ? "(empty)" : g.key;
    tr.append(el("td", key, { title: key }), el("td", number.format(g.stats.count), { class: "num" }));
    if (field) {
      const s = g.stats;
      for (const v of [s.sum, s.avg, s.min, s.max, s.percentiles && s.percentiles.p50]) tr.append(el("td", fmt(v), { class: "num" }));
    }
    body.append(tr);
  }
  table.append(body);
  const wrap = el("div", null, { class: "table-wrap" });
  wrap.append(table);
  out.append(wrap);
}

// A label cut to fit about `room` narrow characters, counting wide (CJK) ones twice.
function cut(text, room) {
  let used = 0;
  let out = "";
  for (const ch of text) {
    used += /[\u1100-\uffff]/.test(ch) ? 2 : 1;
    if (used > room) return out + "…";
    out += ch;
  }
  return out;
}

// A horizontal bar chart in inline SVG: one bar per group, labels as text nodes.
function chart(groups, metric) {
  const value = (g) => (metric === "count" ? g.stats.count : g.stats[metric]);
  const values = groups.map((g) => Math.abs(value(g) || 0));
  const max = Math.max(1, ...values);
  const row = 22;
  const labelWidth = 150;
  // Drawn at the width it is shown at (up to 800 px), so its text keeps its size on a phone.
  const width = Math.min(800, Math.max(320, $("stats").clientWidth));
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "bars");
  svg.setAttribute("id", "stats-chart");
  svg.setAttribute("viewBox", `0 0 ${width} ${row * groups.length + 4}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `Bar chart of ${metric} per group`);
  groups.forEach((g, i) => {
    const y = i * row + 2;
    const label = document.createElementNS(SVG, "text");
    label.setAttribute("x", "0");
    label.setAttribute("y", String(y + 15));
    const key = g.key === "" ? "(empty)" : g.key;
    label.textContent = cut(key, 22);
    const bar = document.createElementNS(SVG, "rect");
    const w = Math.max(1, ((width - labelWidth - 70) * values[i]) / max);
    bar.setAttribute("x", String(labelWidth));
    bar.setAttribute("y", String(y + 3));
    bar.setAttribute("height", String(row - 6));
    bar.setAttribute("width", String(w));
    if ((value(g) || 0) < 0) bar.setAttribute("class", "neg"); // length is the magnitude
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${key}: ${fmt(value(g))}`;
    bar.append(title);
    const amount = document.createElementNS(SVG, "text");
    amount.setAttribute("x", String(labelWidth + w + 5));
    amount.setAttribute("y", String(y + 15));
    amount.textContent = fmt(value(g));
    svg.append(label, bar, amount);
  });
  return svg;
}

function fail(error) {
  status(error.message || String(error));
}

$("dataset").addEventListener("change", (e) => pickDataset(e.target.value).catch(fail));
$("search").addEventListener("click", () => {
  state.q = $("q").value.trim();
  state.page = 1;
  refresh().catch(fail);
});
$("q").addEventListener("keydown", (e) => {
  if (e.key === "Enter") $("search").click();
});
$("prev").addEventListener("click", () => {
  state.page = Math.max(1, state.page - 1);
  refresh().catch(fail);
});
$("next").addEventListener("click", () => {
  state.page += 1;
  refresh().catch(fail);
});
$("close-record").addEventListener("click", () => {
  $("record-detail").hidden = true;
});
$("stat-field").addEventListener("change", updateMetrics);
$("show-stats").addEventListener("click", () => showStats().catch(fail));

$("top-groups").textContent = `top ${TOP_GROUPS} groups`;
loadDatasets().catch(fail);
