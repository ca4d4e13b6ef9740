// The explorer's state, and its whole view written in the page's URL, so a view is a link:
// opening the link shows the same dataset, search, filters, sort, columns, page, open record
// and statistics.
//
//   ?dataset=flights&q=intl&f.origin=EWR&f.origin=JFK&f.distance[gte]=500&sort=distance<
//    &bbox=120.9,24.6,121.8,25.3&near=25.03300,121.56500,2.5km&cols=_id,carrier,distance&page=2&record=123
//    &group_by=carrier,time_hour[month]&field=dep_delay&bars=avg&percentile=95&min_count=10

export const state = {
  slug: "",
  fields: [],
  idField: null,
  facets: [], // keyword fields with value counts beside the table, best first
  columns: [], // field names shown in the table
  openFacets: new Set(),
  moreFacets: new Set(), // facets whose "more" was opened
  q: "",
  filters: [], // [{field, op: "EQ" | "GTE" | "LTE", value}]
  geo: null, // {lat, lon}: the dataset's geo pair (its number fields), or null
  bbox: null, // "minLon,minLat,maxLon,maxLat": the area the map put into the view, or null
  near: null, // "lat,lon,radius": the circle the map put into the view (nearest first), or null
  sort: null, // {field, order: "ASC" | "DESC"}
  page: 1,
  lastPage: null,
  record: null, // the open record's id
  stats: null, // {groupBy: ["carrier", "time_hour[month]"], field, metric, pct, minCount}: shown
  decimals: new Map(), // field → decimals its values are written with
};

const OPS = { gte: "GTE", lte: "LTE" };
// The API's bbox: four numbers (GeoJSON's order).
const BBOX = /^-?\d+(?:\.\d+)?(?:,-?\d+(?:\.\d+)?){3}$/;
// The API's near: latitude, longitude and a radius in m or km.
const NEAR = /^-?\d+(?:\.\d+)?,-?\d+(?:\.\d+)?,\d+(?:\.\d+)?(?:m|km)$/;
// The sort key of nearest first (with near); records then carry DISTANCE_FIELD.
export const DISTANCE = "_distance";
export const DISTANCE_FIELD = "_distance_m";

// The URL's query string for the state (empty before a dataset is picked).
export function toQuery() {
  const p = new URLSearchParams();
  if (!state.slug) return "";
  p.set("dataset", state.slug);
  if (state.q) p.set("q", state.q);
  for (const f of state.filters) {
    p.append(f.op === "EQ" ? "f." + f.field : `f.${f.field}[${f.op.toLowerCase()}]`, f.value);
  }
  if (state.bbox) p.set("bbox", state.bbox);
  if (state.near) p.set("near", state.near);
  if (state.sort) p.set("sort", state.sort.field + (state.sort.order === "ASC" ? ">" : "<"));
  p.set("cols", state.columns.join(","));
  if (state.page > 1) p.set("page", String(state.page));
  if (state.record !== null) p.set("record", state.record);
  if (state.stats) {
    const s = state.stats;
    p.set("group_by", s.groupBy.join(","));
    if (s.field) p.set("field", s.field);
    if (s.metric !== "count") p.set("bars", s.metric);
    if (s.field) p.set("percentile", String(s.pct));
    if (s.minCount > 1) p.set("min_count", String(s.minCount));
  }
  return "?" + p.toString();
}

// Writes the state into the address bar: a new history entry for a step a person took
// (`push`), the same entry otherwise.
export function remember(push) {
  const query = toQuery();
  if (query === location.search) return;
  const url = location.pathname + query;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
}

// The view a query string names, checked against the dataset's fields: names it does not
// have are left out, so an old link still opens.
export function fromQuery(search, fields) {
  const p = new URLSearchParams(search);
  const known = new Set(fields.map((f) => f.name));
  const view = { q: p.get("q") || "", filters: [], bbox: null, near: null, sort: null, columns: null, page: 1, record: null, stats: null };
  for (const [key, value] of p) {
    if (!key.startsWith("f.")) continue;
    const m = /^f\.(.+?)(?:\[(gte|lte)\])?$/.exec(key);
    if (m && known.has(m[1])) view.filters.push({ field: m[1], op: m[2] ? OPS[m[2]] : "EQ", value });
  }
  if (BBOX.test(p.get("bbox") || "")) view.bbox = p.get("bbox");
  if (NEAR.test(p.get("near") || "")) view.near = p.get("near");
  const sort = /^(.+)([<>])$/.exec(p.get("sort") || "");
  if (sort && (known.has(sort[1]) || (view.near && sort[1] === DISTANCE))) view.sort = { field: sort[1], order: sort[2] === ">" ? "ASC" : "DESC" };
  if (p.has("cols")) {
    const cols = p.get("cols").split(",").filter((c) => known.has(c));
    if (cols.length) view.columns = cols;
  }
  const page = Number(p.get("page"));
  if (Number.isInteger(page) && page > 1) view.page = page;
  if (p.has("record")) view.record = p.get("record");
  if (p.has("group_by")) {
    const groupBy = p
      .get("group_by")
      .split(",")
      .filter((g) => known.has(g.replace(/\[[^\]]*\]$/, "")));
    const field = known.has(p.get("field")) ? p.get("field") : null;
    const pct = Number(p.get("percentile")) || 50;
    let metric = p.get("bars") || "count";
    if (!field || !/^(count|sum|avg|min|max|p[0-9.]+)$/.test(metric)) metric = "count";
    if (groupBy.length) {
      view.stats = { groupBy, field, metric, pct, minCount: Math.max(1, Number(p.get("min_count")) || 1) };
    }
  }
  return view;
}

// The GraphQL filters of the view; `except` leaves one field's exact matches out (a facet
// counts its own values under the other conditions, so several can be picked).
export function gqlFilters(except) {
  const list = state.filters.filter((f) => !(except && f.field === except && f.op === "EQ"));
  return list.length ? list.map((f) => ({ field: f.field, op: f.op, value: f.value })) : null;
}

// What the other modules call back: main.js fills it (refresh, changed, fail).
export const hooks = {};

export const field = (name) => state.fields.find((f) => f.name === name);
