// The records table with its sortable headers, the record panel that opens beside its row
// (readable fields, a permalink, the API URL, the JSON), and the column picker.

import { gql, recordUrl } from "./api.js";
import { $, el, count, learn, leaves, pick, show } from "./format.js";
import { DISTANCE, DISTANCE_FIELD, field, hooks, state } from "./view.js";

export function renderColumnPicker() {
  const list = $("column-list");
  list.replaceChildren();
  for (const f of state.fields) {
    if (f.type === "json") continue;
    const box = el("input", null, { type: "checkbox", value: f.name });
    box.checked = state.columns.includes(f.name);
    box.addEventListener("change", () => {
      state.columns = state.fields.map((g) => g.name).filter((n) => (n === f.name ? box.checked : state.columns.includes(n)));
      hooks.changed(true);
      if (state.lastPage) renderRecords(state.lastPage);
    });
    const label = el("label", null, { class: "pick" });
    label.append(box, document.createTextNode(" " + f.name));
    list.append(label);
  }
}

export function renderRecords(page) {
  for (const record of page.records) for (const f of state.fields) learn(f.name, pick(record, f.name));
  const cols = state.columns.map(field).filter(Boolean);
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
      button.addEventListener("click", () => sortBy(f.name));
      th.append(button);
    } else {
      th.textContent = f.name;
      th.classList.add("nosort");
    }
    head.append(th);
  }
  // With near, how far each record is from the circle's centre: the API's _distance_m, which
  // it gives when the records are nearest first (this column's sort).
  const far = state.near ? el("th", null, { scope: "col", class: "num", id: "distance-head" }) : null;
  if (far) {
    const nearest = state.sort && state.sort.field === DISTANCE;
    const button = el("button", "distance" + (nearest ? " ▲" : ""), { type: "button", title: "Nearest first" });
    button.addEventListener("click", () => sortBy(DISTANCE, "ASC"));
    if (nearest) far.setAttribute("aria-sort", "ascending");
    far.append(button);
    head.insertBefore(far, head.children[1] || null);
  }
  $("records").tHead.replaceChildren(head);
  const body = $("records").tBodies[0];
  body.replaceChildren();
  for (const record of page.records) {
    const tr = el("tr", null, { "data-id": record._id });
    for (const f of cols) {
      const text = show(f.name, pick(record, f.name));
      tr.append(el("td", text, f.type === "number" ? { class: "num" } : { title: text }));
    }
    // The row opens on a click anywhere; its first cell is the button a keyboard reaches, and
    // says whether the record is open (a table row may not carry aria-expanded).
    const first = tr.firstElementChild;
    if (first) {
      const button = el("button", first.textContent, { type: "button", class: "row-open", "aria-expanded": "false", "aria-label": "Record " + record._id });
      first.replaceChildren(button);
    }
    if (far) tr.insertBefore(el("td", distance(record[DISTANCE_FIELD]), { class: "num" }), tr.children[1] || null);
    tr.addEventListener("click", () => toggleRecord(record._id).catch(hooks.fail));
    body.append(tr);
  }
  const pages = Math.max(1, Math.ceil(page.total / page.perPage));
  $("total").textContent = count.format(page.total);
  $("total-label").textContent = page.total === 1 ? "record" : "records";
  $("page-info").textContent = `Page ${count.format(page.page)} of ${count.format(pages)}`;
  $("prev").disabled = page.page <= 1;
  $("next").disabled = page.page >= pages;
}

// Metres as a person reads them: 350 m, 2.35 km.
function distance(m) {
  if (typeof m !== "number") return "–";
  return m < 1000 ? `${count.format(Math.round(m))} m` : `${count.format(Math.round(m / 10) / 100)} km`;
}

// Says on a row's button whether its record's panel is open.
function expanded(tr, open) {
  const button = tr.querySelector("button.row-open");
  if (button) button.setAttribute("aria-expanded", String(open));
}

