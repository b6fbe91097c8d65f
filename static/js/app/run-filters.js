// The run page's filter bar: step and status selects, the task/annotation picker, the reward range,
// the search box, one removable chip per active filter and "clear all". It only ever writes the
// filters into the URL state (through `onFilter`); the server does the filtering and the counting.

import {el, select} from "../draw/dom.js";
import {num} from "../draw/format.js";
import {Picker} from "./picker.js";
import {anyFilter, clearedFilters} from "../draw/route.js";

/** A text input that applies its trimmed value on Enter or leaving it (`change`), and after a pause
 *  (none when `pauseMs` is 0). */
export function applying(input, current, apply, pauseMs) {
  let timer = null;
  const now = () => {
    clearTimeout(timer);
    if (input.value.trim() !== current()) apply(input.value.trim());
  };
  input.addEventListener("change", now);
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") now(); });
  if (pauseMs) input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(now, pauseMs); });
  return input;
}

/** [name, label, patch, title] of every active filter, in the order the bar shows them. */
function activeFilters(state, view) {
  const without = (list, item) => list.filter((other) => other !== item);
  const range = state.rmin && state.rmax ? `reward ${state.rmin} to ${state.rmax}`
    : state.rmin ? `reward ≥ ${state.rmin}` : `reward ≤ ${state.rmax}`;
  return [
    state.step && ["step", `step ${state.step}`, {step: ""}],
    state.task && ["task", `task ${state.task}`, {task: ""}],
    state.status && ["status", `status ${state.status}`, {status: ""}],
    ...state.ann.map((ann) => [`ann:${ann}`, ann.includes("=") ? ann.replace("=", " = ") : `has ${ann}`,
      {ann: without(state.ann, ann)}]),
    state.q && ["q", `"${state.q}"`, {q: ""}],
    (state.rmin || state.rmax) && ["reward", range, {rmin: "", rmax: ""},
      "rollouts whose numeric reward is in this range, edges included"],
    ...state.flag.map((flag) => [`flag:${flag}`, `flag ${flag}`, {flag: without(state.flag, flag)},
      `only rows carrying ${flag}`]),
    ...state.xflag.map((flag) => [`xflag:${flag}`, `not ${flag}`, {xflag: without(state.xflag, flag)},
      `no row carrying ${flag}`]),
    state.ungrouped && view === "rollouts" && ["ungrouped", "no group key", {ungrouped: false},
      "only the rollouts that carry no group key"],
  ].filter(Boolean);
}

export class FilterBar {
  constructor(onFilter) {
    this.onFilter = onFilter;
    this.state = null;
    this.searchBox = applying(el("input", {type: "search", id: "search", placeholder: "search id, meta, annotations",
      "aria-label": "search", autocomplete: "off"}), () => this.state.q, (q) => onFilter({q}), 600);
    this.picker = new Picker((pick) => onFilter(pick.task !== undefined ? {task: pick.task}
      : {ann: [...this.state.ann.filter((ann) => ann.split("=")[0] !== pick.ann.split("=")[0]), pick.ann]}));
    const reward = (name, label, title) => applying(el("input", {type: "number", step: "any", id: `reward-${name}`,
      className: "reward-input", placeholder: label, "aria-label": label, title, dataset: {filter: name}}),
    () => this.state[name], (value) => onFilter({[name]: value}), 0);
    this.rewardMin = reward("rmin", "reward ≥",
      "only rollouts whose numeric reward is at least this (inclusive); Enter applies");
    this.rewardMax = reward("rmax", "reward ≤",
      "only rollouts whose numeric reward is at most this (inclusive); Enter applies");
  }

  setRun(runId) {
    this.picker.setRun(runId);
  }

  /** The bar's nodes for `state` (the inputs keep what is being typed in them). */
  draw(state, run, view) {
    this.state = state;
    const inputs = [[this.searchBox, state.q], [this.rewardMin, state.rmin], [this.rewardMax, state.rmax]];
    for (const [input, value] of inputs) {
      if (document.activeElement !== input) input.value = value;
    }
    const steps = run.steps || [];
    const parts = [];
    if (steps.length > 1 || state.step) {
      parts.push(select([["", `all steps (${num(steps.length)})`],
        ...steps.map((s) => [String(s), `step ${s} (${num(run.step_counts?.[s] ?? 0)})`])],
      state.step, (value) => this.onFilter({step: value}), {"aria-label": "step", dataset: {filter: "step"}}));
    }
    const statuses = Object.entries(run.statuses || {});
    parts.push(select([["", "any status"], ...statuses.map(([s, n]) => [s, `${s} (${num(n)})`])],
      state.status, (value) => this.onFilter({status: value}), {"aria-label": "status", dataset: {filter: "status"}}));
    parts.push(this.picker.node, this.rewardMin, this.rewardMax, this.searchBox);
    const chips = activeFilters(state, view).map(([name, label, patch, why]) => el("button", {
      type: "button", className: "chip filter-chip active", dataset: {filter: name}, "aria-pressed": "true",
      title: `${why ? `${why}: ` : ""}click to remove this filter`, onclick: () => this.onFilter(patch)},
      `${label} ×`));
    parts.push(chips);
    if (anyFilter(state)) {
      parts.push(el("button", {type: "button", className: "ghost", dataset: {filter: "clear"},
        title: "remove every filter, flags and reward range included", onclick: () => {
          this.searchBox.value = "";
          this.onFilter(clearedFilters());
        }}, "clear all"));
    }
    return parts;
  }
}
