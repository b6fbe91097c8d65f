// Picking two rollouts to compare: `a` / `b` (keys, or the drawer's buttons) pick a rollout as A
// or B, kept in the URL (ca, cb and their runs cra, crb) while the reader moves about; the compare
// bar says what is picked and opens the pair view once both are.

import {button, el} from "./dom.js";
import {shortId} from "./format.js";
import {clearedPicks} from "./route.js";

/** The state patch that picks rollout `id` of `run` as side "a" or "b". */
export function pickPatch(side, id, run) {
  return {[`c${side}`]: id, [`cr${side}`]: run};
}

/** The state patch that opens the pair view of `a` (in `run`) and `b` (in `runB`). The picks are
 *  cleared: the pair's URL holds the pair alone, and going back finds them where they were. */
export function pairPatch(run, a, b, runB = run) {
  return {...clearedPicks(), view: "compare", run, a, b, rb: runB === run ? "" : runB, pa: 0, pb: 0, traj: null,
    lu: "", la: ""};
}

/** The pair view of what is picked, or null until both A and B are. */
export function pickedPair(state) {
  if (!state.ca || !state.cb) return null;
  const runA = state.cra || state.run;
  return pairPatch(runA, state.ca, state.cb, state.crb || runA);
}

function picked(side, id, run, state) {
  if (!id) return el("span", {className: "muted"}, `${side}: press ${side.toLowerCase()} on a row`);
  return el("span", {className: `picked picked-${side.toLowerCase()}`, title: `${id} in run ${run}`},
    `${side}: `, el("code", {}, shortId(id)),
    run && run !== state.run ? el("span", {className: "muted"}, ` (${run})`) : null);
}

/** "A: <id> · B: <id> [compare] [clear]" while anything is picked, else null. */
export function pickBar(state, go) {
  if (!state.ca && !state.cb) return null;
  const pair = pickedPair(state);
  return el("div", {className: "pick-bar", role: "status"},
    picked("A", state.ca, state.cra, state), " · ", picked("B", state.cb, state.crb, state),
    button("compare  c", () => go(pair), {className: "compare-picked", disabled: !pair,
      title: pair ? "open A and B side by side (c)" : "pick both A and B first"}),
    button("clear", () => go(clearedPicks(), {replace: true}), {className: "ghost", dataset: {link: "clear-picks"}}));
}

/** The drawer's "pick as A" / "pick as B" buttons for rollout `id` of `run`. */
export function pickButtons(id, run, go) {
  return ["a", "b"].map((side) => button(`pick as ${side.toUpperCase()}`,
    () => go(pickPatch(side, id, run), {replace: true}),
    {className: "ghost", dataset: {pick: side},
      title: `pick this rollout as ${side.toUpperCase()} to compare (${side})`}));
}

/** Mark the rows of the rollouts picked as A and B (in the run shown) with their letter. */
export function markPicks(root, state) {
  for (const side of ["a", "b"]) {
    const id = state[`c${side}`] && (state[`cr${side}`] || state.run) === state.run ? state[`c${side}`] : null;
    for (const row of root.querySelectorAll(`tr.pick-${side}`)) {
      if (row.dataset.traj !== id) row.classList.remove(`pick-${side}`);
    }
    if (id) {
      for (const row of root.querySelectorAll(`tr.nav[data-traj="${CSS.escape(id)}"]`)) {
        row.classList.add(`pick-${side}`);
      }
    }
  }
}