function sortBy(name, only) {
  if (only) {
    state.sort = { field: name, order: only };
  } else if (state.sort && state.sort.field === name) {
    state.sort = { field: name, order: state.sort.order === "ASC" ? "DESC" : "ASC" };
  } else {
    state.sort = { field: name, order: "ASC" };
  }
  state.page = 1;
  hooks.changed(true);
  hooks.refresh().catch(hooks.fail);
}

async function toggleRecord(id) {
  if (state.record === id && document.getElementById("record-detail")) {
    closeRecord();
  } else {
    state.record = id;
    await showRecord();
  }
  hooks.changed(true);
}

export function closeRecord() {
  state.record = null;
  const panel = document.getElementById("record-detail");
  if (panel) panel.closest(".record-row, #record-alone").replaceChildren();
  for (const tr of $("records").tBodies[0].rows) expanded(tr, false);
  for (const row of document.querySelectorAll("#records tr.record-row")) row.remove();
}

// The open record's panel: in a row right under its row when it is on the page, else above
// the table (a permalink to a record on another page).
export async function showRecord() {
  const id = state.record;
  if (id === null) return;
  const data = await gql("query One($slug: String!, $id: String!) { record(slug: $slug, id: $id) }", {
    slug: state.slug,
    id,
  });
  if (state.record !== id) return;
  for (const row of document.querySelectorAll("#records tr.record-row")) row.remove();
  $("record-alone").replaceChildren();
  for (const tr of $("records").tBodies[0].rows) expanded(tr, false);
  if (!data.record) {
    $("record-alone").append(el("p", `No record has the id ${id}.`, { class: "error", id: "record-detail" }));
    return;
  }
  const panel = recordPanel(id, data.record);
  const row = [...$("records").tBodies[0].rows].find((tr) => tr.dataset.id === id);
  if (row) {
    expanded(row, true);
    const detail = el("tr", null, { class: "record-row" });
    const cell = el("td", null, { colspan: String(row.cells.length) });
    cell.append(panel);
    detail.append(cell);
    row.after(detail);
    // As wide as the table's visible box (it stays there when the table scrolls sideways).
    panel.style.width = $("records").parentElement.clientWidth + "px";
  } else {
    $("record-alone").append(panel);
  }
  // Into view vertically only: scrolling the table sideways would hide its first columns.
  const box = panel.getBoundingClientRect();
  if (box.top < 0 || box.bottom > innerHeight) window.scrollBy(0, Math.min(box.top - 8, Math.max(0, box.bottom - innerHeight + 8)));
}

function recordPanel(id, record) {
  const panel = el("section", null, { id: "record-detail", "aria-label": "Record " + id });
  const head = el("div", null, { class: "record-head" });
  const title = el("h3", "Record ");
  title.append(el("code", id, { id: "record-id" }));
  const close = el("button", "Close", { type: "button", class: "secondary", id: "close-record" });
  close.addEventListener("click", (e) => {
    e.stopPropagation();
    closeRecord();
    hooks.changed(true);
  });
  head.append(title, close);
  const list = el("dl", null, { class: "record-fields", id: "record-fields" });
  for (const [name, value] of leaves(record)) {
    learn(name, value);
    list.append(el("dt", name), el("dd", value === null || value === undefined ? "–" : show(name, value), { "data-field": name }));
  }
  const links = el("p", null, { class: "record-links" });
  const permalink = new URL(location.href);
  permalink.search = new URLSearchParams({ dataset: state.slug, record: id }).toString();
  links.append(
    el("a", "Permalink", { href: permalink.pathname + permalink.search, id: "record-permalink" }),
    document.createTextNode(" · API: "),
    el("code", recordUrl(state.slug, id), { id: "record-api" }),
  );
  const json = el("details", null, { class: "record-json" });
  json.append(el("summary", "JSON"), el("pre", JSON.stringify(record, null, 2), { id: "record-json" }));
  panel.append(head, list, links, json);
  return panel;
}
