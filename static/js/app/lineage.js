// One prompt at every step of a run, from `/v1/lineage`: one column per step, one dot per rollout
// in the run's reward colours, superseded attempts hollow, flags beside each. A click opens the
// rollout; shift-clicking two opens the two-rollout compare.

import {get} from "./api.js";
import {el, replace} from "../draw/dom.js";
import {num, plural, shortId} from "../draw/format.js";
import {recordedReward, rewardDot, rewardLegend} from "../draw/reward.js";
import {pairCompareHash} from "../draw/route.js";
import {flagBadge, rowFlags} from "../draw/viewer.js";

export class LineageView {
  constructor(main, {open}) {
    this.main = main;
    this.open = open;  // (run, trajectory id): the rollout in its run's page
    this.picked = null;  // the first of a shift-clicked pair
  }

  async show(state) {
    const key = JSON.stringify([state.run, state.lkey, state.lvalue]);
    this.state = state;
    if (key !== this.key) Object.assign(this, {key, answer: null, picked: null});
    this.headBox = el("header", {className: "run-head"},
      el("h1", {}, `${state.lkey} = ${state.lvalue}`, el("span", {className: "project muted"}, ` · ${state.run}`)),
      el("p", {className: "facts muted"},
        "this prompt at every step; rewards as recorded, superseded attempts hollow"));
    this.summaryBox = el("p", {className: "facts"}, "loading…");
    this.legendBox = el("div", {className: "legends"});
    this.columnsBox = el("div", {className: "lineage-columns"});
    replace(this.main, this.headBox, this.summaryBox, this.legendBox, this.columnsBox);
    if (this.answer) this.draw();
    await this.fetch(false);
  }

  async fetch(poll) {
    const key = this.key;
    const state = this.state;
    try {
      const {body, changed} = await get("/lineage", {run_id: state.run, key: state.lkey, value: state.lvalue},
        {poll: true});
      if (key !== this.key || (poll && !changed)) return;
      this.answer = body;
      this.draw();
    } catch (error) {
      if (key !== this.key) return;
      this.summaryBox.textContent = "";
      replace(this.columnsBox, el("p", {className: "notice error"}, `Cannot list this prompt: ${error.message}`));
    }
  }

  poll() {
    return this.fetch(true);
  }

  draw() {
    const columns = this.answer.data;
    const rollouts = columns.flatMap((column) => column.rollouts);
    const superseded = rollouts.filter((rollout) => rollout.superseded).length;
    this.summaryBox.textContent = `${plural(rollouts.length, "rollout")}`
      + `${superseded ? ` (${superseded} superseded)` : ""}`
      + ` at ${plural(columns.length, "step")} · click a rollout to open it, shift-click two to compare them`;
    replace(this.legendBox, rewardLegend(this.answer.reward_range, "over every rollout listed"));
    replace(this.columnsBox, columns.length ? columns.map((column) => this.column(column))
      : el("p", {className: "notice info"}, `No rollout has ${this.state.lkey} = ${this.state.lvalue}.`));
  }

  column(column) {
    const superseded = column.rollouts.filter((rollout) => rollout.superseded).length;
    return el("section", {className: "lineage-step", dataset: {step: column.step ?? "none"}},
      el("h2", {className: "section-title"}, column.step === null ? "no step" : `step ${num(column.step)}`),
      el("p", {className: "muted small"}, superseded
        ? `${column.rollouts.length - superseded} counting · ${plural(superseded, "superseded attempt")}`
        : plural(column.rollouts.length, "rollout")),
      el("ul", {className: "lineage-rollouts"}, column.rollouts.map((rollout) => el("li", {}, this.rollout(rollout)))));
  }

  rollout(rollout) {
    const id = rollout.trajectory_id;
    const why = rollout.superseded ? ` · superseded by ${rollout.superseded_by}: does not count` : "";
    const dot = rewardDot(rollout.reward, rollout.reward_value, this.answer.reward_range,
      `${id} · rep ${rollout.repetition_id ?? "-"} · attempt ${rollout.attempt ?? "-"}`
        + ` · reward ${recordedReward(rollout.reward)}${why}`);
    if (rollout.superseded) dot.classList.add("superseded");
    return el("button", {type: "button",
      className: `lineage-rollout${rollout.superseded ? " superseded" : ""}${this.picked === id ? " picked" : ""}`,
      dataset: {traj: id}, onclick: (event) => this.choose(id, event.shiftKey)},
    dot, ` rep ${rollout.repetition_id ?? "-"} · a${rollout.attempt ?? "-"} · ${recordedReward(rollout.reward)} `,
    el("span", {className: "muted mono"}, shortId(id)), " ",
    rowFlags(rollout.flags || []).map((name) => flagBadge(name)));
  }

  /** A click opens the rollout; a shift-click picks it, and a second one opens the pair. */
  choose(id, shift) {
    if (!shift) {
      this.open(this.state.run, id);
      return;
    }
    if (this.picked && this.picked !== id) {
      const first = this.picked;
      this.picked = null;
      location.hash = pairCompareHash(this.state.run, first, id);
      return;
    }
    this.picked = id;
    this.draw();
  }
}
