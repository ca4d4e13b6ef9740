// The explorer's ways to the API: GraphQL with the page's short-lived token (renewed in the
// background while the page is open), the REST URLs of what is on screen (shown, copied as
// curl), and downloads through the export endpoint.

import { RENEW_AT } from "./limits.js";

const root = document.getElementById("explore");
const endpoint = root.dataset.endpoint;
const base = root.dataset.base; // {base_url}, as the REST URLs are written
let token = root.dataset.token;
let expiresAt = Number(root.dataset.expiresAt) * 1000;
let renewTimer = null;
let renewing = null;

// The token is renewed at RENEW_AT of its lifetime, and at once when the API refuses it
// (the computer slept past the timer): `POST /explore/token` with the session's cookie.
export function keepTokenFresh() {
  clearTimeout(renewTimer);
  const wait = Math.max(5_000, (expiresAt - Date.now()) * RENEW_AT);
  renewTimer = setTimeout(() => renew().catch(() => keepTokenFresh()), wait);
}

export function renew() {
  if (!renewing) {
    renewing = (async () => {
      const response = await fetch("/explore/token", {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: "csrf=" + encodeURIComponent(root.dataset.csrf),
        credentials: "same-origin",
      });
      if (!response.ok) throw new Error("The explorer's session has ended: log in again.");
      const body = await response.json();
      token = body.token;
      expiresAt = Date.parse(body.expires_at);
      root.dataset.renewed = String(Number(root.dataset.renewed || 0) + 1);
      document.getElementById("token-expires").textContent = body.expires_text;
      keepTokenFresh();
    })().finally(() => {
      renewing = null;
    });
  }
  return renewing;
}

async function authorized(url, options, retry = true) {
  const headers = { ...(options.headers || {}), Authorization: "Bearer " + token };
  const response = await fetch(url, { ...options, headers });
  if (response.status === 401 && retry) {
    await renew();
    return authorized(url, options, false);
  }
  return response;
}

export async function gql(query, variables) {
  const response = await authorized(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  let body;
  try {
    body = await response.json();
  } catch {
    throw new Error("The API answered " + response.status + ".");
  }
  if (body.errors && body.errors.length) {
    throw new Error(body.errors.map((e) => e.message).join(" "));
  }
  if (!response.ok) throw new Error(body.message || "The API answered " + response.status + ".");
  return body.data;
}

// A query-string component; `'` too, so a URL pastes into single quotes.
const part = (s) => encodeURIComponent(s).replace(/'/g, "%27");

// The REST conditions of `view`: q, bbox, near, field=value, field[op]=value.
function conditions(view) {
  const pairs = [];
  if (view.q) pairs.push(["q", view.q]);
  if (view.bbox) pairs.push(["bbox", view.bbox]);
  if (view.near) pairs.push(["near", view.near]);
  for (const f of view.filters) {
    pairs.push([f.op === "EQ" ? f.field : `${f.field}[${f.op.toLowerCase()}]`, f.value]);
  }
  return pairs;
}

const sortText = (sort) => (sort ? sort.field + (sort.order === "ASC" ? ">" : "<") : null);

function url(path, pairs) {
  const query = pairs.filter(([, v]) => v !== null && v !== undefined && v !== "");
  return base + path + (query.length ? "?" + query.map(([k, v]) => part(k) + "=" + part(v)).join("&") : "");
}

const datasetPath = (slug) => "/datasets/" + part(slug);

// `GET …/records` of the page on screen.
export function recordsUrl(view, perPage) {
  return url(datasetPath(view.slug) + "/records", [
    ...conditions(view),
    ["sort", sortText(view.sort)],
    ["fields", view.columns.join(",")],
    ["per_page", String(perPage)],
    ["page", view.page > 1 ? String(view.page) : null],
  ]);
}

// `GET …/export` of every record the view matches, in its order and columns.
export function exportUrl(view, format) {
  return url(datasetPath(view.slug) + "/export", [
    ["format", format],
    ...conditions(view),
    ["sort", sortText(view.sort)],
    ["fields", view.columns.join(",")],
  ]);
}

// `GET …/agg` of the statistics on screen.
export function aggUrl(view, stats, limit) {
  return url(datasetPath(view.slug) + "/agg", [
    ["group_by", stats.groupBy.join(",")],
    ["field", stats.field],
    ...conditions(view),
    ["percentiles", stats.field ? String(stats.pct) : null],
    ["sort", stats.metric === "count" ? null : stats.metric + "<"],
    ["min_count", stats.minCount > 1 ? String(stats.minCount) : null],
    ["limit", String(limit)],
  ]);
}

export function recordUrl(slug, id) {
  return base + datasetPath(slug) + "/records/" + part(id);
}

export function curl(apiUrl) {
  return `curl -H "Authorization: Bearer $ODQS_TOKEN" '${apiUrl}'`;
}

// Downloads `apiUrl` (an export) with the page's token, as the file the API names; answers
// the number of records the API announced (`X-Total-Count`).
export async function download(apiUrl, fallbackName) {
  // Fetched from this origin (the CSP's connect-src), whatever host the public URL names.
  const local = apiUrl.startsWith(base) ? endpoint.replace(/\/graphql$/, "") + apiUrl.slice(base.length) : apiUrl;
  const response = await authorized(local, {});
  if (!response.ok) {
    let message = "The export answered " + response.status + ".";
    try {
      message = (await response.json()).message || message;
    } catch {
      // not JSON: keep the status
    }
    throw new Error(message);
  }
  const disposition = response.headers.get("Content-Disposition") || "";
  const named = /filename="([^"]+)"/.exec(disposition);
  const blob = await response.blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = named ? named[1] : fallbackName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
  return { total: Number(response.headers.get("X-Total-Count")), bytes: blob.size };
}
