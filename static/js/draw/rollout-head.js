// A rollout's header (its id, facts, reward, flags and notices), as the
// drawer and a snapshot file show them: pure functions of the server's answers (the
// `/trajectories/{id}` header, /paths, /graph, /exchanges), fetching nothing.

import {el} from "./dom.js";
import {visible} from "./facts.js";
import {num, pct, trainedText, unitShort} from "./format.js";
import {rewardCell} from "./reward.js";
import {flagBadge, forkKinds, textOnlyNotice} from "./viewer.js";

/** The header's trainable figure from the server's `size`: totals over the samples the trainer gets. */
function trainableFact(size) {
  if (size?.trainable === 0 && !size.tokens) return "0";  // no nodes: nothing could train
  if (!size?.tokens) return "-";
  if (size.unit !== "tokens") return `- (no tokens: ${num(size.tokens)} ch)`;
  return `${num(size.trainable)}/${num(size.tokens)} ${pct(size.trainable, size.tokens)}`;
}

/** Which rule chose what trains: the record's own samples, or (no samples) the viewer's `all`. */
function ruleFact(rule) {
  return rule ? `${rule} rule (the record's samples)` : "all rule (applied by the viewer: the record has no samples)";
}

/** How many samples the trainer gets, and the longest path (sample or not), from `size`. */
function samplesFact(size) {
  if (!size) return "-";
  return `${num(size.samples)} · longest ${num(size.longest)} ${unitShort(size.unit)}`;
}

/** Each sample, one line: a path's own (its `samples` when it carries other than the one through its
 *  leaf), else the path itself when it trains. The samples fact's title. */
function samplesList(paths) {
  return (paths || []).flatMap((path) => {
    const unit = unitShort(path.unit);
    const size = path.unit === "tokens" ? path.token_count : path.char_count;
    const listed = path.samples || (path.trains ? [{row: null, leaf_node_id: path.leaf_node_id, size,
      trainable: path.unit === "tokens" ? path.trainable_count : null}] : []);
    return listed.map((sample) => `${sample.row === null ? `path ${path.index}` : `row ${sample.row}`} through`
      + ` ${sample.leaf_node_id}: ${num(sample.size)} ${unit}`
      + `${sample.trainable === null ? "" : `, ${num(sample.trainable)} in the loss`}`);
  }).join("\n");
}

/** The header of `bundle`'s rollout: `actions` go beside its id, `notes` above its own notices, and
 *  the reward is coloured on `rewardRange` (the run's, as in the table). */
export function rolloutHead(bundle, {actions = [], notes = [], rewardRange = null} = {}) {
  const t = bundle.trajectory;
  const bridged = t.skycap?.bridged || {};
  const facts = [
    ["mode", t.mode ?? "-"], ["status", `${t.status ?? "-"}${t.ended === false ? " (not ended)" : ""}`],
    ["task", t.task_id === null || t.task_id === undefined ? "-" : visible(String(t.task_id), false)],
    ["step", num(t.step)], ["trains", ruleFact(t.samples_rule)], ["samples", samplesFact(t.size)],
    ["trainable", trainableFact(t.size)],
    ["tokenizer", t.tokenizer ?? "-"],
    ["calls", `${num(t.capture?.exchange_count ?? 0)} · bridged true=${bridged.true ?? 0} false=${bridged.false ?? 0}`
      + ` null=${bridged.null ?? 0} absent=${bridged.absent ?? 0}`],
    ["created", t.created_at ? String(t.created_at).replace("T", " ").slice(0, 19) : "-"],
  ];
  if ("superseded" in t) facts.push(["trained (run index)", trainedText(t)]);
  if (t.unreadable) for (const entry of facts) entry[1] = "-";  // only its document could say: unknown, not 0
  const notices = [...notes, textOnlyNotice(bundle.paths)];
  for (const problem of t.unreadable ? [] : t.record_problems || []) {
    notices.push(el("p", {className: "notice error"}, `Malformed record: ${problem}.`));
  }
  const fact = (label, value, title = null) => el("div", {className: "fact", dataset: {fact: label}},
    el("dt", {}, label), el("dd", {title: title || null}, value));
  return el("header", {className: "drawer-head"},
    el("div", {className: "drawer-title"}, el("h2", {className: "traj-id", tabindex: "-1"}, t.id), actions),
    el("dl", {className: "facts"}, facts.map(([label, value]) => fact(label, value,
      label === "samples" && !t.unreadable ? samplesList(bundle.paths?.paths) : null)),
      fact("reward", rewardCell(t.annotations?.reward, t.reward_value, rewardRange))),
    el("div", {className: "flags"}, (t.flags || []).map((name) => flagBadge(name, "",
      {more: name === "forked" && bundle.graph?.forks?.length ? `Forks: ${forkKinds(bundle.graph.forks)}.` : ""}))),
    notices);
}
