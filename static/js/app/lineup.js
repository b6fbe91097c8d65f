// A group lined up: every counting member beside one anchor member (`/v1/groups/{key}/lineup`),
// as recorded: its repetition, reward, how much it shares with the anchor and the node where it
// parts. The group lined up and the anchor asked for are in the URL (lu, la); a member opens the
// pair view against the anchor, and "pass vs fail" the anchor against the lowest reward.

import {get} from "./api.js";
import {unanswerable} from "./bundle-limits.js";
import {button, el, replace} from "../draw/dom.js";
import {num, shortId} from "../draw/format.js";
import {pairPatch} from "../draw/pair-picks.js";
import {rewardCell} from "../draw/reward.js";
import {flagsCell} from "../draw/run-table.js";

export class Lineups {
  constructor({go}) {
    this.go = go;
    this.answers = new Map();  // "[run, key, anchor]" -> promise of the /lineup answer (or {error})
  }

  /** What the expanded group `key` shows above its rollouts: a "line up" button, or its line-up. */
  panel(state, key, range) {
    if (state.lu !== key) {
      return unanswerable(button("line up", () => this.go({lu: key, la: ""}, {replace: true}),
        {className: "line-up", dataset: {link: "line-up"},
          title: "every member beside the highest reward: what they share, where they part"}),
      "lining up a group (its members beyond those kept)");
    }
    const box = el("div", {className: "lineup", dataset: {group: key}},
      el("p", {className: "muted small"}, "lining up…"));
    const signature = JSON.stringify([state.run, key, state.la]);
    if (!this.answers.has(signature)) {
      this.answers.set(signature,
        get(`/groups/${encodeURIComponent(key)}/lineup`, {run_id: state.run, anchor: state.la || null})
          .catch((error) => ({error: error.message})));
    }
    // a box redrawn away meanwhile is filled unseen
    this.answers.get(signature).then((answer) => this.fill(box, answer, state, range));
    return box;
  }

  fill(box, answer, state, range) {
    const close = button("close", () => this.go({lu: "", la: ""}, {replace: true}),
      {className: "ghost", dataset: {link: "close-line-up"}});
    if (answer.error) {
      replace(box, el("p", {className: "notice error"}, `Cannot line up this group: ${answer.error}`), close);
      return;
    }
    const anchor = answer.anchor.trajectory_id;
    const unit = answer.unit || "tokens";
    const open = (id) => this.go(pairPatch(state.run, anchor, id));
    const anchorRow = answer.members.find((m) => m.trajectory_id === anchor);
    replace(box,
      el("div", {className: "lineup-head"},
        el("strong", {}, "line-up"),
        el("span", {className: "muted small"},
          ` · against ${answer.anchor.chosen ? "the anchor picked" : "the highest reward"}: `
            + `rep ${anchorRow?.repetition_id ?? "-"} `, el("code", {title: anchor}, shortId(anchor)),
        ` · shared ${unit} from the start, and the node where each parts`),
        answer.lowest ? button("pass vs fail", () => open(answer.lowest), {dataset: {link: "pass-vs-fail"},
          title: `the anchor beside the lowest reward (${answer.lowest}), side by side`}) : null,
        close),
      el("table", {className: "lineup-table"},
        el("thead", {}, el("tr", {},
          ["rep", "reward", `shared ${unit}`, "parts at (member / anchor)", "turns", "tokens", "flags", ""]
            .map((label) => el("th", {scope: "col"}, label)))),
        el("tbody", {}, answer.members.map((member) => this.row(member, anchor, unit, range, open)))));
  }

  row(member, anchor, unit, range, open) {
    const id = member.trajectory_id;
    const isAnchor = id === anchor;
    const shared = unit === "tokens" ? member.common_prefix_tokens : member.common_prefix_chars;
    const attempt = member.attempt === undefined || member.attempt === null ? "" : ` · a${member.attempt}`;
    const parts = member.error ? el("span", {className: "level-error", title: member.error}, member.error)
      : member.identical ? el("span", {className: "muted"}, isAnchor ? "the anchor" : "identical")
        : [el("span", {className: "node-id"}, member.diverge_node_id ?? "ends"), " / ",
          el("span", {className: "node-id"}, member.anchor_diverge_node_id ?? "ends")];
    return el("tr", {className: `lineup-row${isAnchor ? " anchor" : ""}`, dataset: {member: id},
      title: isAnchor ? `${id}: the anchor` : `${id}: open beside the anchor`,
      onclick: isAnchor ? null : () => open(id)},
    el("td", {className: "member"}, `rep ${member.repetition_id ?? "-"}${attempt} `,
      el("span", {className: "muted"}, shortId(id)),
      isAnchor ? el("span", {className: "anchor-badge"}, "anchor") : null),
    el("td", {}, rewardCell(member.reward, member.reward_value, range)),
    el("td", {className: "num", dataset: {shared: shared ?? ""}}, num(shared)),
    el("td", {}, parts),
    el("td", {className: "num"}, num(member.turns)),
    el("td", {className: "num"}, num(member.tokens)),
    flagsCell(member.flags),
    el("td", {className: "actions"}, isAnchor ? null : [
      button("compare", (event) => { event.stopPropagation(); open(id); },
        {className: "ghost", dataset: {link: "compare-member"}}),
      button("anchor", (event) => { event.stopPropagation(); this.go({la: id}, {replace: true}); },
        {className: "ghost", dataset: {link: "make-anchor"}, title: "line the group up against this member"})]));
  }
}

