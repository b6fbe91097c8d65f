// Two runs (or one run at two steps) group by group, from `/v1/compare/runs`: one row per key both
// sides have, each side's reward dots as recorded, and every key only one side has listed below,
// never dropped. Nothing is averaged or subtracted. A row expands into both groups' rollouts;
// picking one of each side (or shift-clicking any two) opens the two-rollout compare.

import {get} from "./api.js";
import {el, replace} from "../draw/dom.js";
import {num, plural, shortId} from "../draw/format.js";
import {recordedReward, rewardDot, rewardLegend} from "../draw/reward.js";
import {emptyState, pairCompareHash} from "../draw/route.js";
import {rollup} from "./run-groups.js";
import {flagBadge} from "../draw/viewer.js";

const LIMIT = 100;
const COLUMNS = 7;

/** The "compare with run…" form: the run to compare with (this one too, for two steps), a step
 *  for each side and the keys to match groups by (empty: the server's group key). */
export function compareForm(state, runs, go) {
  const other = el("select", {name: "vs", "aria-label": "compare with run"},
    el("option", {value: ""}, "compare with run…"),
    runs.map((run) => el("option", {value: run.id, selected: run.id === state.vs},
      run.id === state.run ? `${run.id} (this run: two steps)` : run.id)));
  const field = (name, value, label, kind) => el("input", {type: "search", name, value, placeholder: label,
    "aria-label": label, className: `compare-input ${kind}`, autocomplete: "off"});
  const stepA = field("sa", state.sa, "step A", "step-input");
  const stepB = field("sb", state.sb, "step B", "step-input");
  const by = field("by", state.by, "match by (keys)", "keys-input");
  const compare = () => {
    if (!other.value) return;
    go({...emptyState(), run: state.run, view: "vs", vs: other.value,
      sa: stepA.value.trim(), sb: stepB.value.trim(), by: by.value.trim()});
  };
  for (const input of [stepA, stepB, by]) {
    input.addEventListener("keydown", (event) => event.key === "Enter" && compare());
  }
  // no <form>: the page holds none (tests/browser/test_hostile.py), so Enter in a box is handled here
  return el("div", {className: "compare-form", role: "group", "aria-label": "compare runs"}, other, stepA, stepB, by,
    el("button", {type: "button", dataset: {link: "compare-runs"}, onclick: compare}, "compare"));
}

/** "run (step 3)": one side as the URL names it. */
function sideName(run, step) {
  return step !== "" && step !== null && step !== undefined ? `${run} (step ${step})` : run;
}

/** A group's key values as text: "step 2 · instance_id b". */
function keyText(values, key) {
  const entries = Object.entries(values || {});
  return entries.length ? entries.map(([name, value]) => `${name} ${value}`).join(" · ") : key;
}

export class RunsCompare {
  constructor(main, {go, open, runs}) {
    this.main = main;
    this.go = go;
    this.open = open;  // (run, trajectory id): the rollout in its run's page
    this.runs = runs;
    this.expanded = new Set();
    this.picks = [];  // [{side, run, id}] in click order
  }

  async show(state) {
    const key = JSON.stringify([state.run, state.vs, state.sa, state.sb, state.by]);
    this.state = state;
    if (key !== this.key) {
      Object.assign(this, {key, offset: 0, answer: null, picks: []});
      this.expanded.clear();
    }
    this.build();
    if (this.answer) this.draw();
    await this.fetch(false);
  }

  build() {
    const state = this.state;
    this.headBox = el("header", {className: "run-head"},
      el("h1", {}, `${sideName(state.run, state.sa)} vs ${sideName(state.vs, state.sb)}`),
      el("p", {className: "facts muted"}, "group by group; rewards as recorded, nothing averaged"));
    this.summaryBox = el("p", {className: "facts compare-summary"}, "loading…");
    this.legendBox = el("div", {className: "legends"});
    this.pickBox = el("p", {className: "pick-hint muted small"});
    this.tableBox = el("div", {className: "table-box"});
    this.pagerBox = el("div", {className: "pager"});
    this.onlyBox = el("div", {className: "only-keys"});
    replace(this.main, this.headBox, compareForm(state, this.runs(), this.go), this.summaryBox, this.legendBox,
      this.pickBox, this.tableBox, this.pagerBox, this.onlyBox);
  }

