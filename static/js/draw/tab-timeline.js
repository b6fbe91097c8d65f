// The Timeline tab: where the rollout's time went. Every call is a bar from its start to its end,
// every failure a mark at its time, one lane per root (a subagent, a new tool set or model runs
// beside the main conversation), overlapping calls on sub-lanes, and the idle spans where no call
// ran on a row of their own. Lanes, sub-lanes, positions (ms since the first drawn item) and idle
// spans are the server's /timeline; this only draws them. Clicking a bar selects its node.

import {append, button, el} from "./dom.js";
import {num, plural} from "./format.js";
import {moreRow} from "./parts.js";

/** A length of time for a label: ms under a second, else seconds, else minutes and seconds. */
export function duration(ms) {
  if (ms === null || ms === undefined) return "-";
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Place `node` from `fromMs` to `toMs` on a track `spanMs` long (the stylesheet keeps it visible when short). */
function place(node, fromMs, toMs, spanMs) {
  node.style.left = `${(100 * fromMs) / spanMs}%`;
  node.style.width = `${(100 * Math.max(toMs - fromMs, 0)) / spanMs}%`;
  return node;
}

/** What a bar says on hover: the call's facts as the record has them. */
function itemTitle(item) {
  const where = `${item.node_id ?? "no node"} · started ${item.started_at ?? "-"}`;
  if (item.kind === "failure") {
    return `failed call · status ${item.http_status ?? "-"} · ${where}\n${String(item.error ?? "").slice(0, 300)}`;
  }
  return `${item.node_id} · ${item.model ?? "-"} · finish ${item.finish_reason ?? "-"}`
    + ` · bridged ${String(item.bridged)} · ${duration(item.duration_ms)} · started ${item.started_at ?? "-"}`;
}

function bar(item, span, selected, select) {
  const failure = item.kind === "failure";
  const title = itemTitle(item);
  const node = el("button", {type: "button", title, "aria-label": title,
    className: `tl-bar ${failure ? "failure" : "call"}${item.bridged === false ? " unbridged" : ""}`
      + `${item.finish_reason === "length" ? " truncated" : ""}`,
    "aria-pressed": item.node_id && item.node_id === selected ? "true" : "false",
    dataset: {sequence: item.sequence, ...(item.node_id ? {node: item.node_id} : {})},
    onclick: () => { if (item.node_id) select(item.node_id, item.path); }},
  failure ? "✕" : duration(item.duration_ms));
  node.style.setProperty("--sub", String(item.sub_lane));
  if (failure) {
    node.style.left = `${(100 * item.start_ms) / span}%`;
    return node;
  }
  return place(node, item.start_ms, item.end_ms, span);
}

function gap(item, span) {
  const text = `idle ${duration(item.idle_ms)}`;
  const title = `${text}: no call ran (derived by the viewer)`;
  return place(el("span", {className: "tl-gap", title, dataset: {sequence: item.sequence}}, text),
    item.idle_from_ms, item.start_ms, span);
}

function laneLabel(lane) {
  const what = lane.root_node_id ? `root ${lane.root_node_id}` : "no node";
  const counts = [lane.call_count ? plural(lane.call_count, "call") : null,
    lane.failure_count ? plural(lane.failure_count, "failure") : null].filter(Boolean).join(", ");
  return el("div", {className: "tl-label", title: lane.root_node_id
    ? `the calls under root ${lane.root_node_id}` : "failed calls that name no node (format: input_leaf is null)"},
  el("span", {}, what), el("span", {className: "muted small"}, counts));
}

/** The items without a time the record gives, listed instead of drawn. */
function noTimeList(items, select) {
  if (!items.length) return null;
  return el("div", {className: "tl-no-time"},
    el("h3", {className: "small"}, `no time: ${plural(items.length, "item")} the record gives no valid time for`),
    el("ul", {}, items.map((item) => el("li", {dataset: {sequence: item.sequence}},
      `#${num(item.sequence)} ${item.kind} ${item.node_id ?? "(no node)"}: ${item.no_time}`,
      item.node_id ? [" ", button("select", () => select(item.node_id, item.path),
        {className: "ghost small", dataset: {node: item.node_id}})] : null))));
}

/** The selected node and where else it shows: the Path (its path) and the Tree. */
function selection(state, go) {
  if (!state.node) {
    return el("p", {className: "muted small tl-selection"}, "Click a bar to select its reply node in Path and Tree.");
  }
  return el("p", {className: "small tl-selection"}, `selected ${state.node} · `,
    button(`show in Path ${state.path}`, () => go({tab: "path"}, {replace: true}),
      {className: "ghost", dataset: {show: "path"}}), " ",
    button("show in Tree", () => go({tab: "tree"}, {replace: true}), {className: "ghost", dataset: {show: "tree"}}));
}

/** The rollout's timeline as far as its /timeline parts have come (`more` fetches the next one). */
export function renderTimeline(bundle, state, {go, select, more}) {
  const timeline = bundle.timeline;
  if (!timeline) return el("p", {className: "muted"}, "loading the timeline…");
  if (timeline.error) return el("p", {className: "notice error"}, `Cannot load the timeline: ${timeline.error}`);
  const items = timeline.data || [];
  if (!items.length) return el("p", {className: "notice"}, "No model calls were captured.");
  const span = timeline.span_ms || 1;  // every drawn item at one instant: draw them at the start
  const drawn = items.filter((item) => item.no_time === null);
  const box = el("div", {className: "timeline-tab"});
  box.append(el("p", {className: "muted"},
    `${plural(timeline.call_count, "call")}, ${plural(timeline.failure_count, "failure")}`,
    ` · span ${duration(timeline.span_ms)} from ${timeline.origin_at ?? "-"}`,
    ` · idle ${duration(timeline.idle_ms)} in ${plural(timeline.gap_count, "gap")} (derived by the viewer)`,
    timeline.no_time_count ? ` · ${num(timeline.no_time_count)} without time` : ""));
  box.append(selection(state, go), el("p", {className: "muted small tl-legend"},
    "a bar is a call (red: unbridged, amber edge: cut at max tokens) · ✕ a failed call"
      + " · dashed: idle, no call running"));
  const lanes = timeline.lanes || [];
  const tracks = lanes.map((lane) => {
    const track = el("div", {className: "tl-track"});
    track.style.setProperty("--sub-lanes", String(Math.max(lane.sub_lanes, 1)));
    return track;
  });
  const idle = el("div", {className: "tl-track tl-idle-track"});
  for (const item of drawn) {
    tracks[item.lane]?.append(bar(item, span, state.node, select));
    if (item.idle_ms !== null) idle.append(gap(item, span));
  }
  box.append(el("div", {className: "timeline", role: "group", "aria-label": "calls in time"},
    el("div", {className: "tl-lane tl-axis"}, el("div", {className: "tl-label muted small"}, "from the start"),
      el("div", {className: "tl-ticks muted small"}, el("span", {}, "0"), el("span", {}, duration(timeline.span_ms)))),
    el("div", {className: "tl-lane tl-idle", dataset: {lane: "idle"}},
      el("div", {className: "tl-label muted small"}, "idle"), idle),
    lanes.map((lane, i) => el("div", {className: "tl-lane", dataset: {lane: lane.lane}}, laneLabel(lane), tracks[i]))));
  const hidden = timeline.lane_count - lanes.length;
  return append(box, [
    hidden > 0
      ? el("p", {className: "notice warn"},
        `${num(hidden)} more lanes are not drawn: their calls are in the Calls tab.`)
      : null,
    moreRow(timeline.part, "calls", more, {watched: false}),  // no row when all is here
    noTimeList(items.filter((item) => item.no_time !== null), select)]);
}
