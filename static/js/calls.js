// The Calls tab: every model call and every failure of the rollout, in time order.

import {el} from "./dom.js";
import {num} from "./format.js";

export function renderCalls(bundle) {
  const rows = bundle.exchanges?.data || [];
  if (!rows.length) return el("p", {className: "notice"}, "No model calls were captured.");
  const failures = rows.filter((row) => row.kind === "failure").length;
  return el("div", {className: "calls-tab"},
    el("p", {className: "muted"}, `${num(rows.length - failures)} calls, ${num(failures)} failures`),
    el("table", {className: "rows calls"},
      el("thead", {}, el("tr", {}, ["seq", "kind", "node", "model", "dur ms", "prompt", "completion", "finish", "bridged", "flags"]
        .map((label) => el("th", {scope: "col"}, label)))),
      el("tbody", {}, rows.map(callRow))));
}

function callRow(row) {
  if (row.kind === "failure") {
    return el("tr", {className: "failure"},
      el("td", {className: "num"}, num(row.sequence)), el("td", {}, "failure"), el("td", {}, row.node_id ?? "-"),
      el("td", {colSpan: 6}, row.started_at ?? ""),
      el("td", {}, el("span", {className: "badge level-error", title: row.error ?? ""},
        `failed ${row.http_status ?? "-"}: ${String(row.error ?? "").slice(0, 160)}`)));
  }
  const usage = row.usage || {};
  const flags = [];
  if (row.bridged === false) flags.push(el("span", {className: "badge level-warn"}, "unbridged: prompt re-rendered"));
  if (row.bridged === "absent") flags.push(el("span", {className: "badge level-info"}, "bridged unknown"));
  if (row.completion_reason === "length") flags.push(el("span", {className: "badge level-warn"}, "truncated"));
  const model = String(row.model ?? "-");
  return el("tr", {className: "call", title: `sampling ${JSON.stringify(row.sampling || {})}`},
    el("td", {className: "num"}, num(row.sequence)),
    el("td", {}, "call"),
    el("td", {className: "node-id"}, row.node_id ?? "-"),
    el("td", {title: model}, model.length > 32 ? `…${model.slice(-31)}` : model),
    el("td", {className: "num"}, num(row.duration_ms === null || row.duration_ms === undefined ? null : Math.round(row.duration_ms))),
    el("td", {className: "num"}, num(usage.prompt_tokens)),
    el("td", {className: "num"}, num(usage.completion_tokens)),
    el("td", {}, row.completion_reason ?? "-"),
    el("td", {className: row.bridged === false ? "bad" : ""}, String(row.bridged)),
    el("td", {className: "flags"}, flags));
}
