// The map of a dataset with a geo pair (Leaflet, vendored and served by the binary): the
// records of the view (its search and filters) within the map's bounds, asked of the API with
// `bbox`, at most MAP_POINTS of them (one page), drawn as circle markers, with how many of the
// total are shown. "Search this area" puts the bounds into the view as its bbox condition, so
// the table, the facets and the statistics follow and the URL keeps it. Tiles come from
// OpenStreetMap only when the browser reaches them (one tile is tried first); without them
// the points are drawn on a plain background. A click on the map (or "Search near the
// centre") puts a circle around that place into the view as its near condition, nearest
// first; a click on a point opens its record.

import { MAP_POINTS } from "./limits.js";
import { gql } from "./api.js";
import { $, count, el, pick } from "./format.js";
import { showRecord } from "./table.js";
import { DISTANCE, gqlFilters, hooks, state } from "./view.js";

const TILES = "https://tile.openstreetmap.org/{z}/{x}/{y}.png";
const ATTRIBUTION = '© <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors';

let map = null;
let points = null; // the layer of the drawn markers
let shownSlug = null; // the dataset the map was last placed for
let placedBox = null; // the view's bbox the map was last placed on
let placedNear = null; // the view's near the map was last placed on
let circle = null; // the drawn near condition
let asked = 0; // the latest request for points; the answers of older ones are dropped

const box = () => $("map");

function ensureMap() {
  if (map) return;
  map = window.L.map("map-canvas", { zoomSnap: 0.25 });
  points = window.L.layerGroup().addTo(map);
  map.on("moveend", () => drawPoints().catch(hooks.fail));
  map.on("click", (e) => searchNear(e.latlng));
  const probe = new Image();
  probe.addEventListener("load", () => {
    window.L.tileLayer(TILES, { maxZoom: 19, attribution: ATTRIBUTION }).addTo(map);
    box().dataset.tiles = "osm";
  });
  probe.src = TILES.replace("{z}/{x}/{y}", "0/0/0");
}

// `bounds` as the API's box (west, south, east, north), widened to 5 decimals and kept on the
// globe (a map zoomed out shows more than 360°).
function asBox(bounds) {
  const clamp = (v, limit) => Math.max(-limit, Math.min(limit, v));
  const down = (v) => Math.floor(v * 1e5) / 1e5;
  const up = (v) => Math.ceil(v * 1e5) / 1e5;
  return [
    down(clamp(bounds.getWest(), 180)),
    down(clamp(bounds.getSouth(), 90)),
    up(clamp(bounds.getEast(), 180)),
    up(clamp(bounds.getNorth(), 90)),
  ];
}

const boxText = (b) => b.map((v) => v.toFixed(5)).join(",");

// The near condition's parts: [lat, lon, radius in metres].
function parseNear(text) {
  const [lat, lon, radius] = text.split(",");
  const metres = radius.endsWith("km") ? Number(radius.slice(0, -2)) * 1000 : Number(radius.slice(0, -1));
  return [Number(lat), Number(lon), metres];
}

// A radius for a click: a quarter of the map's shorter side, to two significant digits.
function radiusText() {
  const b = map.getBounds();
  const wide = map.distance(b.getSouthWest(), b.getSouthEast());
  const high = map.distance(b.getSouthWest(), b.getNorthWest());
  const metres = Math.min(20_000_000, Math.max(1, Number((Math.min(wide, high) / 4).toPrecision(2))));
  return metres >= 1000 ? `${Number((metres / 1000).toPrecision(2))}km` : `${Math.round(metres)}m`;
}
const parseBox = (text) => text.split(",").map(Number);

