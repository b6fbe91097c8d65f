// The run page's health band: one chip per flag with its count over the filtered run. Clicking a
// chip filters to it; clicking the active chip clears the filter.

import {el} from "./dom.js";
import {num} from "./format.js";
import {flagInfo} from "./viewer.js";

export function band(health, activeFlag, onToggle) {
  const node = el("div", {className: "band", role: "toolbar", "aria-label": "record health"});
  if (!health) return node;
  const counts = (health.counts || []).filter(([, count]) => count > 0)
    .sort((a, b) => flagInfo(a[0]).order - flagInfo(b[0]).order);
  const unit = health.unit || "rollouts";
  for (const [flag, count] of counts) {
    const info = flagInfo(flag);
    const active = flag === activeFlag;
    node.append(el("button", {
      type: "button", className: `chip level-${info.level}${active ? " active" : ""}`,
      title: `${info.why}. ${active ? "Click to show every row again." : "Click to show only these."}`,
      "aria-pressed": active ? "true" : "false", dataset: {flag},
      onclick: () => onToggle(active ? "" : flag),
    }, el("span", {className: "bead"}), el("span", {className: "chip-count"}, num(count)), ` ${flag}`));
  }
  if (activeFlag && !counts.some(([flag]) => flag === activeFlag)) {
    node.append(el("button", {type: "button", className: "chip active", dataset: {flag: activeFlag},
      title: "Click to show every row again.", onclick: () => onToggle("")}, `0 ${activeFlag}`));
  }
  const scanned = health.scanned ?? health.total;
  if (health.total !== undefined && scanned < health.total) {
    node.append(el("span", {className: "muted small"}, `scanning ${num(scanned)}/${num(health.total)}`));
  } else if (!counts.length) {
    node.append(el("span", {className: "muted small"}, `${num(scanned ?? 0)} of ${num(health.total ?? 0)} ${unit} scanned, nothing flagged.`));
  }
  return node;
}
