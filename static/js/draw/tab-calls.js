// The Calls tab: every model call and every failure of the rollout, in time order.

import {el} from "./dom.js";
import {num} from "./format.js";
import {moreRow} from "./parts.js";
import {flagInfo} from "./viewer.js";

/** A call's badge, levelled and explained by the flag it feeds. */
function callBadge(flag, label, detail = "") {
  const info = flagInfo(flag);
  return el("span", {className: `badge level-${info.level}`, title: detail || info.why}, label);
}

/** Every call and failure in time order, as far as its parts have come (`more` fetches the next). */
export function renderCalls(bundle, more) {
  const exchanges = bundle.exchanges || {};
  const rows = exchanges.data || [];
  if (!rows.length) return el("p", {className: "notice"}, "No model calls were captured.");
  return el("div", {className: "calls-tab"},
    el("p", {className: "muted"}, `${num(exchanges.call_count)} calls, ${num(exchanges.failure_count)} failures`),
    el("table", {className: "rows calls"},
      el("thead", {}, el("tr", {},
        ["seq", "kind", "node", "model", "dur ms", "prompt", "completion", "finish", "bridged", "flags"]
          .map((label) => el("th", {scope: "col"}, label)))),
      el("tbody", {}, rows.map(callRow))),
    moreRow(exchanges.part, "calls", () => more("exchanges")));
}

function callRow(row) {
  if (row.kind === "failure") {
    return el("tr", {className: "failure"},
      el("td", {className: "num"}, num(row.sequence)), el("td", {}, "failure"), el("td", {}, row.node_id ?? "-"),
      el("td", {colSpan: 6}, row.started_at ?? ""),
      el("td", {}, callBadge("failed-calls",
        `failed ${row.http_status ?? "-"}: ${String(row.error ?? "").slice(0, 160)}`, String(row.error ?? ""))));
  }
  const usage = row.usage || {};
  const flags = [];
  if (row.bridged === false) flags.push(callBadge("unbridged", "unbridged: prompt re-rendered"));
  if (row.bridged === "absent") flags.push(callBadge("bridged-unknown", "bridged unknown"));
  if (row.completion_reason === "length") flags.push(callBadge("truncated", "truncated"));
  const model = String(row.model ?? "-");
  return el("tr", {className: "call", title: `sampling ${JSON.stringify(row.sampling || {})}`},
    el("td", {className: "num"}, num(row.sequence)),
    el("td", {}, "call"),
    el("td", {className: "node-id"}, row.node_id ?? "-"),
    el("td", {title: model}, model.length > 32 ? `…${model.slice(-31)}` : model),
    el("td", {className: "num"},
      num(row.duration_ms === null || row.duration_ms === undefined ? null : Math.round(row.duration_ms))),
    el("td", {className: "num"}, num(usage.prompt_tokens)),
    el("td", {className: "num"}, num(usage.completion_tokens)),
    el("td", {}, row.completion_reason ?? "-"),
    el("td", {className: row.bridged === false ? "bad" : ""}, String(row.bridged)),
    el("td", {className: "flags"}, flags));
}
