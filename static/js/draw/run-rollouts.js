// The run page's Rollouts table: one row per trajectory.

import {el} from "./dom.js";
import {age, fitId, isoOf, num, pct, trainedText} from "./format.js";
import {rewardCell} from "./reward.js";
import {strip} from "./strip.js";
import {flagsCell, sortHeader, statusBadge} from "./run-table.js";

/** `indexed`: the run has a run index, so a column says what it says of each rollout. */
export function rolloutsTable(listing, sort, {onSort, onOpen, openId, indexed = false}) {
  const range = listing.reward_range;
  const head = el("tr", {},
    sortHeader("trajectory", null, sort),
    sortHeader("task", "task", sort, onSort),
    sortHeader("step", "step", sort, onSort, "num"),
    sortHeader("mask", null, sort),
    sortHeader("tokens", "tokens", sort, onSort, "num"),
    sortHeader("trainable", null, sort, null, "num"),
    sortHeader("turns", "turns", sort, onSort, "num"),
    sortHeader("paths", null, sort, null, "num"),
    sortHeader("reward", "reward", sort, onSort),
    sortHeader("flags", "health", sort, onSort),
    indexed ? sortHeader("trained", "trained", sort, onSort) : null,
    sortHeader("status", null, sort),
    sortHeader("when", "created", sort, onSort));
  const body = el("tbody", {}, listing.data.map((row) => rolloutRow(row, range, onOpen, openId, indexed)));
  if (!listing.data.length) {
    body.append(el("tr", {className: "empty"}, el("td", {colSpan: indexed ? 13 : 12}, "No trajectories match.")));
  }
  return el("table", {className: "rows rollouts"}, el("thead", {}, head), body);
}

function rolloutRow(row, range, onOpen, openId, indexed) {
  const summary = row.summary || {};
  const size = row.size || {};
  const unit = size.unit;
  return el("tr", {
    className: `nav rollout-row${row.id === openId ? " open" : ""}${row.unreadable ? " unreadable" : ""}`,
    dataset: {traj: row.id}, tabindex: "-1", onclick: () => onOpen(row.id)},
  el("td", {className: "id", title: row.error ? `${row.id}: ${row.error}` : row.id}, fitId(row.id)),
  el("td", {className: "task", title: row.task_id ?? ""}, row.task_id ?? "-"),
  el("td", {className: "num"}, num(row.step)),
  el("td", {className: "mask"}, strip(summary.strip, {unit})),
  el("td", {className: "num",
    title: unit === "chars" ? "no tokens: characters" : "tokens: total over the samples the trainer gets"},
    unit === "chars" ? `${num(size.tokens)} ch` : num(size.tokens)),
  el("td", {className: "num", title: "tokens in the loss, over the samples the trainer gets"},
    size.trainable === null || size.trainable === undefined ? "-"  // no tokens: nothing to count; 0 is 0
      : `${num(size.trainable)} ${pct(size.trainable, size.tokens) || "0%"}`),
  el("td", {className: "num", title: "model calls"}, num(row.capture?.exchange_count)),
  el("td", {className: "num"}, num(summary.paths)),
  el("td", {}, rewardCell(row.annotations?.reward, row.reward_value, range)),
  flagsCell(summary.flags),
  indexed ? trainedCell(row) : null,
  el("td", {}, statusBadge(row)),
  el("td", {className: "when", title: isoOf(row.created_ts) || row.created_at || ""}, age(row.created_ts)));
}

function trainedCell(row) {
  const listed = "superseded" in row;
  return el("td", {className: `trained${listed ? "" : " muted"}`,
    title: listed ? "as the trainer's run index says" : "the run index does not list this record"}, trainedText(row));
}
