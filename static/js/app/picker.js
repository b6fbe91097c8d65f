// The task and annotation picker: typing searches the run's task ids and annotation values on the
// server (/v1/values: a bounded list, each value with its record count) and choosing one filters by
// it, so a run of thousands of tasks offers a short searchable list, never a select of every task.

import {get} from "./api.js";
import {el, replace} from "../draw/dom.js";
import {num} from "../draw/format.js";

const PAUSE_MS = 200;

export class Picker {
  /** `onPick({task})` or `onPick({ann: "key=value"})` when a value is chosen. */
  constructor(onPick) {
    this.onPick = onPick;
    this.runId = null;
    this.asked = 0;
    this.input = el("input", {type: "search", id: "picker", placeholder: "task or annotation…", autocomplete: "off",
      "aria-label": "pick a task or annotation", "aria-controls": "picker-list",
      title: "type to search this run's task ids and annotation values (with their counts);"
        + " choose one to filter by it"});
    this.list = el("div", {className: "picker-list", id: "picker-list", role: "listbox", hidden: true});
    this.node = el("div", {className: "picker"}, this.input, this.list);
    let timer = null;
    this.input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.search(), PAUSE_MS);
    });
    this.input.addEventListener("focus", () => this.search());
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.close();
      if (event.key === "ArrowDown") this.list.querySelector("button")?.focus();
    });
    this.node.addEventListener("focusout", (event) => { if (!this.node.contains(event.relatedTarget)) this.close(); });
  }

  setRun(runId) {
    this.runId = runId;
    this.input.value = "";
    this.close();
  }

  close() {
    this.asked += 1;  // an answer still on its way is not shown
    this.list.hidden = true;
  }

  async search() {
    const asked = ++this.asked;
    let body;
    try {
      body = await get("/values", {run_id: this.runId, q: this.input.value.trim()});
    } catch (error) {
      body = {error: error.message};
    }
    if (asked !== this.asked) return;
    replace(this.list,
      body.error ? el("p", {className: "notice error"}, `Cannot list values: ${body.error}`) : this.options(body));
    this.list.hidden = false;
  }

  options(body) {
    const parts = [];
    const more = (listed, what) => listed.has_more
      ? el("p", {className: "muted small"},
        `${num(listed.matching - listed.values.length)} more ${what}: type to narrow`)
      : null;
    const {tasks} = body;
    if (tasks.values.length) {
      parts.push(el("p", {className: "picker-head muted small"},
        `tasks · ${num(tasks.matching)} of ${num(tasks.total)}`));
      parts.push(tasks.values.map(({value, count}) => this.option({task: value}, `task ${value}`, count)),
        more(tasks, "tasks"));
    }
    for (const entry of body.annotations) {
      parts.push(el("p", {className: "picker-head muted small"}, `annotation ${entry.key}`));
      parts.push(entry.values.map(({value, count}) =>
        this.option({ann: `${entry.key}=${value}`}, `${entry.key} = ${value}`, count)), more(entry, "values"));
    }
    if (body.annotation_keys.has_more) {
      parts.push(el("p", {className: "muted small"},
        `${num(body.annotation_keys.matching - body.annotations.length)} more annotation keys: type to narrow`));
    }
    return parts.length ? parts : el("p", {className: "muted small"}, "no task or annotation value holds that");
  }

  option(pick, label, count) {
    const name = pick.task !== undefined ? `task=${pick.task}` : `ann=${pick.ann}`;
    return el("button", {type: "button", role: "option", className: "picker-option", dataset: {pick: name},
      onclick: () => {
        this.input.value = "";
        this.close();
        this.onPick(pick);
      }}, label, el("span", {className: "muted"}, ` (${num(count)})`));
  }
}
