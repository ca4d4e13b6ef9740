// The conditions: value lists beside the table (several values of a field may be picked; a
// list counts its values under the other conditions, and its "more" opens to FACET_MORE
// values), range filters on number and date fields, and the chips that undo each condition.

import { FACET_MORE, FACET_VALUES } from "./limits.js";
import { $, el, count, key } from "./format.js";
import { DISTANCE, field, gqlFilters, hooks, state } from "./view.js";

// The facets' agg fields for one GraphQL document, and how to read them from its answer.
export function facetQueries() {
  return state.facets.map((f, i) => {
    const limit = state.moreFacets.has(f.name) ? FACET_MORE : FACET_VALUES;
    return {
      field: f,
      alias: "f" + i,
      variable: "filters" + i,
      filters: gqlFilters(f.name),
      text: `f${i}: agg(slug: $slug, groupBy: ${JSON.stringify(f.name)}, q: $q, bbox: $bbox, near: $near, filters: $filters${i}, limit: ${limit}) {
           totalGroups groups { key stats { count } } }`,
    };
  });
}

export function renderFacets(list) {
  const aside = $("facets");
  aside.replaceChildren();
  for (const [f, agg] of list) {
    const box = el("details", null, { class: "facet", "data-facet": f.name });
    box.open = state.openFacets.has(f.name);
    box.addEventListener("toggle", () => {
      if (box.open) state.openFacets.add(f.name);
      else state.openFacets.delete(f.name);
    });
    const active = state.filters.filter((c) => c.field === f.name && c.op === "EQ").length;
    box.append(el("summary", active ? `${f.name} (${active})` : f.name));
    const ul = el("ul", null, { class: state.moreFacets.has(f.name) ? "more" : "" });
    for (const g of agg.groups) {
      const pressed = state.filters.some((c) => c.field === f.name && c.op === "EQ" && c.value === g.key);
      const button = el("button", null, { type: "button", "aria-pressed": String(pressed), "data-value": g.key, title: key(g.key) });
      button.append(el("span", key(g.key), { class: "value" }), el("span", count.format(g.stats.count), { class: "count" }));
      button.addEventListener("click", () => toggleValue(f.name, g.key));
      const li = el("li");
      li.append(button);
      ul.append(li);
    }
    box.append(ul);
    const more = agg.totalGroups - agg.groups.length;
    if (!state.moreFacets.has(f.name) && more > 0) {
      const open = el("button", `+ ${count.format(more)} more`, { type: "button", class: "link more-values" });
      open.addEventListener("click", () => {
        state.moreFacets.add(f.name);
        hooks.refresh().catch(hooks.fail);
      });
      box.append(open);
    } else if (more > 0) {
      box.append(el("p", `The first ${count.format(FACET_MORE)} of ${count.format(agg.totalGroups)}: search to find the others.`, { class: "count" }));
    }
    aside.append(box);
  }
}

const SIGNS = { EQ: "=", GTE: "≥", LTE: "≤" };

export function renderChips() {
  const chips = $("active-filters");
  chips.replaceChildren();
  if (state.bbox) {
    const chip = el("button", `in the map's area (${state.bbox}) ×`, { type: "button", class: "chip", id: "bbox-chip", title: "Remove this condition" });
    chip.addEventListener("click", () => {
      state.bbox = null;
      changed();
    });
    chips.append(chip);
  }
  if (state.near) {
    const [lat, lon, radius] = state.near.split(",");
    const chip = el("button", `within ${radius} of ${lat}, ${lon} ×`, { type: "button", class: "chip", id: "near-chip", title: "Remove this condition" });
    chip.addEventListener("click", () => {
      state.near = null;
      if (state.sort && state.sort.field === DISTANCE) state.sort = null;
      changed();
    });
    chips.append(chip);
  }
  for (const f of state.filters) {
    const chip = el("button", `${f.field} ${SIGNS[f.op]} ${f.value} ×`, { type: "button", class: "chip", title: "Remove this condition" });
    chip.addEventListener("click", () => {
      state.filters = state.filters.filter((c) => c !== f);
      changed();
    });
    chips.append(chip);
  }
}

function changed() {
  state.page = 1;
  hooks.changed(true);
  hooks.refresh().catch(hooks.fail);
}

function toggleValue(name, value) {
  const at = state.filters.findIndex((c) => c.field === name && c.op === "EQ" && c.value === value);
  if (at >= 0) state.filters.splice(at, 1);
  else state.filters.push({ field: name, op: "EQ", value });
  changed();
}

// The range form: number and date fields.
export function fillRangeControls() {
  const select = $("range-field");
  select.replaceChildren();
  for (const f of state.fields) {
    if ((f.type === "number" || f.type === "date") && f.filter.operators.includes("gte")) {
      select.append(el("option", f.name, { value: f.name }));
    }
  }
  $("range-form").hidden = !select.options.length;
  rangeType();
}

function rangeType() {
  const f = field($("range-field").value);
  const type = f && f.type === "number" ? "number" : "text";
  for (const id of ["range-from", "range-to"]) {
    const input = $(id);
    input.type = type;
    if (type === "number") input.step = "any";
    input.placeholder = f && f.type === "date" ? "2013-01-31" : "";
  }
}

function applyRange(e) {
  e.preventDefault();
  const name = $("range-field").value;
  const from = $("range-from").value.trim();
  const to = $("range-to").value.trim();
  if (!name || (!from && !to)) return;
  state.filters = state.filters.filter((c) => !(c.field === name && c.op !== "EQ"));
  if (from) state.filters.push({ field: name, op: "GTE", value: from });
  if (to) state.filters.push({ field: name, op: "LTE", value: to });
  $("range-from").value = "";
  $("range-to").value = "";
  changed();
}

$("range-field").addEventListener("change", rangeType);
$("range-form").addEventListener("submit", applyRange);
