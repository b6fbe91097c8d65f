// The step timeline's drawing: a lane per rollout on a canvas (thousands of lanes, tens of calls each), only
// the lanes in sight, under a time axis. A lane's calls are bars coloured by how they ended, its failures
// marked, the rollout's time outside its calls a thin line under them (the environment's and tools' time),
// superseded and untrained attempts shaded, the rollout that ended last marked. What is at a point of it (a
// lane, its call or failure) on hover and click; zoom and pan with the wheel, a drag or the keys. It draws
// the lanes it is handed (the server's positions, ms from the step's `origin_at`) and fetches nothing:
// where a millisecond falls on the screen is all it computes.

import {el} from "./dom.js";
import {plural} from "./format.js";
import {duration} from "./tab-timeline.js";

const LANE_HEIGHT = 14;
const AXIS_HEIGHT = 22;
const MOST_HEIGHT = 560;  // px of lanes in sight at once; the rest scroll

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
export function laneText(lane, critical) {
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

/** One lane at `y`: its shading, the rollout's span, its calls and failures, the critical and current marks. */
function paintLane(c, lane, y, {current, critical, colour, x, width}) {
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
  if (lane.trajectory_id === critical) {
    c.fillStyle = colour.critical;
    c.fillRect(0, y, 3, LANE_HEIGHT);
  }
  if (current) {
    c.strokeStyle = colour.selected;
    c.strokeRect(0.5, y + 0.5, width - 1, LANE_HEIGHT - 1);
  }
}

export class StepCanvas {
  /** `onSelect(index)` makes a lane the current one, `onOpen(index, call)` opens its rollout. */
  constructor({onSelect, onOpen}) {
    this.onSelect = onSelect;
    this.onOpen = onOpen;
    this.lanes = [];
    this.answer = null;
    this.view = {from: 0, to: 1, top: 0, lane: 0};
    this.frame = null;
    this.canvas = null;
  }

  /** Draw `lanes` of `answer` from now on (the array grows as parts come); `keepPlace`: a poll's redraw keeps
   *  the zoom, the pan and the current lane. */
  hold(answer, lanes, keepPlace) {
    this.answer = answer;
    this.lanes = lanes;
    if (!keepPlace) this.view = {from: 0, to: Math.max(answer.span_ms, 1), top: 0, lane: 0};
  }

  /** A new canvas for the answer held, redrawn when `sized` changes size. */
  build(sized) {
    const answer = this.answer;
    this.canvas = el("canvas", {className: "st-canvas", tabindex: "0", role: "img",
      "aria-label": `step ${answer.step}: ${plural(answer.lanes_total, "lane")} on one time axis; `
        + "the list beside it names each lane"});
    this.wire(sized);
    return this.canvas;
  }

  wire(sized) {
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
    this.resize.observe(sized);
  }

  onKey(event) {
    const width = this.view.to - this.view.from;
    const moves = {
      ArrowLeft: () => this.pan(-width / 10), ArrowRight: () => this.pan(width / 10),
      ArrowUp: () => this.onSelect(this.view.lane - 1),
      ArrowDown: () => this.onSelect(this.view.lane + 1),
      "+": () => this.zoom(0.5), "=": () => this.zoom(0.5), "-": () => this.zoom(2), 0: () => this.fit(),
      Enter: () => this.onOpen(this.view.lane, null),
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

  /** Make lane `lane` the current one: marked, and in sight. */
  current(lane) {
    this.view.lane = lane;
    if (lane < this.view.top) this.view.top = lane;
    if (lane >= this.view.top + this.lanesInSight()) this.view.top = this.clampTop(lane - this.lanesInSight() + 1);
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
    if (found) this.onOpen(found.index, found.call);
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
    for (let i = top; i < last; i += 1) {
      paintLane(c, this.lanes[i], AXIS_HEIGHT + (i - top) * LANE_HEIGHT,
        {current: i === this.view.lane, critical: this.answer.critical, colour, x, width});
    }
    canvas.dataset.from = String(from);
    canvas.dataset.to = String(to);
    canvas.dataset.top = String(top);
  }
}
