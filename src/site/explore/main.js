// The dataset explorer (/explore): a small GraphQL client, no framework and no build step,
// in modules named for what they own (limits, view: the state and its URL, api, format,
// table, filters, stats, map). It talks to the API only, with the short-lived token the page
// carries, renewed in the background while the page is open.

import { DATASET_CHOICES, FACET_VALUES, MAX_COLUMNS, MAX_FACETS, PER_PAGE, TOP_GROUPS } from "./limits.js";
import { curl, download, exportUrl, gql, keepTokenFresh, recordsUrl } from "./api.js";
import { $, el, count, status } from "./format.js";
import { facetQueries, fillRangeControls, renderChips, renderFacets } from "./filters.js";
import { renderMap } from "./map.js";
import { fillStatsControls, readControls, runStats } from "./stats.js";
import { closeRecord, renderColumnPicker, renderRecords, showRecord } from "./table.js";
import { DISTANCE, fromQuery, gqlFilters, hooks, remember, state } from "./view.js";

const root = $("explore");
// The server's limit of dataset fetches in one GraphQL operation (MAX_FETCHES).
const MAX_FETCHES = Number(root.dataset.maxFetches);
// Facets start open from this width; below it they start folded, so the records come first.
const WIDE = window.matchMedia("(min-width: 50rem)");

function fail(error) {
  status(error.message || String(error));
}

hooks.fail = fail;
hooks.changed = (push) => remember(push);
hooks.refresh = () => refresh();
hooks.copyButtons = copyButtons;

// Fills the dataset list with the best matches of `words` (catalog search: every word in a
// title, a description or a field), or the first datasets by slug; the dataset `keep` (the one
// shown, or the one the address names) stays in the list.
async function loadDatasets(words = "", keep = state.slug) {
  const data = await gql(
    `query Datasets($q: String) { datasets(q: $q, perPage: ${DATASET_CHOICES}) { total datasets { slug title recordCount } } }`,
    { q: words || null },
  );
  const found = data.datasets.datasets;
  if (keep && !found.some((d) => d.slug === keep)) {
    const one = await gql("query One($slug: String!) { dataset(slug: $slug) { slug title recordCount } }", { slug: keep }).catch(() => null);
    if (one && one.dataset) found.unshift(one.dataset);
  }
  const select = $("dataset");
  select.replaceChildren(el("option", words ? `${data.datasets.total} found…` : "Pick a dataset…", { value: "" }));
  for (const d of found) {
    select.append(el("option", `${d.title} (${count.format(d.recordCount)})`, { value: d.slug }));
  }
  select.value = keep || "";
  const total = data.datasets.total;
  const listed = Math.min(total, DATASET_CHOICES);
  status(words
    ? `${total} datasets match “${words}”${total > listed ? `; the best ${listed} are listed` : ""}.`
    : `${total} datasets${total > listed ? `; the first ${listed} are listed: find others by words` : ""}.`);
}

// Opens the view the address names (a shared link, the back button), or nothing.
async function restore() {
  const slug = new URLSearchParams(location.search).get("dataset") || "";
  if (slug && ![...$("dataset").options].some((o) => o.value === slug)) await loadDatasets($("dataset-find").value.trim(), slug);
  $("dataset").value = slug;
  if ($("dataset").value !== slug) {
    if (slug) status(`No dataset ${slug} here, or this account may not read it.`);
    return;
  }
  await pickDataset(slug, location.search);
}

