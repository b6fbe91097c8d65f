// The runs list on the left: grouped by project, with record counts and indexing progress, and below
// it the record directories discovery skipped (too deep below the directory given: `/v1/runs` skipped).
// Redrawn only when something a reader would see changed.

import {el, replace} from "./dom.js";
import {visible} from "./facts.js";
import {num} from "./format.js";

export class Sidebar {
  constructor(container, filterBox) {
    this.container = container;
    this.filterBox = filterBox;
    this.runs = [];
    this.skipped = [];  // [{path, why}]
    this.current = null;
    this.signature = "";
    filterBox.addEventListener("input", () => this.draw(true));
  }

  update(runs, current) {
    this.runs = runs;
    this.current = current;
    this.draw(false);
  }

  draw(force) {
    const needle = this.filterBox.value.trim().toLowerCase();
    const signature = JSON.stringify([needle, this.current, this.skipped,
      this.runs.map((r) => [r.id, r.project, r.trajectory_count, r.indexing, r.indexed])]);
    if (!force && signature === this.signature) return;
    this.signature = signature;
    this.list(needle);
    if (this.skipped.length) this.container.append(this.skippedNote());
  }

  /** The record directories discovery passed over, each with why: a run the reader expected may be one. */
  skippedNote() {
    return el("div", {className: "notice warn small skipped-dirs"},
      el("p", {}, `${this.skipped.length === 1 ? "A record directory was" : `${num(this.skipped.length)} record`
        + " directories were"} skipped:`),
      el("ul", {}, this.skipped.map((entry) => el("li", {title: entry.why},
        el("code", {}, visible(String(entry.path), false)), ` · ${visible(String(entry.why), false)}`))));
  }

  list(needle) {
    const shown = this.runs.filter((run) => !needle || run.id.toLowerCase().includes(needle)
      || String(run.project || "").toLowerCase().includes(needle));
    if (!this.runs.length) {
      replace(this.container, el("p", {className: "muted small"}, "no runs yet"));
      return;
    }
    if (!shown.length) {
      replace(this.container, el("p", {className: "muted small"}, "no match"));
      return;
    }
    const projects = new Map();
    for (const run of shown) {
      const project = run.project || "(no project)";
      if (!projects.has(project)) projects.set(project, []);
      projects.get(project).push(run);
    }
    replace(this.container, [...projects].map(([project, runs]) => el("section", {className: "project"},
      el("h3", {className: "project-name"}, project),
      el("ul", {}, runs.map((run) => this.item(run))))));
  }

  item(run) {
    const indexing = run.indexing
      ? `${num(run.indexed ?? 0)}/${num(run.trajectory_count ?? 0)}…`
      : num(run.trajectory_count ?? 0);
    return el("li", {},
      el("a", {href: `#/run/${encodeURIComponent(run.id)}`, className: run.id === this.current ? "run current" : "run",
        "aria-current": run.id === this.current ? "page" : null, dataset: {run: run.id},
        title: run.path || run.id},
      el("span", {className: "run-id"}, run.id),
      el("span", {className: `count${run.indexing ? " indexing" : ""}`,
        title: run.indexing ? "indexing: records read so far / files" : "records"}, indexing),
      run.unreadable ? el("span", {className: "count bad", title: "unreadable records"}, `${run.unreadable}✕`) : null));
  }
}
