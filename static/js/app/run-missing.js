// The trainer's run index on the page: what it says of a rollout, and its rows whose record is not in
// this copy (`/trajectories?missing=true`), above the Rollouts table: a notice that says how many, and,
// opened, a greyed table of them, each with why.

import {get} from "./api.js";
import {el, replace} from "../draw/dom.js";
import {fitId, num, plural} from "../draw/format.js";
import {emptyState, format} from "../draw/route.js";

const LIMIT = 100;

/** "run index: steps 2..3 · 20 rows · 8 without a record here", or null for a run without one. */
export function runIndexFact(run) {
  const index = run?.run_index;
  if (!index) return null;
  const steps = index.steps || [];
  const span = steps.length > 1 ? `steps ${steps[0]}..${steps[steps.length - 1]}`
    : steps.length ? `step ${steps[0]}` : "no step";
  const damaged = index.damaged?.length ? ` · ${plural(index.damaged.length, "damaged file")} ignored` : "";
  return `run index: ${span} · ${plural(index.rows, "row")}`
    + ` · ${num(index.rows_without_record)} without a record here${damaged}`;
}

export class MissingRows {
  constructor() {
    this.open = false;
    this.key = null;
    this.body = null;
    this.node = el("div", {className: "missing-rows"});
  }

  /** Draw for `run` and its step filter: the notice, and the rows when open. */
  show(run, step) {
    this.run = run;
    this.step = step;
    const count = run?.run_index?.rows_without_record || 0;
    if (!count) {
      this.node.replaceChildren();
      return this.node;
    }
    const key = JSON.stringify([run.id, step, count, run.run_index.rows]);
    if (this.open && key !== this.key) this.fetch(run.id, step, key);
    this.draw(count);
    return this.node;
  }

  async fetch(runId, step, key) {
    this.key = key;
    try {
      this.body = await get("/trajectories", {run_id: runId, missing: "true", step, limit: LIMIT});
    } catch (error) {
      this.body = {error: error.message};
    }
    if (key === this.key) this.draw(this.count);
  }

  draw(count) {
    this.count = count;
    const toggle = el("a", {href: "#", dataset: {link: "missing"}, onclick: (event) => {
      event.preventDefault();
      this.open = !this.open;
      this.key = null;
      this.show(this.run, this.step);
    }}, this.open ? "hide them" : "list them");
    const notice = el("p", {className: "notice muted missing-notice"},
      `${plural(count, "row")} of the run index ${count === 1 ? "has" : "have"} no record in this copy: `, toggle);
    replace(this.node, notice, this.open ? this.table() : null);
  }

  table() {
    const body = this.body;
    if (!body) return el("p", {className: "muted small"}, "loading…");
    if (body.error) return el("p", {className: "notice error"}, `Cannot list them: ${body.error}`);
    const head = el("tr", {},
      ["trajectory", "step", "instance", "rep", "attempt", "status", "trained", "superseded", "why"]
        .map((label) => el("th", {scope: "col"}, label)));
    const rows = body.data.map((row) => el("tr", {className: "missing-row", title: row.why},
      el("td", {className: "id", title: row.id}, fitId(row.id)),
      el("td", {className: "num"}, num(row.step)),
      el("td", {}, row.instance_id ?? "-"),
      el("td", {className: "num"}, num(row.repetition_id)),
      el("td", {className: "num"}, num(row.attempt)),
      el("td", {}, row.status ?? "-"),
      el("td", {}, row.trained === null || row.trained === undefined ? "not said" : String(row.trained)),
      el("td", {}, String(row.superseded)),
      el("td", {className: "why"}, row.why, row.opens_from_mirror
        ? [" ", el("button", {type: "button", className: "from-mirror", dataset: {traj: row.id},
          title: `fetch it from ${row.record.mirror} and open it`,
          onclick: (event) => this.openFromMirror(row.id, event.currentTarget)}, "open from the mirror")] : null)));
    const more = body.has_more
      ? el("p", {className: "muted small"}, `the first ${num(body.data.length)} of ${num(body.total)}`)
      : null;
    return [el("table", {className: "rows missing"}, el("thead", {}, head), el("tbody", {}, rows)), more];
  }

  /** Fetch the row's record from the mirror the run index names, and open it in the run the server
   *  serves its copy as (listed as read from the mirror). */
  async openFromMirror(id, button) {
    button.disabled = true;
    button.textContent = "fetching…";
    try {
      const opened = await get(`/trajectories/${encodeURIComponent(id)}/mirror`, {run_id: this.run.id});
      location.hash = format({...emptyState(), run: opened.run_id, view: "rollouts", traj: opened.id});
    } catch (error) {
      button.replaceWith(el("span", {className: "notice error mirror-error"}, `Cannot open it: ${error.message}`));
    }
  }
}
