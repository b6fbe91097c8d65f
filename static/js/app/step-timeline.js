// The run page's Timeline view: every rollout of one training step on one time axis. A lane per rollout
// (in the server's order: /v1/steps/timeline's `sort`), read part by part and polled; the step, sort and
// zoom controls, the summary and legend, and beside the drawing (step-canvas.js: calls as bars coloured by
// how they ended, failures marked, superseded and untrained attempts shaded) the lanes as a list of
// buttons, for the keyboard and screen readers.

import {get} from "./api.js";
import {append, button, el, replace, select} from "../draw/dom.js";
import {num, plural} from "../draw/format.js";
import {laneText, StepCanvas} from "../draw/step-canvas.js";
import {duration} from "../draw/tab-timeline.js";

const SORTS = [["start", "start"], ["end", "end"], ["duration", "duration"], ["reward", "reward"], ["task", "task"]];
const ENDINGS = [["stop", "stop"], ["length", "cut at max tokens (length)"], ["tool_calls", "tool calls"],
  ["other", "other / not said"], ["failed", "failed call"]];

export class StepTimeline {
  constructor({go}) {
    this.go = go;
    this.key = null;
    this.answer = null;
    this.lanes = [];
    this.drawing = new StepCanvas({onSelect: (index) => this.selectLane(index),
      onOpen: (index, call) => this.openLane(index, call)});
    this.node = el("section", {className: "step-timeline"});
  }

  /** Draw step `state.step` of the run under the run page's filters, into `box`. */
  async show(state, run, box, params) {
    this.state = state;
    if (!state.step && run?.steps?.length) {
      this.go({step: String(run.steps[run.steps.length - 1])}, {replace: true});
      return;
    }
    if (this.node.parentNode !== box) replace(box, this.node);
    const key = JSON.stringify([params, state.sort, state.order]);
    this.controls(state, run);
    if (key === this.key) return;
    this.key = key;
    this.params = params;
    await this.load(false);
  }

  /** The first part of the answer, then the rest part by part; `poll`: only when it changed. */
  async load(poll) {
    const key = this.key;
    const params = {...this.params, sort: this.state.sort || null, order: this.state.order || null};
    if (!params.step) {
      replace(this.body(), el("p", {className: "notice"}, "Pick a step."));
      return;
    }
    if (!poll) {
      replace(this.body(), el("p", {className: "muted st-loading"},
        "reading the step's lanes…"));
    }
    let first;
    try {
      const {body, changed} = await get("/steps/timeline", params, {poll: true});
      // a poll draws again only when the step's lanes changed (a new generation of another step's records: not)
      if (key !== this.key || (poll && (!changed || body.version === this.answer?.version))) return;
      first = body;
    } catch (error) {
      if (key !== this.key) return;
      this.answer = null;
      replace(this.body(), el("p", {className: "notice error"}, `Cannot draw this step: ${error.message}`));
      return;
    }
    this.answer = first;
    this.lanes = [...first.lanes];
    this.drawing.hold(first, this.lanes, poll);  // a poll keeps the place
    this.build();
    for (let next = first.part?.next; next !== undefined && next !== null;) {
      const part = await get("/steps/timeline", {...params, from: next});
      if (key !== this.key) return;
      this.lanes.push(...part.lanes);
      this.listLanes(part.lanes, this.lanes.length - part.lanes.length);
      this.drawing.draw();
      next = part.part?.next;
    }
  }

  poll() {
    if (this.key) return this.load(true);
    return null;
  }

  controls(state, run) {
    const steps = run?.steps || [];
    this.controlBox ||= el("div", {className: "st-controls"});
    replace(this.controlBox,
      select(steps.map((s) => [String(s), `step ${s} (${num(run.step_counts?.[s] ?? 0)})`]), state.step,
        (value) => this.go({step: value}), {"aria-label": "timeline step", dataset: {filter: "timeline-step"}}),
      select(SORTS.map(([value, label]) => [value, `by ${label}`]), state.sort || "start",
        (value) => this.go({sort: value, order: value === "start" ? "" : this.state.order}),
        {"aria-label": "order the lanes by", dataset: {sort: "timeline"}}),
      select([["", "default order"], ["asc", "ascending"], ["desc", "descending"]], state.order,
        (value) => this.go({order: value}), {"aria-label": "sort order", dataset: {sort: "timeline-order"}}),
      button("zoom in", () => this.drawing.zoom(0.5), {className: "ghost", dataset: {zoom: "in"}}),
      button("zoom out", () => this.drawing.zoom(2), {className: "ghost", dataset: {zoom: "out"}}),
      button("fit", () => this.drawing.fit(), {className: "ghost", dataset: {zoom: "fit"}}));
  }

