// Small formatting helpers shared by the tables and the drawer.

import {el} from "./dom.js";
import {num} from "./facts.js";

export {num, plural, unitShort} from "./facts.js";  // the tables' and the drawer's numbers are the snapshot's

/** The text of a value the server sent cut (its marker `{cut: true, json_bytes, type}`): a `meta` or
 *  `annotations` value too long for a listing row (the rollout's own answer has it whole), or a
 *  message too big for a part of /graph (`where` says where it is whole); null for any other value. */
export function cutText(value, where = "open the rollout for it whole") {
  if (value === null || typeof value !== "object" || value.cut !== true || typeof value.json_bytes !== "number") {
    return null;
  }
  const what = `${value.type === "object" ? "an" : "a"} ${value.type}`;
  return `(cut: ${what} of ${num(value.json_bytes)} bytes of JSON; ${where})`;
}

export function pct(part, whole) {
  if (!whole) return "";
  return `${Math.round((part / whole) * 100)}%`;
}

export function range(pair) {
  if (!pair || pair[0] === null || pair[0] === undefined) return "-";
  return pair[0] === pair[1] ? num(pair[0]) : `${num(pair[0])}–${num(pair[1])}`;
}

/** An id short enough for a table cell, cut in the middle so its end still tells it apart
 *  (tr_trunca…_sidecar, tr_86f0b7…382298e2); the cell's title holds the whole id. */
export function shortId(id) {
  return id && id.length > 18 ? `${id.slice(0, 9)}…${id.slice(-8)}` : id;
}

/** A table's id: whole where it fits, else cut at its head by the layout (its end, where ids differ,
 *  kept); on one line, one text (a copy of it is the whole id). */
export function fitId(id) {
  return el("span", {className: "fit-id"}, el("span", {className: "id-text"}, id ?? "-"));
}

/** "3 m ago" from unix seconds. */
export function age(seconds) {
  if (!seconds) return "-";
  const delta = Math.max(0, Date.now() / 1000 - seconds);
  if (delta < 60) return `${Math.floor(delta)} s ago`;
  if (delta < 3600) return `${Math.floor(delta / 60)} m ago`;
  if (delta < 86400) return `${Math.floor(delta / 3600)} h ago`;
  return `${Math.floor(delta / 86400)} d ago`;
}

export function isoOf(seconds) {
  return seconds ? new Date(seconds * 1000).toISOString() : "";
}

/** The size of a block, path or node in `unit` (the server's "tokens" or "chars"): its
 *  token_count when the unit is tokens, else its char_count. */
export function sizeIn(item, unit) {
  return (unit === "tokens" ? item?.token_count : item?.char_count) ?? 0;
}

/** What the run index says of a rollout: trained yes / no / not said, and superseded; "-" when it is not listed. */
export function trainedText(row) {
  if (!("superseded" in row)) return "-";
  const trained = {true: "yes", false: "no"}[row.trained] ?? "not said";
  return row.superseded ? `${trained} · superseded` : trained;
}
