// The run page's health band: one chip per flag with its count over the filtered run (the server
// counts it before the flags apply, so each count says what requiring that flag would keep).
// Clicking a chip requires its flag (several may be required at once: rows must carry them all);
// shift- or alt-clicking excludes it; clicking a required or excluded chip again lets it go.

import {el} from "./dom.js";
import {num} from "./format.js";
import {flagInfo} from "./viewer.js";

const HOW = "Click to require it, shift-click (or alt-click) to exclude it.";

/** The flags patch after a click on `flag`: `exclude` toggles its exclusion, else its requirement. */
function toggled(flag, required, excluded, exclude) {
  const without = (list) => list.filter((name) => name !== flag);
  if (exclude) {
    return {flag: without(required), xflag: excluded.includes(flag) ? without(excluded) : [...excluded, flag]};
  }
  return {flag: required.includes(flag) ? without(required) : [...required, flag], xflag: without(excluded)};
}

export function band(health, required, excluded, onChange) {
  const node = el("div", {className: "band", role: "toolbar", "aria-label": "record health", title: HOW});
  if (!health) return node;
  const counts = (health.counts || []).filter(([, count]) => count > 0)
    .sort((a, b) => flagInfo(a[0]).order - flagInfo(b[0]).order);
  const unit = health.unit || "rollouts";
  const chip = (flag, count) => {
    const info = flagInfo(flag);
    const state = required.includes(flag) ? "required" : excluded.includes(flag) ? "excluded" : "";
    const now = state === "required" ? "Required: click to let it go." : state === "excluded"
      ? "Excluded: shift-click to let it go, click to require it instead." : HOW;
    return el("button", {
      type: "button", className: `chip level-${info.level}${state ? ` active ${state}` : ""}`,
      title: `${info.why}. ${now}`, "aria-pressed": state === "required" ? "true" : state ? "mixed" : "false",
      dataset: {flag, flagState: state || "off"},
      onclick: (event) => onChange(toggled(flag, required, excluded, event.shiftKey || event.altKey)),
    }, el("span", {className: "bead"}), el("span", {className: "chip-count"}, num(count)),
    state === "excluded" ? ` not ${flag}` : ` ${flag}`);
  };
  for (const [flag, count] of counts) node.append(chip(flag, count));
  for (const flag of [...required, ...excluded]) {
    if (!counts.some(([name]) => name === flag)) node.append(chip(flag, 0));
  }
  const scanned = health.scanned ?? health.total;
  if (health.total !== undefined && scanned < health.total) {
    node.append(el("span", {className: "muted small"}, `scanning ${num(scanned)}/${num(health.total)}`));
  } else if (!counts.length) {
    node.append(el("span", {className: "muted small"},
      `${num(scanned ?? 0)} of ${num(health.total ?? 0)} ${unit} scanned, nothing flagged.`));
  }
  if (counts.length) {
    node.append(el("span", {className: "band-hint muted small"}, "click: require · shift-click: exclude"));
  }
  return node;
}

/** The band's heading: what its chips count (`unit`: groups, else rollouts) and over what (the filters, or
 *  the whole run), with how a chip counts said when asked (its title). */
export function bandTitle(node, unit, state, view) {
  const ungrouped = view === "rollouts" && state.ungrouped;
  const range = state.rmin || state.rmax ? `reward ${state.rmin || "…"} to ${state.rmax || "…"}` : null;
  const scope = [state.step && `step ${state.step}`, state.task && `task ${state.task}`, state.status,
    ...state.ann, state.q && `"${state.q}"`, range, ungrouped && "no group key"].filter(Boolean).join(" · ")
    || "across the run";
  const byGroups = unit === "groups";
  node.textContent = `record health · ${byGroups ? "groups" : "rollouts"}`
    + ` · ${scope}`;
  node.title = byGroups  // how a chip counts: said when asked, not in the title
    ? "A chip counts groups, each once per flag it or a matching rollout carries, and each rollout with no"
      + " group key once per flag."
    : `A chip counts ${ungrouped ? "rollouts with no group key" : "rollouts"}, each once per flag.`;
}
