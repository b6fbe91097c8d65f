// The pair view: one path of each of two rollouts side by side, from the server's /v1/compare.
// The prefix they share is one folded line; then where each side parts, and the turns from there
// paired row by row (a model reply beside a model reply), the differing ranges marked and the units
// of the parting turn that are still shared dimmed. Later parts of the turns load on scroll.

import {get, trajectoryPath} from "./api.js";
import {button, el, replace, select} from "../draw/dom.js";
import {num, plural, unitShort} from "../draw/format.js";
import {extend, moreRow} from "../draw/parts.js";
import {rewardCell} from "../draw/reward.js";
import {emptyState, format} from "../draw/route.js";
import {blockElement, LazyText, markTokens, textRange, wireReadout} from "../draw/tokens.js";
import {flagBadge} from "../draw/viewer.js";

const SIDES = ["a", "b"];

/** The /v1/compare parameters of the pair `state` shows. */
function compareParams(state) {
  return {a: state.a, b: state.b, run_a: state.run, run_b: state.rb || state.run, path_a: state.pa, path_b: state.pb};
}

/** The run-wide reward range of `run`, to colour a reward as its table does (null when unknown). */
function rewardRange(run) {
  return get("/trajectories", {run_id: run, limit: 1}).then((body) => body.reward_range ?? null, () => null);
}

export class PairView {
  constructor(main, {go}) {
    this.main = main;
    this.go = go;
    this.key = null;
  }

  /** Draw the pair `state` names; the same pair is drawn once. */
  async show(state) {
    const params = compareParams(state);
    const key = JSON.stringify(params);
    if (key === this.key && this.box?.isConnected) return;
    this.hide();
    this.key = key;
    this.state = state;
    this.params = params;
    this.box = el("section", {className: "pair-view"}, this.title(state),
      el("p", {className: "muted"}, "comparing…"));
    replace(this.main, this.box);
    if (!state.a || !state.b) {
      this.box.append(el("p", {className: "notice error"}, "A pair needs two rollouts: the URL names a and b."));
      this.box.querySelector("p.muted").remove();
      return;
    }
    let answer;
    let ranges;
    try {
      const rangeA = rewardRange(params.run_a);
      const rangeB = params.run_b === params.run_a ? rangeA : rewardRange(params.run_b);
      [answer, ...ranges] = await Promise.all([get("/compare", params), rangeA, rangeB]);
    } catch (error) {
      if (key === this.key) {
        replace(this.box, this.title(state), el("p", {className: "notice error"}, `Cannot compare: ${error.message}`));
      }
      return;
    }
    if (key === this.key) this.draw(answer, ranges);
  }

  hide() {
    this.key = null;
    this.lazy?.disconnect();
    this.nearEnd?.disconnect();
  }

  title(state) {
    const back = format({...emptyState(), run: state.run});
    return el("div", {className: "pair-title"},
      el("h1", {}, "two rollouts side by side"),
      el("a", {href: back, dataset: {link: "back-to-run"}}, `‹ run ${state.run}`),
      button("swap A ↔ B", () => this.go({run: state.rb || state.run, rb: state.rb ? state.run : "",
        a: state.b, b: state.a, pa: state.pb, pb: state.pa}), {className: "ghost", dataset: {link: "swap"}}));
  }

  draw(answer, ranges) {
    this.answer = answer;
    this.unit = answer.unit;
    this.lazy = new LazyText(this.main);
    this.nearEnd = new IntersectionObserver((entries) => {
      for (const entry of entries) if (entry.isIntersecting) entry.target.click();
    }, {root: this.main, rootMargin: "800px 0px"});
    this.readout = el("p", {className: "readout", "aria-live": "polite",
      hidden: this.unit !== "tokens" || answer.identical}, "hover a token");
    this.rows = el("div", {className: "pair-turns"});
    wireReadout(this.rows, this.readout);
    replace(this.box, this.title(this.state),
      el("div", {className: "pair-row pair-heads"},
        SIDES.map((side, i) => this.sideHead(side, answer[side], ranges[i]))),
      answer.why_text
        ? el("p", {className: "notice info why-text"}, `Compared by message text, in characters: ${answer.why_text}.`)
        : null,
      this.summary(answer), this.readout, this.rows);
    this.addTurns(answer);
  }

