// Pieces shared by the run page's Groups and Rollouts tables: sortable headers, row cells and the pager.

import {el} from "./dom.js";
import {num} from "./format.js";
import {flagBadge, rowFlags} from "./viewer.js";

/** A header cell that asks the server to sort by `key`; task sorts A→Z first, the rest high→low. */
export function sortHeader(label, key, current, onSort, className = "") {
  const active = key && current.key === key;
  const ariaSort = active ? (current.order === "asc" ? "ascending" : "descending") : "none";
  if (!key) return el("th", {className, scope: "col"}, label);
  const arrow = active ? (current.order === "asc" ? "▲" : "▼") : "↕";
  const next = active ? (current.order === "asc" ? "desc" : "asc") : (key === "task" ? "asc" : "desc");
  return el("th", {className: `sortable ${className}`, scope: "col", "aria-sort": ariaSort},
    el("button", {type: "button", className: "sort", dataset: {sort: key},
      title: `sort by ${label}`, onclick: () => onSort(key, next)}, label, el("span", {className: "arrow"}, arrow)));
}

export function flagsCell(names) {
  return el("td", {className: "flags"}, rowFlags(names).map((name) => flagBadge(name)));
}

export function statusBadge(row) {
  if (row.unreadable) {
    return el("span", {className: "status status-unreadable", title: row.error || "unreadable"}, "unreadable");
  }
  return el("span", {className: `status status-${row.status}`, title: row.ended === false ? "not ended" : "ended"},
    row.status ?? "-");
}

/** Emphasis for a row under an active filter: `match` true / false / null. */
export function matchClass(row) {
  if (row.match === true) return " matched";
  if (row.match === false) return " unmatched";
  return "";
}

/** The pager under a table: ‹ prev, which rows of how many are shown, next ›; `limit` rows a page. */
export function pager(listing, page, limit, go) {
  const first = (page - 1) * limit;
  const shown = listing.data.length;
  return [
    el("button", {type: "button", className: "ghost", disabled: page <= 1, dataset: {page: "prev"},
      onclick: () => go({page: page - 1})}, "‹ prev"),
    el("span", {className: "pager-text"}, shown
      ? `${num(first + 1)}–${num(first + shown)} of ${num(listing.total ?? shown)}`
      : `0 of ${num(listing.total ?? 0)}`),
    el("button", {type: "button", className: "ghost", disabled: !listing.has_more, dataset: {page: "next"},
      onclick: () => go({page: page + 1})}, "next ›")];
}