async function pickDataset(slug, search) {
  Object.assign(state, { slug, fields: [], idField: null, facets: [], columns: [], q: "", filters: [], geo: null, bbox: null, near: null, sort: null, page: 1, lastPage: null, record: null, stats: null });
  state.openFacets.clear();
  state.moreFacets.clear();
  state.decimals.clear();
  $("q").value = "";
  $("record-alone").replaceChildren();
  $("stats").replaceChildren();
  $("views").hidden = !slug;
  if (!slug) return renderMap();
  const data = await gql(
    `query Fields($slug: String!) { dataset(slug: $slug) { title description idField geo { lat lon }
       fields { name type description filter { exact fulltext sort groupBy operators buckets } } } }`,
    { slug },
  );
  if (state.slug !== slug) return;
  state.fields = data.dataset.fields;
  state.idField = data.dataset.idField;
  state.geo = data.dataset.geo;
  const ranked = await rankKeywords();
  state.facets = ranked.filter((r) => r.groups > 1).slice(0, MAX_FACETS).map((r) => r.field);
  if (WIDE.matches) for (const f of state.facets) state.openFacets.add(f.name);
  state.columns = defaultColumns(ranked);
  const view = fromQuery(search || "", state.fields);
  Object.assign(state, { q: view.q, filters: view.filters, bbox: state.geo ? view.bbox : null, near: state.geo ? view.near : null,
    sort: view.sort && (state.geo || view.sort.field !== DISTANCE) ? view.sort : null, page: view.page, record: view.record, stats: view.stats });
  if (view.columns) state.columns = view.columns;
  $("q").value = state.q;
  const best = ranked.find((r) => r.groups > 1 && r.groups <= TOP_GROUPS) || ranked[0];
  fillStatsControls(state.stats, best && best.field.name);
  fillRangeControls();
  renderColumnPicker();
  remember(false);
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

// One document: the page of records and the value counts of the facets, under the same
// conditions; then the statistics, when shown, under them too.
async function refresh() {
  if (!state.slug) return;
  const facets = facetQueries();
  const query = `query Explore($slug: String!, $q: String, $bbox: String, $near: String, $filters: [FieldFilter!], $page: Int,
      $perPage: Int, $sort: [SortKey!]${facets.map((f) => `, $${f.variable}: [FieldFilter!]`).join("")}) {
    records(slug: $slug, q: $q, bbox: $bbox, near: $near, filters: $filters, page: $page, perPage: $perPage, sort: $sort) {
      total page perPage records }
    ${facets.map((f) => f.text).join("\n")}
  }`;
  const variables = {
    slug: state.slug,
    q: state.q || null,
    bbox: state.bbox,
    near: state.near,
    filters: gqlFilters(),
    page: state.page,
    perPage: PER_PAGE,
    sort: state.sort ? [state.sort] : null,
  };
  for (const f of facets) variables[f.variable] = f.filters;
  status("Loading…");
  const slug = state.slug;
  const data = await gql(query, variables);
  if (state.slug !== slug) return;
  state.lastPage = data.records;
  renderRecords(data.records);
  renderFacets(facets.map((f) => [f.field, data[f.alias]]));
  renderChips();
  renderApi();
  status("");
  if (state.record !== null) await showRecord();
  await Promise.all([renderMap(), state.stats ? runStats() : null]);
}

// The API URL of the page on screen, as curl, and the downloads of every matching record.
function renderApi() {
  const api = recordsUrl(state, PER_PAGE);
  $("api-url").value = api;
  $("api-curl").value = curl(api);
  $("export-url").textContent = exportUrl(state, "csv");
}

function copyButtons(scope) {
  for (const button of scope.querySelectorAll("button[data-curl], button[data-copy]")) {
    if (button.dataset.ready) continue;
    button.dataset.ready = "1";
    button.addEventListener("click", async () => {
      const text = button.dataset.curl || $(button.dataset.copy).value;
      try {
        await navigator.clipboard.writeText(text);
        status("Copied.");
      } catch {
        status("Copying is not allowed here: select the text and copy it.");
      }
    });
  }
}

async function downloadAs(format) {
  const url = exportUrl(state, format);
  $("download-status").textContent = "Downloading…";
  const got = await download(url, `${state.slug}.${format}`);
  $("download-status").textContent = `Downloaded ${count.format(got.total)} records (${count.format(got.bytes)} bytes) as ${format.toUpperCase()}.`;
  $("download-status").dataset.records = String(got.total);
}

function search() {
  state.q = $("q").value.trim();
  state.page = 1;
  remember(true);
  refresh().catch(fail);
}

function turn(to) {
  state.page = Math.max(1, to);
  closeRecord();
  remember(true);
  refresh().catch(fail);
}

$("dataset").addEventListener("change", (e) => {
  history.pushState(null, "", location.pathname + (e.target.value ? "?dataset=" + encodeURIComponent(e.target.value) : ""));
  pickDataset(e.target.value, "").catch(fail);
});
let finding = null;
$("dataset-find").addEventListener("input", (e) => {
  clearTimeout(finding);
  finding = setTimeout(() => loadDatasets(e.target.value.trim()).catch(fail), 250);
});
$("dataset-find").addEventListener("keydown", (e) => {
  if (e.key === "Enter") {
    clearTimeout(finding);
    loadDatasets(e.target.value.trim()).catch(fail);
  }
});
$("search").addEventListener("click", search);
$("q").addEventListener("keydown", (e) => {
  if (e.key === "Enter") search();
});
$("prev").addEventListener("click", () => turn(state.page - 1));
$("next").addEventListener("click", () => turn(state.page + 1));
$("stats-form").addEventListener("submit", (e) => {
  e.preventDefault();
  state.stats = readControls();
  remember(true);
  runStats().catch(fail);
});
$("download-csv").addEventListener("click", () => downloadAs("csv").catch((e) => ($("download-status").textContent = e.message)));
$("download-ndjson").addEventListener("click", () => downloadAs("ndjson").catch((e) => ($("download-status").textContent = e.message)));
window.addEventListener("popstate", () => restore().catch(fail));

$("top-groups").textContent = `top ${TOP_GROUPS} groups`;
copyButtons(document);
keepTokenFresh();
loadDatasets("", new URLSearchParams(location.search).get("dataset") || "")
  .then(restore)
  .catch(fail);