  sideHead(side, summary, range) {
    const t = summary.trajectory;
    const run = side === "a" ? this.params.run_a : this.params.run_b;
    const meta = t.meta || {};
    const facts = [this.params.run_a !== this.params.run_b ? `run ${run}` : null,
      t.task_id, t.step !== null && t.step !== undefined ? `step ${t.step}` : null,
      meta.repetition_id !== undefined ? `rep ${meta.repetition_id}` : null,
      meta.attempt !== undefined ? `attempt ${meta.attempt}` : null].filter(Boolean);
    const pathKey = side === "a" ? "pa" : "pb";
    const paths = Array.from({length: summary.path_count}, (_, i) => [String(i), `path ${i}`]);
    return el("header", {className: "pair-head", dataset: {side}},
      el("h2", {}, el("span", {className: `side-label side-${side}`}, side.toUpperCase()), " ",
        el("a", {href: format({...emptyState(), run, traj: t.id}), className: "traj-link", title: "open this rollout"},
          t.id)),
      el("p", {className: "small muted"}, facts.join(" · ")),
      el("p", {className: "pair-facts"}, rewardCell(t.annotations?.reward, t.reward_value, range),
        el("span", {className: `status status-${t.status}`},
          `${t.status ?? "-"}${t.ended === false ? " (not ended)" : ""}`),
        el("span", {}, `stop: ${summary.stop_reason ?? "-"}`),
        el("span", {dataset: {size: summary.size}}, `${num(summary.size)} ${this.unit}`),
        summary.path_count > 1
          ? el("label", {}, "path ",
            select(paths, summary.path, (value) => this.go({[pathKey]: Number(value)}, {replace: true}),
              {dataset: {pairPath: side}, "aria-label": `path of ${side.toUpperCase()}`}),
            ` of ${summary.path_count}`)
          : null),
      summary.trains === false
        ? el("p", {className: "notice warn small"}, "The record's samples do not train this path.")
        : null,
      el("div", {className: "flags"}, (t.flags || []).map((name) => flagBadge(name))));
  }

  /** The shared prefix as one line, and where each side parts. */
  summary(answer) {
    const unit = this.unit;
    const size = unit === "tokens" ? answer.common_prefix_tokens : answer.common_prefix_chars;
    const nodes = answer.shared_nodes;
    const messages = nodes.a === nodes.b ? plural(nodes.a, "whole message")
      : `${plural(nodes.a, "whole message")} of A, ${num(nodes.b)} of B`;
    const chars = unit === "tokens" ? ` (${num(answer.common_prefix_chars)} characters)` : "";
    const shared = this.sharedFold(answer.shared_nodes.a,
      el("span", {className: "pair-shared", dataset: {shared: size}},
        el("strong", {}, "shared: "), `${num(size)} ${unit}${chars} · ${messages}`));
    if (answer.itself) {
      return [shared, el("p", {className: "notice warn itself"},
        `A and B are the same path of the same rollout: it is compared with itself (${num(answer.a.size)} ${unit}).`)];
    }
    if (answer.identical) {
      return [shared, el("p", {className: "notice ok identical"},
        `The two paths are identical: ${num(answer.a.size)} ${unit}, nothing parts them.`)];
    }
    const where = (side) => {
      const point = answer.diverge[side];
      return point.node_id === null ? `${side.toUpperCase()} ends there`
        : [`${side.toUpperCase()} at `, el("span", {className: "node-id"}, point.node_id), ` +${num(point.offset)}`];
    };
    return [shared, el("p", {className: "pair-diverge"}, el("strong", {}, "they part at "),
      `${unit.slice(0, -1)} ${num(answer.diverge.a.position)}: `, where("a"), " · ", where("b"))];
  }

  /** The shared prefix's line, folded over its whole messages: opening it reads them (A's, from
   *  /paths) and draws them dimmed, as the Path tab draws blocks. */
  sharedFold(count, line) {
    if (!count) return el("p", {}, line);
    const body = el("div", {className: "blocks shared-blocks"});
    wireReadout(body, this.readout);
    const fold = el("details", {className: "pair-shared-fold",
      ontoggle: () => { if (fold.open && !body.firstChild) this.readShared(body, count); }},
    el("summary", {title: "show the shared messages"}, line), body);
    return fold;
  }

  async readShared(body, count) {
    body.append(el("p", {className: "muted small"}, "reading…"));
    const {a: id, run_a: run, path_a: index} = this.params;
    try {
      const paths = await get(`${trajectoryPath(id)}/paths`, {run_id: run});
      const path = paths.paths[index];
      const shared = new Set(path.node_ids.slice(0, count));
      replace(body, path.blocks.filter((block) => shared.has(block.node_id)).map((block) =>
        blockElement(block, paths.nodes[block.node_id], this.lazy, {unit: path.unit, controls: false, dim: true})),
      shared.size < count ? el("p", {className: "muted small"},
        `The first ${num(shared.size)} of ${num(count)} shared messages; the rollout's Path tab has them all.`) : null);
    } catch (error) {
      replace(body, el("p", {className: "notice error"}, `Cannot read the shared messages: ${error.message}`));
    }
  }