  params() {
    const state = this.state;
    return {a: state.run, b: state.vs, step_a: state.sa, step_b: state.sb, by: state.by, limit: LIMIT,
      offset: this.offset};
  }

  async fetch(poll) {
    const key = this.key;
    try {
      const {body, changed} = await get("/compare/runs", this.params(), {poll: true});
      if (key !== this.key) return;
      if (poll && !changed) return;
      this.answer = body;
      this.draw();
    } catch (error) {
      if (key !== this.key) return;
      this.answer = null;
      this.summaryBox.textContent = "";
      replace(this.tableBox, el("p", {className: "notice error"}, `Cannot compare these runs: ${error.message}`));
    }
  }

  poll() {
    return this.fetch(true);
  }

  draw() {
    const answer = this.answer;
    replace(this.summaryBox, `matched by ${answer.by.join(", ")} · ${plural(answer.total, "key")} in both · `,
      `${num(answer.only_a.length)} only in A · ${num(answer.only_b.length)} only in B`);
    replace(this.legendBox, rewardLegend(answer.reward_range, "over both sides' groups of every key in both"));
    this.drawPicks();
    const head = el("tr", {}, el("th", {scope: "col"}, "key"),
      el("th", {scope: "col"}, `A · ${sideName(answer.a, answer.step_a)}`),
      el("th", {scope: "col", className: "num"}, "n"),
      el("th", {scope: "col"}, "flags"),
      el("th", {scope: "col", className: "side-b"}, `B · ${sideName(answer.b, answer.step_b)}`),
      el("th", {scope: "col", className: "num"}, "n"), el("th", {scope: "col"}, "flags"));
    const table = el("table", {className: "rows runs-compare"}, el("thead", {}, head));
    for (const pair of answer.matched) table.append(this.pairBody(pair));
    if (!answer.matched.length) {
      table.append(el("tbody", {}, el("tr", {className: "empty"}, el("td", {colSpan: COLUMNS}, "No key is in both."))));
    }
    replace(this.tableBox, table);
    this.drawPager();
    replace(this.onlyBox, this.onlyList("a", answer.only_a, answer.a), this.onlyList("b", answer.only_b, answer.b));
  }

  pairBody(pair) {
    const open = this.expanded.has(pair.key);
    const toggle = () => {
      if (open) this.expanded.delete(pair.key);
      else this.expanded.add(pair.key);
      this.draw();
    };
    const row = el("tr", {className: `nav group-row matched-row${open ? " expanded" : ""}`, tabindex: "-1",
      dataset: {key: pair.key}, "aria-expanded": open ? "true" : "false", onclick: toggle},
    el("td", {className: "task"}, el("span", {className: "caret"}, open ? "▾" : "▸"), " ",
      el("span", {title: pair.key}, keyText(pair.a.values, pair.key))),
    ...this.sideCells("a", pair.a), ...this.sideCells("b", pair.b));
    const body = el("tbody", {className: "group pair", dataset: {key: pair.key}}, row);
    if (open) body.append(this.membersRow(pair));
    return body;
  }

  /** One side's dots, n and flags; a dot opens its rollout. */
  sideCells(side, group) {
    const run = side === "a" ? this.answer.a : this.answer.b;
    const short = group.modal_n && group.n < group.modal_n;
    const dots = (group.rewards || []).map((member) => {
      const dot = this.memberDot(member);
      dot.classList.add("open-dot");
      dot.dataset.traj = member.id;
      dot.addEventListener("click", (event) => { event.stopPropagation(); this.open(run, member.id); });
      return dot;
    });
    return [
      el("td", {className: `side side-${side}`}, el("span", {className: "dots"}, dots)),
      el("td", {className: "num"}, num(group.n),
        short ? el("span", {className: "muted"}, ` of ${group.modal_n}`) : null,
        group.superseded_count ? el("span", {className: "muted small"}, ` · ${group.superseded_count} retried`) : null),
      el("td", {className: "flags"}, (group.flags || []).map((name) => flagBadge(name)), rollup(group.rollup)),
    ];
  }

