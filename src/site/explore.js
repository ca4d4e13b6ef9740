// The dataset explorer (/explore): a small GraphQL client, no framework and no build step.
// It talks only to POST /api/v1/graphql with the short-lived token the page carries. Every
// value from a dataset reaches the page through textContent or SVG text nodes, never as markup.
"use strict";

const root = document.getElementById("explore");
const endpoint = root.dataset.endpoint;
const token = root.dataset.token;
const PER_PAGE = 20;
const MAX_FACETS = 4;
const MAX_COLUMNS = 8;
const SVG = "http://www.w3.org/2000/svg";

const state = {
  slug: "",
  fields: [],
  idField: null,
  q: "",
  filters: [], // [{field, value}]
  sort: null, // {field, order}
  page: 1,
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
  Object.assign(state, { slug, fields: [], idField: null, q: "", filters: [], sort: null, page: 1 });
  $("q").value = "";
  $("record-detail").hidden = true;
  $("stats").replaceChildren();
  if (!slug) return;
  const data = await gql(
    `query Fields($slug: String!) { dataset(slug: $slug) { title description idField
       fields { name type filter { exact fulltext sort groupBy } } } }`,
    { slug },
  );
  state.fields = data.dataset.fields;
  state.idField = data.dataset.idField;
  const groupBy = $("group-by");
  const statField = $("stat-field");
  groupBy.replaceChildren();
  statField.replaceChildren(el("option", "(count only)", { value: "" }));
  // The identifier field is left out: one record per group, and an answer as large as the
  // dataset (33.6 MB for the scenic spots) for a chart of 15 bars.
  for (const f of state.fields) {
    if (f.filter.groupBy && f.name !== state.idField) groupBy.append(el("option", f.name, { value: f.name }));
    if (f.type === "number") statField.append(el("option", f.name, { value: f.name }));
  }
  updateMetrics();
  await refresh();
}

// Keyword fields to offer value counts for; the identifier field has one value per record.
function facetFields() {
  return state.fields.filter((f) => f.filter.groupBy && f.name !== state.idField).slice(0, MAX_FACETS);
}

// The table's columns: _id, a couple of text fields (names, titles), then keywords, dates,
// numbers and booleans, in schema order within each kind.
const COLUMN_ORDER = ["keyword", "date", "number", "boolean"];
function columns() {
  const rest = state.fields.filter((f) => f.name !== "_id" && f.name !== state.idField);
  const text = rest.filter((f) => f.type === "text").slice(0, 2);
  const others = COLUMN_ORDER.flatMap((t) => rest.filter((f) => f.type === t));
  const id = state.fields.filter((f) => f.name === "_id");
  return [...id, ...text, ...others].slice(0, MAX_COLUMNS);
}

// One document: the page of records and the value counts of the keyword facets, under the
// same conditions.
async function refresh() {
  if (!state.slug) return;
  const facets = facetFields();
  const aggs = facets
    .map(
      (f, i) =>
        `f${i}: agg(slug: $slug, groupBy: ${JSON.stringify(f.name)}, q: $q, filters: $filters) {
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
  renderRecords(data.records);
  renderFacets(facets.map((f, i) => [f, data["f" + i]]));
  renderChips();
  status("");
}

function renderRecords(page) {
  const cols = columns();
  const head = el("tr");
  for (const f of cols) {
    const th = el("th", null, { scope: "col" });
    if (f.filter.sort) {
      const button = el("button", f.name, { type: "button", "data-field": f.name });
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
      th.className = "nosort";
    }
    head.append(th);
  }
  $("records").tHead.replaceChildren(head);
  const body = $("records").tBodies[0];
  body.replaceChildren();
  for (const record of page.records) {
    const tr = el("tr", null, { "data-id": record._id, tabindex: "0" });
    for (const f of cols) tr.append(el("td", show(pick(record, f.name))));
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
    const box = el("section", null, { class: "facet", "data-facet": field.name });
    box.append(el("h3", field.name));
    const ul = el("ul");
    for (const g of agg.groups.slice(0, 8)) {
      const active = state.filters.some((f) => f.field === field.name && f.value === g.key);
      const button = el("button", null, {
        type: "button",
        "aria-pressed": String(active),
        "data-value": g.key,
      });
      button.append(el("span", g.key === "" ? "(empty)" : g.key), el("span", number.format(g.stats.count), { class: "count" }));
      button.addEventListener("click", () => toggleFilter(field.name, g.key).catch(fail));
      const li = el("li");
      li.append(button);
      ul.append(li);
    }
    box.append(ul);
    if (agg.totalGroups > 8) box.append(el("p", `+ ${number.format(agg.totalGroups - 8)} more`, { class: "count" }));
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
  const data = await gql(
    `query Stats($slug: String!, $groupBy: String!, $field: String, $q: String, $filters: [FieldFilter!]) {
       agg(slug: $slug, groupBy: $groupBy, field: $field, q: $q, filters: $filters) {
         totalRecords totalGroups
         groups { key stats { count sum avg min max percentiles { p50 } } } } }`,
    { slug: state.slug, groupBy, field, q: state.q || null, filters: state.filters.length ? state.filters : null },
  );
  renderStats(data.agg, groupBy, field, metric);
}

const fmt = (n) => (n === null || n === undefined ? "–" : number.format(Math.round(n * 100) / 100));

function renderStats(agg, groupBy, field, metric) {
  const out = $("stats");
  out.replaceChildren();
  out.append(
    el("p", `${number.format(agg.totalGroups)} groups of ${groupBy} over ${number.format(agg.totalRecords)} records.`, {
      id: "stats-summary",
    }),
  );
  const groups = agg.groups.slice(0, 15);
  out.append(chart(groups, metric));
  const table = el("table", null, { id: "stats-table" });
  const head = el("tr");
  const names = field ? [groupBy, "count", "sum", "avg", "min", "max", "median"] : [groupBy, "count"];
  for (const n of names) head.append(el("th", n, { scope: "col" }));
  table.append(el("thead"));
  table.tHead.append(head);
  const body = el("tbody");
  for (const g of agg.groups) {
    const tr = el("tr");
    tr.append(el("td", g.key === "" ? "(empty)" : g.key), el("td", number.format(g.stats.count)));
    if (field) {
      const s = g.stats;
      for (const v of [s.sum, s.avg, s.min, s.max, s.percentiles && s.percentiles.p50]) tr.append(el("td", fmt(v)));
    }
    body.append(tr);
  }
  table.append(body);
  out.append(table);
}

// A horizontal bar chart in inline SVG: one bar per group, labels as text nodes.
function chart(groups, metric) {
  const value = (g) => (metric === "count" ? g.stats.count : g.stats[metric]);
  const values = groups.map((g) => Math.abs(value(g) || 0));
  const max = Math.max(1, ...values);
  const row = 22;
  const labelWidth = 150;
  const width = 600;
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
    label.textContent = key.length > 22 ? key.slice(0, 21) + "…" : key;
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

loadDatasets().catch(fail);
