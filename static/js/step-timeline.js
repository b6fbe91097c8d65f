// The run page's Timeline view: every rollout of one training step on one time axis. A lane per rollout
// (in the server's order: /v1/steps/timeline's `sort`), its calls as bars coloured by how they ended,
// its failures marked, the rollout's time outside its calls as a thin line under them (the environment's
// and tools' time), superseded and untrained attempts shaded, the rollout that ended last marked. Drawn
// on a canvas (thousands of lanes, tens of calls each), only the lanes in sight; zoom and pan with the
// wheel, a drag, the buttons or the keys. Beside it the lanes as a list of buttons, for the keyboard and
// screen readers. Every position is the server's (ms from the step's `origin_at`); nothing is computed
// again here but where a millisecond falls on the screen.

import {get} from "./api.js";
import {append, button, el, replace, select} from "./dom.js";
import {num, plural} from "./format.js";
import {duration} from "./tab-timeline.js";

const LANE_HEIGHT = 14;
const AXIS_HEIGHT = 22;
const MOST_HEIGHT = 560;  // px of lanes in sight at once; the rest scroll
const SORTS = [["start", "start"], ["end", "end"], ["duration", "duration"], ["reward", "reward"], ["task", "task"]];
const ENDINGS = [["stop", "stop"], ["length", "cut at max tokens (length)"], ["tool_calls", "tool calls"],
  ["other", "other / not said"], ["failed", "failed call"]];

/** How a call ended, as the legend and the colours name it. */
function ending(call) {
  return ["stop", "length", "tool_calls"].includes(call.finish_reason) ? call.finish_reason : "other";
}

/** The page's colours for the drawing, read from the stylesheet (so the theme applies). */
function palette(node) {
  const style = getComputedStyle(node);
  const read = (name) => style.getPropertyValue(name).trim();
  return {stop: read("--st-stop"), length: read("--st-length"), tool_calls: read("--st-tool-calls"),
    other: read("--st-other"), failed: read("--st-failed"), env: read("--st-env"), fg: read("--fg"),
    muted: read("--muted"), line: read("--line"), superseded: read("--st-superseded"),
    untrained: read("--st-untrained"), selected: read("--accent"), critical: read("--st-failed")};
}

/** A lane's one line of text: what the list says and the canvas's hover tells. */
function laneText(lane, critical) {
  return [lane.trajectory_id, `${duration(lane.start_ms)} → ${duration(lane.end_ms)}`,
    plural(lane.calls.length, "call"), lane.failures.length ? plural(lane.failures.length, "failure") : null,
    lane.trajectory_id === critical ? "critical: ended last" : null,
    lane.superseded ? "superseded" : lane.trained === false ? "not trained" : lane.trained ? "trained" : null,
    lane.status].filter(Boolean).join(" · ");
}

/** The rounded step between axis ticks that gives about one tick every 100 px. */
function tickStep(msPerPx) {
  const raw = msPerPx * 100;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw) || raw;
}

export class StepTimeline {
  constructor({go}) {
    this.go = go;
    this.key = null;
    this.answer = null;
    this.lanes = [];
    this.view = {from: 0, to: 1, top: 0, lane: 0};
    this.frame = null;
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
    if (!poll) this.view = {from: 0, to: Math.max(first.span_ms, 1), top: 0, lane: 0};  // a poll keeps the place
    this.build();
    for (let next = first.part?.next; next !== undefined && next !== null;) {
      const part = await get("/steps/timeline", {...params, from: next});
      if (key !== this.key) return;
      this.lanes.push(...part.lanes);
      this.listLanes(part.lanes, this.lanes.length - part.lanes.length);
      this.draw();
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
      button("zoom in", () => this.zoom(0.5), {className: "ghost", dataset: {zoom: "in"}}),
      button("zoom out", () => this.zoom(2), {className: "ghost", dataset: {zoom: "out"}}),
      button("fit", () => this.fit(), {className: "ghost", dataset: {zoom: "fit"}}));
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
    this.canvas = el("canvas", {className: "st-canvas", tabindex: "0", role: "img",
      "aria-label": `step ${answer.step}: ${plural(answer.lanes_total, "lane")} on one time axis; `
        + "the list beside it names each lane"});
    this.readout = el("p", {className: "st-readout small", "aria-live": "polite"}, " ");
    this.wire();
    append(box, [summary, legend,
      el("div", {className: "st-split"}, this.list, el("div", {className: "st-drawing"}, this.canvas, this.readout))]);
    if (!this.lanes.length) {
      this.list.append(el("li", {className: "muted"}, "No rollout of this step passes the filters."));
    }
    this.listLanes(this.lanes, 0);
    this.draw();
  }

  /** The lane list's items for `lanes`, the first at position `from`. One of them is in the tab order (the
   *  current lane's): ↑ / ↓, Home and End move along the list, so Tab passes a step of thousands in one. */
  listLanes(lanes, from) {
    const critical = this.answer.critical;
    this.list.append(...lanes.map((lane, i) => el("li", {},
      el("button", {type: "button", className: `st-lane${lane.trajectory_id === critical ? " critical" : ""}`,
        tabindex: from + i === this.view.lane ? "0" : "-1",
        dataset: {traj: lane.trajectory_id, lane: from + i}, title: `group ${lane.group_key ?? "-"}`,
        onfocus: () => this.selectLane(from + i), onclick: () => this.openLane(from + i, null)},
      laneText(lane, critical)))));
  }