  memberDot(member) {
    return rewardDot(member.reward, member.value, this.answer.reward_range,
      `${member.id} · rep ${member.repetition_id ?? "-"} · attempt ${member.attempt ?? "-"}`
        + ` · reward ${recordedReward(member.reward)} · stop ${member.stop_reason ?? "-"}`);
  }

  /** Both groups' counting rollouts side by side, each a pick for the two-rollout compare. */
  membersRow(pair) {
    const list = (side, group) => {
      const run = side === "a" ? this.answer.a : this.answer.b;
      return el("div", {className: `pair-members side-${side}`},
        el("p", {className: "muted small"}, `${side.toUpperCase()} · ${run}`),
        (group.rewards || []).map((member) => {
          const picked = this.picks.some((pick) => pick.run === run && pick.id === member.id);
          return el("button", {type: "button", className: `member-pick${picked ? " picked" : ""}`,
            dataset: {traj: member.id, side}, "aria-pressed": picked ? "true" : "false",
            onclick: (event) => { event.stopPropagation(); this.pick({side, run, id: member.id}, event.shiftKey); }},
          this.memberDot(member), ` rep ${member.repetition_id ?? "-"} · a${member.attempt ?? "-"} · `,
          recordedReward(member.reward), " ", el("span", {className: "muted mono"}, shortId(member.id)));
        }));
    };
    return el("tr", {className: "sub pair-detail"}, el("td", {colSpan: COLUMNS},
      el("div", {className: "pair-sides"}, list("a", pair.a), list("b", pair.b))));
  }

  /** A click picks that side's rollout; a shift-click adds any rollout. Two picks open the compare. */
  pick(choice, any) {
    const kept = this.picks.filter((p) => !(p.run === choice.run && p.id === choice.id)
      && (any || p.side !== choice.side));
    this.picks = [...kept, choice];
    const pair = any ? this.picks.slice(-2) : ["a", "b"].map((side) => this.picks.find((p) => p.side === side));
    if (pair.length === 2 && pair.every(Boolean)) {
      const [first, second] = pair;
      this.picks = [];
      location.hash = pairCompareHash(first.run, first.id, second.id, second.run);
      return;
    }
    this.draw();
  }

  drawPicks() {
    const picked = this.picks.map((p) => `${p.side.toUpperCase()} ${shortId(p.id)}`).join(", ");
    this.pickBox.textContent = picked
      ? `picked ${picked}: pick one of the other side to compare the two (shift-click: any rollout)`
      : "expand a row, then click one rollout of A and one of B to compare the two (shift-click: any two)";
  }

  drawPager() {
    const answer = this.answer;
    if (answer.total <= answer.limit) {
      this.pagerBox.replaceChildren();
      return;
    }
    const move = (offset) => { this.offset = offset; this.fetch(false); };
    const shown = answer.matched.length;
    replace(this.pagerBox,
      el("button", {type: "button", className: "ghost", disabled: answer.offset <= 0, dataset: {page: "prev"},
        onclick: () => move(Math.max(0, answer.offset - answer.limit))}, "‹ prev"),
      el("span", {className: "pager-text"},
        `${num(answer.offset + 1)}–${num(answer.offset + shown)} of ${num(answer.total)}`),
      el("button", {type: "button", className: "ghost", disabled: !answer.has_more, dataset: {page: "next"},
        onclick: () => move(answer.offset + answer.limit)}, "next ›"));
  }

  /** Every key only one side has, listed in that side's group order. */
  onlyList(side, keys, run) {
    return el("section", {className: `only-list only-${side}`, dataset: {side}},
      el("h2", {className: "section-title"}, `only in ${side.toUpperCase()} · ${run} `,
        el("span", {className: "muted small"}, plural(keys.length, "key"))),
      keys.length
        ? el("ul", {className: "key-list"}, keys.map((key) => el("li", {className: "mono", dataset: {key}}, key)))
        : el("p", {className: "muted small"}, "none"));
  }
}