  /** Append the rows of a part of the turns, and the row that asks for the next part. */
  addTurns(part) {
    const nodes = this.answer.nodes;
    if (part !== this.answer) {
      for (const side of SIDES) Object.assign(nodes[side], part.nodes[side]);
      extend(this.answer.turns, part.turns);
    }
    this.rows.querySelector("button.more")?.remove();
    for (const turn of part.turns) this.rows.append(this.turnRow(turn, nodes));
    const more = moreRow(part.part, "turns", () => this.more(part.part.next));
    if (more) {
      this.rows.append(more);
      this.nearEnd.observe(more);
    }
  }

  async more(from) {
    if (this.fetching) return;
    const key = this.key;
    this.fetching = true;
    try {
      const part = await get("/compare", {...this.params, from});
      if (key === this.key) this.addTurns(part);
    } catch (error) {
      if (key === this.key) {
        this.rows.append(el("p", {className: "notice error"}, `Cannot read more turns: ${error.message}`));
      }
    } finally {
      this.fetching = false;
    }
  }

  turnRow(turn, nodes) {
    const diverge = this.answer.diverge;
    const parts = Boolean(diverge) && SIDES.some((side) => turn[side] && turn[side].node_id === diverge[side].node_id);
    const cells = SIDES.map((side, i) => this.cell(side, turn[side],
      turn.diff.map((range) => range.slice(2 * i, 2 * i + 2)), turn[side] && nodes[side][turn[side].node_id]));
    if (turn.same) {
      const what = turn.a;
      return el("details", {className: "pair-row-box same"},
        el("summary", {}, el("span", {className: "same-badge"}, "same"),
          ` ${what.role ?? "(no role)"}${what.author === "model" ? " · model" : ""}`
            + ` · ${num(what.end - what.start)} ${unitShort(this.unit)} · A `,
          el("span", {className: "node-id"}, turn.a.node_id), " / B ",
          el("span", {className: "node-id"}, turn.b.node_id)),
        el("div", {className: "pair-row"}, cells));
    }
    return el("div", {className: `pair-row-box${parts ? " diverge" : ""}`},
      parts ? el("p", {className: "pair-label"}, "they part here") : null,
      el("div", {className: "pair-row"}, cells));
  }

  /** One side of a row: its turn's blocks as the Path tab draws them, `ranges` (offsets in the node)
   *  marked as differing and its first `shared` units dimmed; or an empty cell. */
  cell(side, turn, ranges, node) {
    if (!turn) {
      return el("div", {className: "pair-cell empty", dataset: {side}}, el("p", {className: "muted"}, "no turn here"));
    }
    const unit = this.unit;
    const sections = turn.blocks.map((block) => {
      const section = blockElement(block, node, this.lazy, {unit, controls: false});
      mark(section, block, [[0, turn.shared, "still-shared"], ...ranges.map(([from, to]) => [from, to, "diff"])], unit);
      return section;
    });
    return el("div", {className: "pair-cell", dataset: {side, node: turn.node_id}},
      el("p", {className: "turn-head small"}, el("span", {className: "role"}, turn.role ?? "(no role)"),
        ` · ${turn.author} · `, el("span", {className: "node-id"}, turn.node_id),
        ` · [${turn.start}:${turn.end}] · ${num(turn.end - turn.start)} ${unitShort(unit)}`,
        turn.shared ? el("span", {className: "muted"}, ` · its first ${num(turn.shared)} still shared`) : null,
        ranges.length ? el("span", {className: "diff-count"}, ` · ${plural(ranges.length, "difference")}`) : null),
      el("div", {className: "blocks"}, sections));
  }
}

/** Mark node ranges [from, to) of one block's section with a class: token spans in token mode,
 *  the characters (wrapped in a mark) in text mode, right to left so earlier offsets hold. */
function mark(section, block, ranges, unit) {
  const clipped = ranges
    .map(([from, to, name]) => [Math.max(from, block.node_start), Math.min(to, block.node_end), name])
    .filter(([from, to]) => from < to).sort((x, y) => y[0] - x[0]);
  for (const [from, to, name] of clipped) {
    if (unit === "tokens") {
      markTokens(section, from, to, name);
      continue;
    }
    const range = textRange(section, from - block.node_start, to - block.node_start);
    if (range && !range.collapsed) range.surroundContents(el("mark", {className: name}));
  }
}
