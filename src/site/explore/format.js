// How values are written: numbers with their field's precision (the decimals its values are
// written with in the data, so 121.5654 stays 121.5654 and an average does not show float
// noise), keys and labels; and the DOM helpers every module uses. Values from a dataset reach
// the page through textContent or SVG text nodes only, never as markup.

import { MAX_DECIMALS } from "./limits.js";
import { state } from "./view.js";

export const $ = (id) => document.getElementById(id);

export function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

export function status(text) {
  $("status").textContent = text || "";
}

export const count = new Intl.NumberFormat("en");

// The decimals `n` is written with, float noise aside (0.1 + 0.2 has one).
export function decimalsOf(n) {
  if (!Number.isFinite(n) || Number.isInteger(n)) return 0;
  const text = String(Number(n.toPrecision(12)));
  const e = /e-(\d+)$/.exec(text);
  if (e) return MAX_DECIMALS;
  const dot = text.indexOf(".");
  return dot < 0 ? 0 : Math.min(MAX_DECIMALS, text.length - dot - 1);
}

// Learns the precision of the number fields from values seen in the data.
export function learn(name, value) {
  if (typeof value !== "number") return;
  const seen = state.decimals.get(name) || 0;
  const d = decimalsOf(value);
  if (d > seen) state.decimals.set(name, d);
}

const formats = new Map();
function formatter(decimals, grouping) {
  const key = decimals + (grouping ? "," : "");
  if (!formats.has(key)) {
    formats.set(key, new Intl.NumberFormat("en", { maximumFractionDigits: decimals, useGrouping: grouping }));
  }
  return formats.get(key);
}

// A statistic of field `name` (thousands grouped); `extra` more decimals for averages and
// percentiles.
export function number(name, n, extra = 0) {
  if (n === null || n === undefined) return "–";
  const decimals = Math.min(MAX_DECIMALS, (state.decimals.get(name) || 0) + extra);
  return formatter(decimals, true).format(n);
}

// A record's value as the data has it (a year, an HHMM time, a code: no thousands grouping),
// with its field's precision.
export function show(name, value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return formatter(state.decimals.get(name) || 0, false).format(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// Reads a dotted path (geo.city) out of a record.
export function pick(record, path) {
  if (Object.prototype.hasOwnProperty.call(record, path)) return record[path];
  let value = record;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = value[part];
  }
  return value;
}

// A record's leaves as [dotted path, value], in its order.
export function leaves(value, prefix = "", out = []) {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? prefix + "." + k : k, out);
  } else {
    out.push([prefix, value]);
  }
  return out;
}

export const key = (k) => (k === "" ? "(empty)" : k);

// A label cut to fit about `room` narrow characters, counting wide (CJK) ones twice.
export function cut(text, room) {
  let used = 0;
  let out = "";
  for (const ch of text) {
    used += /[\u1100-\uffff]/.test(ch) ? 2 : 1;
    if (used > room) return out + "…";
    out += ch;
  }
  return out;
}