  body() {
    replace(this.node, this.controlBox);
    const box = el("div", {className: "st-body"});
    this.node.append(box);
    return box;
  }

  build() {
    const answer = this.answer;
    const box = this.body();
    const summary = el("p", {className: "st-summary muted"},
      `${plural(answer.lanes_total, "lane")} of ${plural(answer.rollouts, "rollout")} at step ${answer.step}`,
      ` · span ${duration(answer.span_ms)} from ${answer.origin_at ?? "-"}`,
      answer.critical ? ` · critical (ended last): ${answer.critical}` : "");
    const legend = el("p", {className: "st-legend small muted"}, ENDINGS.map(([name, label]) =>
      el("span", {className: "st-key"}, el("span", {className: `st-swatch ${name}`}), label)),
    el("span", {className: "st-key"}, el("span", {className: "st-swatch env"}),
      "the rollout's time outside its calls (tools, environment)"),
    el("span", {className: "st-key"}, el("span", {className: "st-swatch superseded"}), "superseded"),
    el("span", {className: "st-key"}, el("span", {className: "st-swatch untrained"}), "not trained"),
    " · ctrl+wheel or +/− zoom, drag or ←/→ pan, ↑/↓ a lane, Enter opens it");
    this.list = el("ol", {className: "st-lanes", "aria-label": `lanes of step ${answer.step}`,
      onkeydown: (event) => this.onListKey(event)});
    this.readout = el("p", {className: "st-readout small", "aria-live": "polite"}, " ");
    append(box, [summary, legend, el("div", {className: "st-split"}, this.list,
      el("div", {className: "st-drawing"}, this.drawing.build(this.node), this.readout))]);
    if (!this.lanes.length) {
      this.list.append(el("li", {className: "muted"}, "No rollout of this step passes the filters."));
    }
    this.listLanes(this.lanes, 0);
    this.drawing.draw();
  }

  /** The lane list's items for `lanes`, the first at position `from`. One of them is in the tab order (the
   *  current lane's): ↑ / ↓, Home and End move along the list, so Tab passes a step of thousands in one. */
  listLanes(lanes, from) {
    const critical = this.answer.critical;
    this.list.append(...lanes.map((lane, i) => el("li", {},
      el("button", {type: "button", className: `st-lane${lane.trajectory_id === critical ? " critical" : ""}`,
        tabindex: from + i === this.drawing.view.lane ? "0" : "-1",
        dataset: {traj: lane.trajectory_id, lane: from + i}, title: `group ${lane.group_key ?? "-"}`,
        onfocus: () => this.selectLane(from + i), onclick: () => this.openLane(from + i, null)},
      laneText(lane, critical)))));
  }

  /** ↑ / ↓ / Home / End in the lane list: focus the lane above, below, first or last. */
  onListKey(event) {
    const at = this.drawing.view.lane;
    const moves = {ArrowUp: at - 1, ArrowDown: at + 1, Home: 0, End: this.lanes.length - 1};
    if (!(event.key in moves)) return;
    event.preventDefault();
    event.stopPropagation();
    this.selectLane(moves[event.key], true);
  }

  /** Make lane `index` the current one (marked, in sight, its item the list's one in the tab order); `focus`:
   *  move the focus to its item. */
  selectLane(index, focus = false) {
    if (!this.lanes.length) return;
    const lane = Math.max(0, Math.min(index, this.lanes.length - 1));
    const item = (at) => this.list.querySelector(`button[data-lane="${at}"]`);
    item(this.drawing.view.lane)?.setAttribute("tabindex", "-1");
    item(lane)?.setAttribute("tabindex", "0");
    this.drawing.current(lane);
    this.readout.textContent = laneText(this.lanes[lane], this.answer.critical);
    const node = item(lane);
    if (focus) node?.focus();
    else if (node) {  // in sight in the list, without scrolling the page
      const list = this.list;
      if (node.offsetTop < list.scrollTop) list.scrollTop = node.offsetTop;
      else if (node.offsetTop + node.offsetHeight > list.scrollTop + list.clientHeight) {
        list.scrollTop = node.offsetTop + node.offsetHeight - list.clientHeight;
      }
    }
  }

  /** Open lane `index`'s rollout in the drawer on its Timeline tab, at `call` (else its first call). */
  openLane(index, call) {
    const lane = this.lanes[index];
    if (!lane) return;
    const at = call || lane.calls[0];
    this.go({traj: lane.trajectory_id, tab: "timeline", node: at?.node_id || ""});
  }
}
