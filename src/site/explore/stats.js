// Grouped statistics: grouped by up to MAX_GROUP_BY fields (a date in buckets, a number in
// bins), a number field's count, sum, average, extremes and a chosen percentile, groups of at
// least some size; a table and an inline-SVG bar chart that draws every group the table
// lists (negative values to the left of a zero line), computed again whenever the
// conditions change.

import { MAX_GROUP_BY, PERCENTILES, TOP_GROUPS } from "./limits.js";
import { aggUrl, curl, gql } from "./api.js";
import { $, el, count, cut, key, learn, number, pick, status } from "./format.js";
import { field, gqlFilters, hooks, state } from "./view.js";

const SVG = "http://www.w3.org/2000/svg";
const DATE_BUCKETS = ["year", "month", "day", "hour"];

const groupable = (f) =>
  f.name !== "_id" && f.name !== state.idField && (f.filter.groupBy || (f.filter.buckets && f.filter.buckets.length));

// One "group by" row: a field, and its bucket (a date) or bin width (a number).
function groupRow(item) {
  const [, name, bucket] = /^(.+?)(?:\[([^\]]*)\])?$/.exec(item || "") || [];
  const row = el("div", null, { class: "group-row" });
  const select = el("select", null, { "aria-label": "Group by", class: "group-field" });
  for (const f of state.fields.filter(groupable)) {
    const kind = f.type === "keyword" ? "" : f.type === "date" ? " (date)" : " (number)";
    select.append(el("option", f.name + kind, { value: f.name }));
  }
  if (name) select.value = name;
  const detail = el("span", null, { class: "bucket" });
  const fillDetail = (chosen) => {
    const f = field(select.value);
    detail.replaceChildren();
    if (f && f.type === "date") {
      const s = el("select", null, { "aria-label": "Bucket", class: "group-bucket" });
      for (const b of DATE_BUCKETS) s.append(el("option", "by " + b, { value: b }));
      s.value = chosen && DATE_BUCKETS.includes(chosen) ? chosen : "month";
      detail.append(s);
    } else if (f && f.type === "number") {
      const input = el("input", null, { type: "number", min: "0", step: "any", "aria-label": "Bin width", class: "group-bucket" });
      input.value = chosen || binWidth(f.name);
      detail.append(document.createTextNode("bins of "), input);
    }
  };
  fillDetail(bucket);
  select.addEventListener("change", () => fillDetail(null));
  const remove = el("button", "×", { type: "button", class: "secondary remove-group", "aria-label": "Remove this grouping" });
  remove.addEventListener("click", () => {
    if ($("group-rows").children.length > 1) row.remove();
    groupButtons();
  });
  row.append(select, detail, remove);
  return row;
}

// A round bin width for a number field: about a tenth of the range of the values on screen.
function binWidth(name) {
  const values = ((state.lastPage && state.lastPage.records) || []).map((r) => pick(r, name)).filter((v) => typeof v === "number");
  const span = values.length ? Math.max(...values) - Math.min(...values) : 0;
  if (!(span > 0)) return "10";
  const step = 10 ** Math.floor(Math.log10(span / 10));
  const nice = [1, 2, 5, 10].map((m) => m * step).find((w) => span / w <= 12);
  return String(Number(nice.toPrecision(6)));
}

function groupButtons() {
  const rows = $("group-rows").children;
  $("add-group").hidden = rows.length >= MAX_GROUP_BY;
  for (const r of rows) r.querySelector(".remove-group").hidden = rows.length <= 1;
}

// The controls for `stats` (or the dataset's defaults: `best` is the keyword to group by).
export function fillStatsControls(stats, best) {
  $("group-rows").replaceChildren();
  for (const item of stats ? stats.groupBy : [best || ""]) $("group-rows").append(groupRow(item));
  groupButtons();
  const statField = $("stat-field");
  statField.replaceChildren(el("option", "(count only)", { value: "" }));
  for (const f of state.fields) if (f.type === "number") statField.append(el("option", f.name, { value: f.name }));
  statField.value = (stats && stats.field) || "";
  const pct = $("percentile");
  pct.replaceChildren(...PERCENTILES.map((p) => el("option", p === 50 ? "50 (median)" : String(p), { value: String(p) })));
  pct.value = String((stats && stats.pct) || PERCENTILES[0]);
  $("min-count").value = String((stats && stats.minCount) || 1);
  updateMetrics((stats && stats.metric) || "count");
}

