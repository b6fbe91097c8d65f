// The drawer's train-once line (Tree and Forks tabs): skycap trains each sampled node on exactly
// one path; this states whether that holds here.

import {el} from "./dom.js";

export function trainOnce(check) {
  if (!check) return el("p", {className: "muted"}, "Train-once check unavailable.");
  if (!check.holds) {
    const detail = (check.violations || []).map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join("; ");
    return el("p", {className: "notice error train-once"},
      `Train-once violated: ${detail || "a sampled node is trained on more than one path"}.`);
  }
  if ((check.untrained || []).length) {
    return el("p", {className: "notice warn train-once"}, `Train-once holds, but ${check.untrained.join(", ")}`
      + ` ${check.untrained.length === 1 ? "is" : "are"} trained in no path.`);
  }
  return el("p", {className: "notice ok train-once"},
    `Train-once holds: each of the ${check.model_nodes} model nodes is in the loss`
      + ` on exactly one of the ${check.paths} paths.`);
}
