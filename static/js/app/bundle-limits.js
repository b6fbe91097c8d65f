// What a static bundle cannot answer, disabled with a line saying why, not broken: its listings hold
// only the rollouts its filters kept when it was written (`skycap-viewer bundle`), so filtering again,
// exporting and comparing with a rollout outside them need the viewer's server. From the server,
// everything here is as it was.

import {bundleFacts} from "./api.js";
import {el} from "../draw/dom.js";
import {plural} from "../draw/format.js";

const CONTROLS = "button, input, select";
export const NEEDS_SERVER = "needs the viewer's server: this page reads a static bundle";

/** The bundle's filters as written, `step=37 status=truncated`. */
function bundleFilters(facts) {
  return Object.entries(facts.filters || {}).flatMap(([name, values]) => values.map((value) => `${name}=${value}`))
    .join(" ") || "no filter";
}

/** The line above a run in a bundle: what it holds and what it cannot do; null from the server. */
export function bundleNotice() {
  const facts = bundleFacts();
  if (!facts) return null;
  const left = facts.left_out || [];
  return el("p", {className: "notice info bundle-notice"},
    `A static bundle of ${plural(facts.rollouts, "rollout")}, kept by ${bundleFilters(facts)} when it was written: `
    + "their listings in every sort, their groups and their drawers. Filtering again, searching other rollouts, "
    + `exporting and comparing ${NEEDS_SERVER}.`,
    left.length ? ` ${plural(left.length, "rollout")} of them ${left.length === 1 ? "is" : "are"} listed without `
      + `a drawer: ${left.map((item) => `${item.id} (${item.why})`).join(", ")}.` : "");
}

/** `node` with every control in it disabled in a bundle, each saying why (`what` needs the server), but
 *  those matching `keep` (what lets go of a filter: back to what the bundle answers). */
export function unanswerable(node, what, keep = null) {
  if (!bundleFacts() || !node) return node;
  const controls = node.matches(CONTROLS) ? [node] : node.querySelectorAll(CONTROLS);
  for (const control of controls) {
    if (keep && control.matches(keep)) continue;
    control.disabled = true;
    control.title = `${what} ${NEEDS_SERVER}`;
  }
  return node;
}