export function updateMetrics(chosen) {
  const metric = $("metric");
  const previous = chosen || metric.value;
  const withField = $("stat-field").value !== "";
  metric.replaceChildren(el("option", "count", { value: "count" }));
  if (withField) {
    for (const m of ["sum", "avg", "min", "max", "p" + $("percentile").value]) metric.append(el("option", m, { value: m }));
  }
  metric.value = [...metric.options].some((o) => o.value === previous) ? previous : "count";
}

// The statistics the controls ask for.
export function readControls() {
  const groupBy = [...$("group-rows").children].map((row) => {
    const name = row.querySelector(".group-field").value;
    const bucket = row.querySelector(".group-bucket");
    return bucket && bucket.value ? `${name}[${bucket.value}]` : name;
  });
  const fieldName = $("stat-field").value || null;
  return {
    groupBy: [...new Set(groupBy.filter(Boolean))],
    field: fieldName,
    metric: fieldName ? $("metric").value : "count",
    pct: Number($("percentile").value),
    minCount: Math.max(1, Math.floor(Number($("min-count").value) || 1)),
  };
}

export async function runStats() {
  const s = state.stats;
  if (!state.slug || !s || !s.groupBy.length) return;
  // The groups come largest first by the measure the bars show: the top TOP_GROUPS of them.
  const sort = s.metric === "count" ? "" : `, sort: {by: ${JSON.stringify(s.metric)}, order: DESC}`;
  status("Loading…");
  const data = await gql(
    `query Stats($slug: String!, $groupBy: [String!]!, $field: String, $q: String, $bbox: String, $near: String,
                 $filters: [FieldFilter!], $limit: Int, $minCount: Int, $percentiles: [Float!]) {
       agg(slug: $slug, groupBy: $groupBy, field: $field, q: $q, bbox: $bbox, near: $near, filters: $filters, limit: $limit,
           minCount: $minCount, percentiles: $percentiles${sort}) {
         totalRecords totalGroups ungroupedRecords
         groups { key keys stats { count sum avg min max percentileValues { label value } } } } }`,
    {
      slug: state.slug,
      groupBy: s.groupBy,
      field: s.field,
      q: state.q || null,
      bbox: state.bbox,
      near: state.near,
      filters: gqlFilters(),
      limit: TOP_GROUPS,
      minCount: s.minCount > 1 ? s.minCount : null,
      percentiles: s.field ? [s.pct] : null,
    },
  );
  if (state.stats !== s) return;
  renderStats(data.agg, s);
  status("");
}

const measure = (g, metric) => {
  if (metric === "count") return g.stats.count;
  if (metric.startsWith("p")) {
    const p = (g.stats.percentileValues || [])[0];
    return p ? p.value : null;
  }
  return g.stats[metric];
};

