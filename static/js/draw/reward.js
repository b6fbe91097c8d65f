// Rewards on one continuous red→green scale over the run-wide range the listing reports. The
// colour is the server's number for the reward (`reward_value`, a group entry's `value`); the
// value as recorded is what the hover says.

import {el} from "./dom.js";
import {cutText, num} from "./format.js";

/** The reward as recorded, as text: `true`, `0.5`, `"pass"`, a cut value said cut, or - when there is none. */
export function recordedReward(raw) {
  if (raw === undefined) return "-";
  return typeof raw === "number" ? num(raw) : cutText(raw) ?? JSON.stringify(raw);
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

/** A dot coloured by `value` (the server's number, or null); `raw` is the reward as recorded. */
export function rewardDot(raw, value, range, title) {
  const label = title ?? `reward ${recordedReward(raw)}`;
  return paint(el("span", {className: "dot", title: label, role: "img", "aria-label": label}), value ?? null, range);
}

/** A dot and the value, coloured. */
export function rewardCell(raw, value, range) {
  return el("span", {className: "reward"}, rewardDot(raw, value, range),
    paint(el("span", {className: "reward-num", title: `recorded as ${recordedReward(raw)}`},
      value === null || value === undefined ? "-" : num(value)), value ?? null, range));
}

/** The legend of the reward colours; `over` says what the range covers. */
export function rewardLegend(range, over = "over every rollout the filters list") {
  if (!range || range.min === null || range.min === undefined) {
    return el("p", {className: "legend muted small"}, "no numeric rewards to colour");
  }
  const equal = range.min === range.max;
  return el("p", {className: "legend muted small"}, "reward colour: ",
    rewardDot(range.min, range.min, range, `lowest: ${num(range.min)}`), ` red = ${num(range.min)} (lowest shown) → `,
    rewardDot(range.max, range.max, range, `highest: ${num(range.max)}`), ` green = ${num(range.max)} (highest shown)`,
    equal ? ", every reward is equal: middle colour" : `, ${over}`);
}