function intersect(a, b) {
  const r = [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
  return r[0] <= r[2] && r[1] <= r[3] ? r : null;
}

function fitBox(b) {
  map.fitBounds([[b[1], b[0]], [b[3], b[2]]], { animate: false });
}

// The extent of the view's points: the least and greatest latitude and longitude, each the
// first record of the view sorted by that field (records without a point left out).
async function fitExtent() {
  const { lat, lon } = state.geo;
  const one = (alias, name, order) =>
    `${alias}: records(slug: $slug, q: $q, filters: $filters, perPage: 1, fields: [${JSON.stringify(name)}],
       sort: [{field: ${JSON.stringify(name)}, order: ${order}}]) { records }`;
  const data = await gql(
    `query Extent($slug: String!, $q: String, $filters: [FieldFilter!]) {
       ${one("s", lat, "ASC")} ${one("n", lat, "DESC")} ${one("w", lon, "ASC")} ${one("e", lon, "DESC")} }`,
    {
      slug: state.slug,
      q: state.q || null,
      filters: [...(gqlFilters() || []), { field: lat, op: "GTE", value: "-90" }, { field: lon, op: "GTE", value: "-180" }],
    },
  );
  const at = (alias, name) => (data[alias].records.length ? pick(data[alias].records[0], name) : null);
  const b = [at("w", lon), at("s", lat), at("e", lon), at("n", lat)];
  if (b.some((v) => typeof v !== "number")) map.fitWorld({ animate: false });
  else fitBox(b);
}

// Shows the map when the dataset has a geo pair, placed on the view's bbox (a link opened
// with one) or on the extent of its points (a dataset just picked), and draws the points.
export async function renderMap() {
  box().hidden = !state.geo;
  if (!state.geo) {
    shownSlug = null;
    return;
  }
  ensureMap();
  map.invalidateSize();
  if (state.near && state.near !== placedNear) {
    const [lat, lon, metres] = parseNear(state.near);
    map.fitBounds(window.L.latLng(lat, lon).toBounds(metres * 2), { animate: false });
  } else if (state.bbox && state.bbox !== placedBox) fitBox(parseBox(state.bbox));
  else if (shownSlug !== state.slug) await fitExtent();
  drawCircle();
  placedBox = state.bbox;
  placedNear = state.near;
  shownSlug = state.slug;
  await drawPoints();
}

// The view's records within the map's bounds (and the view's bbox): one page of them.
async function drawPoints() {
  if (!map || !state.geo || box().hidden) return;
  const seen = asBox(map.getBounds());
  const area = state.bbox ? intersect(seen, parseBox(state.bbox)) : seen;
  const mine = ++asked;
  box().dataset.loading = "1";
  const { lat, lon } = state.geo;
  const label = state.fields.find((f) => f.type === "text" && f.name !== state.idField);
  let page = { total: 0, records: [] };
  if (area) {
    const data = await gql(
      `query MapPoints($slug: String!, $q: String, $filters: [FieldFilter!], $bbox: String, $near: String,
          $perPage: Int, $fields: [String!]) {
         records(slug: $slug, q: $q, filters: $filters, bbox: $bbox, near: $near, perPage: $perPage, fields: $fields) {
           total records } }`,
      {
        slug: state.slug,
        q: state.q || null,
        filters: gqlFilters(),
        bbox: boxText(area),
        near: state.near,
        perPage: MAP_POINTS,
        fields: [lat, lon, ...(label ? [label.name] : [])],
      },
    );
    page = data.records;
  }
  if (mine !== asked) return;
  points.clearLayers();
  for (const record of page.records) {
    const y = pick(record, lat);
    const x = pick(record, lon);
    if (typeof y !== "number" || typeof x !== "number") continue;
    // Its click is its own: the map's click (search near) is not fired under it.
    const marker = window.L.circleMarker([y, x], { radius: 6, weight: 1, fillOpacity: 0.7, bubblingMouseEvents: false });
    const name = label ? pick(record, label.name) : null;
    marker.bindTooltip(el("span", name === null || name === undefined ? record._id : String(name)));
    marker.on("click", () => openRecord(String(record._id)));
    points.addLayer(marker);
    marker.getElement().dataset.id = String(record._id);
  }
  const shown = page.records.length;
  $("map-count").textContent =
    shown === page.total
      ? `All ${count.format(page.total)} records of this view in the map's area.`
      : `${count.format(shown)} of the ${count.format(page.total)} records of this view in the map's area (zoom in to see the others).`;
  Object.assign(box().dataset, { bbox: area ? boxText(area) : "", shown: String(shown), total: String(page.total), loading: "0" });
}

// "Search this area": the map's bounds become the view's bbox condition.
function searchArea() {
  if (!map) return;
  state.bbox = boxText(asBox(map.getBounds()));
  placedBox = state.bbox;
  state.page = 1;
  hooks.changed(true);
  hooks.refresh().catch(hooks.fail);
}

// The drawn circle of the view's near condition, if any.
function drawCircle() {
  if (circle) circle.remove();
  circle = null;
  if (!state.near) return;
  const [lat, lon, metres] = parseNear(state.near);
  circle = window.L.circle([lat, lon], { radius: metres, weight: 2, fill: false, interactive: false }).addTo(map);
}

// A click on the map (or "Search near the centre"): a circle around that place becomes the
// view's near condition, records nearest first.
function searchNear(at) {
  if (!map) return;
  state.near = `${at.lat.toFixed(5)},${at.lng.toFixed(5)},${radiusText()}`;
  placedNear = state.near;
  state.sort = { field: DISTANCE, order: "ASC" };
  state.page = 1;
  drawCircle();
  hooks.changed(true);
  hooks.refresh().catch(hooks.fail);
}

// A click on a point: its record's panel (above the table when it is not on the page).
function openRecord(id) {
  state.record = id;
  hooks.changed(true);
  showRecord().catch(hooks.fail);
}

$("map-search").addEventListener("click", searchArea);
$("map-near").addEventListener("click", () => map && searchNear(map.getCenter()));
