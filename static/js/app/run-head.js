// The run page's header: the run switch, the run's facts (counts, steps, tokenizer, its store or
// directory, the run index, verification still going) with the re-tokenized copies' chip, and the
// Groups / Rollouts / Timeline toggle. Drawn from the /runs entry; nothing here is fetched.

import {bundleNotice, unanswerable} from "./bundle-limits.js";
import {el, replace, select} from "../draw/dom.js";
import {num, plural} from "../draw/format.js";
import {emptyState} from "../draw/route.js";
import {runIndexFact} from "./run-missing.js";
import {flagInfo} from "../draw/viewer.js";

/** "82 groups of 4", or "82 groups of 2–5 rollouts, most of 4" when their sizes vary (the server's). */
function groupsFact(run) {
  const groups = plural(run.group_count ?? 0, "group");
  const [least, most] = run.group_sizes || [];
  if (least !== undefined && least !== null && least !== most) {
    return `${groups} of ${least}–${most} rollouts${run.modal_group_size ? `, most of ${run.modal_group_size}` : ""}`;
  }
  return `${groups}${run.modal_group_size ? ` of ${run.modal_group_size}` : ""}`;
}

/** "sidecars verified 12/30" while the server has not yet read every record's sidecars (its
 *  flags may still grow), else null. */
function verifying(run) {
  const done = run.sidecars_verified;
  const total = run.trajectory_count;
  if (done === undefined || done === null || total === undefined || done >= total) return null;
  return `sidecars verified ${num(done)}/${num(total)}`;
}

/** "3 re-tokenized copies in 2 rollouts" (the index's count, `/v1/runs` `retokenized`) as a chip that
 *  requires (or lets go of) the `re-tokenized` flag, as the band's chip does; null for a run without one. */
function copiesChip(run, required, go) {
  const counted = run.retokenized;
  if (!counted?.copies) return null;
  const on = required.includes("re-tokenized");
  return el("button", {type: "button",
    className: `chip level-${flagInfo("re-tokenized").level} retok-chip${on ? " active required" : ""}`,
    dataset: {flag: "re-tokenized"}, "aria-pressed": on ? "true" : "false",
    title: `${flagInfo("re-tokenized").why}. Click to ${on ? "let go of the filter" : "list those rollouts"}.`,
    onclick: () => go({flag: on ? required.filter((name) => name !== "re-tokenized") : [...required, "re-tokenized"],
      page: 1})},
  `${plural(counted.copies, "re-tokenized copy", "re-tokenized copies")} in ${plural(counted.rollouts, "rollout")}`);
}

/** Draw the header of `state.run` into `box`: `entry` is its /runs entry (null: no such run, yet), `runs()`
 *  every run, for the switch. */
export function drawRunHead(box, entry, state, {runs, go}) {
  const run = entry || {id: state.run};
  const steps = run.steps || [];
  const facts = [
    run.indexing
      ? `indexing ${num(run.indexed ?? 0)}/${num(run.trajectory_count ?? 0)}…`
      : plural(run.trajectory_count ?? 0, "trajectory", "trajectories"),
    run.groupable ? groupsFact(run) : null,
    run.task_count ? plural(run.task_count, "task") : null,
    steps.length ? (steps.length > 1 ? `steps ${steps[0]}..${steps[steps.length - 1]}` : `step ${steps[0]}`) : null,
    run.created_at ? String(run.created_at).replace("T", " ").slice(0, 19) : null,
    run.upstream?.model ? `tokenizer ${run.upstream.model}` : null,  // the original viewer's field name
    run.unreadable ? `${run.unreadable} unreadable` : null,
    runIndexFact(run),
    verifying(run),
  ].filter(Boolean);
  replace(box,
    el("h1", {}, run.id, run.project ? el("span", {className: "project muted"}, ` · ${run.project}`) : null),
    el("p", {className: "facts"}, facts.join(" · "),
      unanswerable(copiesChip(run, state.flag, go), "listing them", ".active")),
    run.source ? el("p", {className: "path muted small", title: `a local copy of the store, at ${run.path}`},
      `read from ${run.source.url}`) : run.path ? el("p", {className: "path muted small", title: "record directory"},
      run.path) : null,
    run.source?.problem ? el("p", {className: "notice warn source-problem"},
      `The store could not be read the last time: ${run.source.problem}. The rows shown are the copy fetched `
      + "before; the viewer keeps trying.") : null);
  if (!entry) box.append(el("p", {className: "notice warn"}, `No run named ${state.run} (yet).`));
  const notice = bundleNotice();
  if (notice) box.append(notice);
  box.prepend(select(runs().map((r) => [r.id, `${r.project ? `${r.project} / ` : ""}${r.id}`]), run.id,
    (id) => go({...emptyState(), run: id}), {className: "run-switch", "aria-label": "run"}));
}

/** The Groups / Rollouts / Timeline toggle (the views `run` has), `view` the one shown. */
export function viewToggle(run, view, go) {
  const stepped = run.steps?.length ? ["timeline"] : [];
  const views = run.groupable ? ["groups", "rollouts", ...stepped] : stepped.length ? ["rollouts", ...stepped] : [];
  return views.map((name) => el("button", {
    type: "button", role: "tab", className: `toggle${view === name ? " active" : ""}`, dataset: {view: name},
    "aria-selected": view === name ? "true" : "false",
    onclick: () => view !== name && go({view: name, sort: "", order: "", open: [], flag: [], xflag: [],
      ungrouped: false, page: 1}),
  }, {groups: `groups ${num(run.group_count ?? 0)}`, rollouts: `rollouts ${num(run.trajectory_count ?? 0)}`,
    timeline: "timeline of a step"}[name]));
}