function renderStats(agg, s) {
  const out = $("stats");
  out.replaceChildren();
  for (const g of agg.groups) {
    learn(s.field, g.stats.min);
    learn(s.field, g.stats.max);
  }
  const shown = agg.groups.length;
  const by = s.metric === "count" ? "" : ` (by ${s.metric})`;
  const names = s.groupBy.join(", ");
  const which = shown < agg.totalGroups ? `The top ${count.format(shown)}${by} of ` : "";
  const size = s.minCount > 1 ? ` of at least ${count.format(s.minCount)} records` : "";
  let summary = `${which}${count.format(agg.totalGroups)} groups${size} of ${names} over ${count.format(agg.totalRecords)} records.`;
  if (shown < agg.totalGroups) summary += ` The other ${count.format(agg.totalGroups - shown)} are left out of the chart and the table.`;
  if (agg.ungroupedRecords) summary += ` ${count.format(agg.ungroupedRecords)} records have no value to group by.`;
  out.append(el("p", summary, { id: "stats-summary" }));
  out.append(chart(agg.groups, s));
  const table = el("table", null, { id: "stats-table" });
  const head = el("tr");
  const columns = s.field ? ["count", "sum", "avg", "min", "max", "p" + s.pct] : ["count"];
  for (const g of s.groupBy) head.append(el("th", g, { scope: "col" }));
  for (const c of columns) head.append(el("th", c === "p50" ? "median" : c, { scope: "col", class: "num" }));
  table.append(el("thead"));
  table.tHead.append(head);
  const body = el("tbody");
  for (const g of agg.groups) {
    const tr = el("tr", null, { "data-key": g.key });
    for (const item of s.groupBy) {
      const v = g.keys[item];
      const text = typeof v === "number" ? number(item.replace(/\[.*$/, ""), v) : key(String(v));
      tr.append(el("td", text, { title: text }));
    }
    for (const c of columns) {
      const v = measure(g, c);
      const text = c === "count" ? count.format(v) : number(s.field, v, c === "avg" || c.startsWith("p") ? 2 : 0);
      tr.append(el("td", text, { class: "num" }));
    }
    body.append(tr);
  }
  table.append(body);
  // Focusable, so a keyboard can scroll a table wider than the screen.
  const wrap = el("div", null, { class: "table-wrap", tabindex: "0", "aria-label": "Statistics table" });
  wrap.append(table);
  const api = aggUrl(state, s, TOP_GROUPS);
  const link = el("p", "API: ", { class: "api-line" });
  link.append(el("code", api, { id: "stats-api-url" }));
  const copy = el("button", "Copy as curl", { type: "button", class: "link", "data-curl": curl(api) });
  link.append(" ", copy);
  out.append(wrap, link);
  hooks.copyButtons(out);
}

const svg = (tag, attrs) => {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
};

// A horizontal bar chart in inline SVG, one bar for every group of the table, in its order:
// bars start at a zero line, positive ones to its right, negative ones to its left.
function chart(groups, s) {
  const values = groups.map((g) => measure(g, s.metric));
  const high = Math.max(0, ...values.filter((v) => v !== null));
  const low = Math.min(0, ...values.filter((v) => v !== null));
  const row = 22;
  const labelWidth = 150;
  const room = 64; // for the amounts written past each end
  const width = Math.min(800, Math.max(320, $("stats").clientWidth));
  const plot = width - labelWidth - room * (low < 0 ? 2 : 1);
  const span = high - low || 1;
  const zero = labelWidth + (low < 0 ? room : 0) + (plot * -low) / span;
  const chartSvg = svg("svg", {
    class: "bars",
    id: "stats-chart",
    viewBox: `0 0 ${width} ${row * groups.length + 4}`,
    role: "img",
    "aria-label": `Bar chart of ${s.metric} per group, ${groups.length} bars`,
  });
  const fmt = (v) => (s.metric === "count" ? count.format(v) : number(s.field, v, s.metric === "avg" || s.metric.startsWith("p") ? 2 : 0));
  groups.forEach((g, i) => {
    const y = i * row + 2;
    const v = values[i];
    const bar = svg("g", { class: "bar", "data-key": g.key });
    const label = svg("text", { x: 0, y: y + 15 });
    label.textContent = cut(key(g.key), 22);
    const w = v === null ? 0 : (plot * Math.abs(v)) / span;
    const x = v !== null && v < 0 ? zero - w : zero;
    const rect = svg("rect", { x, y: y + 3, height: row - 6, width: Math.max(v ? 1 : 0, w) });
    if (v !== null && v < 0) rect.setAttribute("class", "neg");
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${key(g.key)}: ${v === null ? "no value" : fmt(v)}`;
    rect.append(title);
    const amount = svg("text", v !== null && v < 0 ? { x: x - 4, y: y + 15, "text-anchor": "end" } : { x: x + w + 4, y: y + 15 });
    amount.textContent = v === null ? "–" : fmt(v);
    bar.append(label, rect, amount);
    chartSvg.append(bar);
  });
  chartSvg.append(svg("line", { class: "zero", x1: zero, x2: zero, y1: 0, y2: row * groups.length + 4 }));
  return chartSvg;
}

$("add-group").addEventListener("click", () => {
  if ($("group-rows").children.length < MAX_GROUP_BY) $("group-rows").append(groupRow(""));
  groupButtons();
});
$("stat-field").addEventListener("change", () => updateMetrics());
$("percentile").addEventListener("change", () => updateMetrics($("metric").value.startsWith("p") ? "p" + $("percentile").value : null));