  /** ↑ / ↓ / Home / End in the lane list: focus the lane above, below, first or last. */
  onListKey(event) {
    const moves = {ArrowUp: this.view.lane - 1, ArrowDown: this.view.lane + 1, Home: 0, End: this.lanes.length - 1};
    if (!(event.key in moves)) return;
    event.preventDefault();
    event.stopPropagation();
    this.selectLane(moves[event.key], true);
  }

  wire() {
    const canvas = this.canvas;
    let drag = null;
    canvas.addEventListener("wheel", (event) => {
      event.preventDefault();
      if (event.ctrlKey || event.metaKey) this.zoom(event.deltaY > 0 ? 1.25 : 0.8, event.offsetX);
      else if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
        this.pan(((event.deltaX || event.deltaY) / canvas.clientWidth) * (this.view.to - this.view.from));
      } else this.scrollLanes(Math.sign(event.deltaY) * 3);
    }, {passive: false});
    canvas.addEventListener("pointerdown", (event) => {
      drag = {x: event.clientX, y: event.clientY, from: this.view.from, top: this.view.top, moved: false};
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener("pointermove", (event) => {
      if (!drag) {
        this.hover(event.offsetX, event.offsetY);
        return;
      }
      const dx = event.clientX - drag.x;
      const dy = event.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (!drag.moved) return;
      const width = this.view.to - this.view.from;
      this.view.from = drag.from - (dx / canvas.clientWidth) * width;
      this.view.to = this.view.from + width;
      this.view.top = this.clampTop(drag.top - Math.round(dy / LANE_HEIGHT));
      this.draw();
    });
    canvas.addEventListener("pointerup", (event) => {
      const clicked = drag && !drag.moved;
      drag = null;
      if (clicked) this.click(event.offsetX, event.offsetY);
    });
    canvas.addEventListener("keydown", (event) => this.onKey(event));
    this.resize ||= new ResizeObserver(() => this.draw());
    this.resize.disconnect();
    this.resize.observe(this.node);
  }

  onKey(event) {
    const width = this.view.to - this.view.from;
    const moves = {
      ArrowLeft: () => this.pan(-width / 10), ArrowRight: () => this.pan(width / 10),
      ArrowUp: () => this.selectLane(this.view.lane - 1),
      ArrowDown: () => this.selectLane(this.view.lane + 1),
      "+": () => this.zoom(0.5), "=": () => this.zoom(0.5), "-": () => this.zoom(2), 0: () => this.fit(),
      Enter: () => this.openLane(this.view.lane, null),
    };
    const move = moves[event.key];
    if (!move) return;
    event.preventDefault();
    event.stopPropagation();  // the page's own keys (j / k, Enter) are the tables'
    move();
  }

  lanesInSight() {
    return Math.max(1, Math.floor((this.canvas.clientHeight - AXIS_HEIGHT) / LANE_HEIGHT));
  }

  clampTop(top) {
    return Math.max(0, Math.min(top, this.lanes.length - this.lanesInSight()));
  }

  scrollLanes(by) {
    this.view.top = this.clampTop(this.view.top + by);
    this.draw();
  }

  pan(byMs) {
    this.view.from += byMs;
    this.view.to += byMs;
    this.draw();
  }

  /** Zoom by `factor` (below 1: in) around `x` px (the middle when not given). */
  zoom(factor, x = null) {
    const width = this.view.to - this.view.from;
    const at = this.view.from + ((x ?? this.canvas.clientWidth / 2) / this.canvas.clientWidth) * width;
    const next = Math.max(width * factor, 0.01);
    this.view.from = at - (at - this.view.from) * (next / width);
    this.view.to = this.view.from + next;
    this.draw();
  }

  fit() {
    this.view.from = 0;
    this.view.to = Math.max(this.answer?.span_ms ?? 1, 1);
    this.draw();
  }

  /** Make lane `index` the current one (marked, in sight, its item the list's one in the tab order); `focus`:
   *  move the focus to its item. */
  selectLane(index, focus = false) {
    if (!this.lanes.length) return;
    const lane = Math.max(0, Math.min(index, this.lanes.length - 1));
    const item = (at) => this.list.querySelector(`button[data-lane="${at}"]`);
    item(this.view.lane)?.setAttribute("tabindex", "-1");
    item(lane)?.setAttribute("tabindex", "0");
    this.view.lane = lane;
    if (lane < this.view.top) this.view.top = lane;
    if (lane >= this.view.top + this.lanesInSight()) this.view.top = this.clampTop(lane - this.lanesInSight() + 1);
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
    this.draw();
  }

  /** The lane and its call (or failure) at a point of the canvas. */
  hit(x, y) {
    const index = this.view.top + Math.floor((y - AXIS_HEIGHT) / LANE_HEIGHT);
    const lane = y >= AXIS_HEIGHT ? this.lanes[index] : undefined;
    if (!lane) return null;
    const perPx = (this.view.to - this.view.from) / this.canvas.clientWidth;
    const at = this.view.from + x * perPx;
    const call = lane.calls.find((c) => c.start_ms - 2 * perPx <= at && at <= c.end_ms + 2 * perPx) || null;
    const failure = call ? null : lane.failures.find((f) => Math.abs(f.at_ms - at) <= 4 * perPx) || null;
    return {index, lane, call, failure};
  }

  hover(x, y) {
    const found = this.hit(x, y);
    if (!found) {
      this.canvas.title = "";
      return;
    }
    const {lane, call, failure} = found;
    const what = call
      ? `call ${call.node_id} · ${duration(call.start_ms)} → ${duration(call.end_ms)}`
        + ` · finish ${call.finish_reason ?? "-"} · ${call.tokens ?? "-"} completion tokens`
      : failure ? `failed call at ${duration(failure.at_ms)} · status ${failure.status ?? "-"} · ${failure.message}`
        : "";
    this.canvas.title = [`group ${lane.group_key ?? "-"}`, laneText(lane, this.answer.critical), what]
      .filter(Boolean).join("\n");
  }

  click(x, y) {
    const found = this.hit(x, y);
    if (found) this.openLane(found.index, found.call);
  }

  /** Open lane `index`'s rollout in the drawer on its Timeline tab, at `call` (else its first call). */
  openLane(index, call) {
    const lane = this.lanes[index];
    if (!lane) return;
    const at = call || lane.calls[0];
    this.go({traj: lane.trajectory_id, tab: "timeline", node: at?.node_id || ""});
  }

  /** Draw at the next frame (many moves in one frame draw once). */
  draw() {
    if (this.frame || !this.canvas) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      this.paint();
    });
  }

  paint() {
    const canvas = this.canvas;
    if (!canvas.isConnected) return;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const height = Math.min(AXIS_HEIGHT + Math.max(this.lanes.length, 1) * LANE_HEIGHT, MOST_HEIGHT);
    canvas.style.height = `${height}px`;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const c = canvas.getContext("2d");
    c.setTransform(ratio, 0, 0, ratio, 0, 0);
    c.clearRect(0, 0, width, height);
    const colour = palette(canvas);
    const {from, to, top} = this.view;
    const scale = width / (to - from);
    const x = (ms) => (ms - from) * scale;
    c.font = "11px system-ui, sans-serif";
    c.textBaseline = "middle";
    const step = tickStep(1 / scale);
    c.fillStyle = colour.muted;
    c.strokeStyle = colour.line;
    c.lineWidth = 1;
    for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
      c.fillRect(Math.round(x(t)), AXIS_HEIGHT - 5, 1, 5);
      c.fillText(duration(t), Math.round(x(t)) + 3, AXIS_HEIGHT / 2);
    }
    const last = Math.min(this.lanes.length, top + Math.ceil((height - AXIS_HEIGHT) / LANE_HEIGHT));
    for (let i = top; i < last; i += 1) this.paintLane(c, this.lanes[i], AXIS_HEIGHT + (i - top) * LANE_HEIGHT,
      i === this.view.lane, colour, x, width);
    canvas.dataset.from = String(from);
    canvas.dataset.to = String(to);
    canvas.dataset.top = String(top);
  }

  paintLane(c, lane, y, current, colour, x, width) {
    if (lane.superseded || lane.trained === false) {
      c.fillStyle = lane.superseded ? colour.superseded : colour.untrained;
      c.fillRect(0, y, width, LANE_HEIGHT);
    }
    if (lane.start_ms !== null && lane.end_ms !== null) {
      c.fillStyle = colour.env;
      c.fillRect(x(lane.start_ms), y + LANE_HEIGHT / 2 - 1, Math.max(x(lane.end_ms) - x(lane.start_ms), 1), 2);
    }
    for (const call of lane.calls) {
      const left = x(call.start_ms);
      const right = x(call.end_ms);
      if (right < 0 || left > width) continue;
      c.fillStyle = colour[ending(call)];
      c.fillRect(left, y + 2, Math.max(right - left, 1.5), LANE_HEIGHT - 4);
    }
    c.fillStyle = colour.failed;
    for (const failure of lane.failures) {
      const at = x(failure.at_ms);
      if (at < -4 || at > width + 4) continue;
      c.beginPath();
      c.moveTo(at, y + 1);
      c.lineTo(at + 4, y + LANE_HEIGHT - 1);
      c.lineTo(at - 4, y + LANE_HEIGHT - 1);
      c.fill();
    }
    if (lane.trajectory_id === this.answer.critical) {
      c.fillStyle = colour.critical;
      c.fillRect(0, y, 3, LANE_HEIGHT);
    }
    if (current) {
      c.strokeStyle = colour.selected;
      c.strokeRect(0.5, y + 0.5, width - 1, LANE_HEIGHT - 1);
    }
  }
}
