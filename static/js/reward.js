// Rewards on one continuous red→green scale over the run-wide range the listing reports.

import {el} from "./dom.js";
import {num} from "./format.js";

/** A reward as a number (booleans count as 0/1), or null. */
function rewardValue(value) {
  if (typeof value === "boolean") return value ? 1 : 0;
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** 0..100 on the scale; 50 when the range is a single value. */
function scale(value, range) {
  if (!range || range.min === null || range.max === null || range.max === range.min) return 50;
  const share = (value - range.min) / (range.max - range.min);
  return Math.round(Math.min(1, Math.max(0, share)) * 100);
}

function paint(node, value, range) {
  if (value === null) {
    node.classList.add("hollow");
  } else {
    node.style.setProperty("--reward-pct", `${scale(value, range)}%`);
  }
  return node;
}

export function rewardDot(raw, range, title) {
  return paint(el("span", {className: "dot", title: title ?? `reward ${num(raw)}`}), rewardValue(raw), range);
}

/** A dot and the value, coloured. */
export function rewardCell(raw, range) {
  const value = rewardValue(raw);
  return el("span", {className: "reward"}, rewardDot(raw, range),
    paint(el("span", {className: "reward-num"}, value === null ? "-" : num(value)), value, range));
}

export function rewardLegend(range) {
  if (!range || range.min === null || range.min === undefined) {
    return el("p", {className: "legend muted small"}, "no numeric rewards to colour");
  }
  const equal = range.min === range.max;
  return el("p", {className: "legend muted small"}, "reward colour: ",
    rewardDot(range.min, range, `lowest: ${num(range.min)}`), ` red = ${num(range.min)} (lowest shown) → `,
    rewardDot(range.max, range, `highest: ${num(range.max)}`), ` green = ${num(range.max)} (highest shown)`,
    equal ? ", every reward is equal: middle colour" : ", over every rollout the filters list");
}
