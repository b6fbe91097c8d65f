// The Forks tab: two paths compared from where they part: the last node they share (dimmed),
// then both continuations side by side. The drawer loads the comparison of the pair (/forks)
// into its bundle; this only draws it.

import {el, select} from "./dom.js";
import {num, plural} from "./format.js";
import {strip} from "./strip.js";
import {blockElement, wireReadout} from "./tokens.js";
import {trainOnce} from "./train-once.js";
import {forkBadge} from "./viewer.js";

/** The forks (/graph, skycap's names) where paths a and b part: the first node of either after
 *  the last shared one, under that node (the exact pair first, when skycap named it). */
function partingForks(fork, forks) {
  const firsts = [fork.a_node_id_first, fork.b_node_id_first];
  const parent = fork.shared_nodes ? fork.last_shared_node_id : null;
  const here = (forks || []).filter((f) => firsts.includes(f.node_id) && (f.parent_id ?? null) === parent);
  const exact = here.filter((f) => firsts.includes(f.sibling_id));
  return exact.length ? exact : here;
}

/** The pair the tab compares: fa and fb, clamped to the paths there are; null under two paths. */
export function forkPair(paths, state) {
  const count = (paths?.paths || []).length;
  if (count < 2) return null;
  const a = Math.min(state.fa, count - 1);
  const b = Math.min(state.fb, count - 1);
  return {a, b, key: `${a}|${b}`};
}

export function renderForks(bundle, state, {go, lazy}) {
  const paths = bundle.paths?.paths || [];
  const box = el("div", {className: "forks-tab"});
  const pair = forkPair(bundle.paths, state);
  if (!pair) {
    box.append(el("p", {className: "notice"},
      "One path: this trajectory never forked, so there is nothing to compare."));
    return box;
  }
  const {a, b} = pair;
  for (const [asked, shown] of [[state.fa, a], [state.fb, b]]) {
    if (asked > shown) {
      box.append(el("p", {className: "notice warn past-last"},
        `path ${asked} does not exist: comparing path ${shown} of 0–${paths.length - 1}.`));
    }
  }
  const options = paths.map((p) => [String(p.index), `path ${p.index} → ${p.leaf_node_id}`]);
  box.append(el("div", {className: "toolbar"},
    el("label", {}, "a ", select(options, a, (v) => go({fa: Number(v)}, {replace: true}),
      {dataset: {fork: "a"}, "aria-label": "path a"})),
    el("label", {}, "b ", select(options, b, (v) => go({fb: Number(v)}, {replace: true}),
      {dataset: {fork: "b"}, "aria-label": "path b"}))));
  const fork = bundle.forks?.get(pair.key);
  box.append(el("div", {className: "fork-result"},
    a === b ? el("p", {className: "notice"}, "Pick two different paths to compare.")
      : !fork ? el("p", {className: "muted"}, "comparing…")
        : fork.error ? el("p", {className: "notice error"}, `Cannot compare: ${fork.error}`)
          : comparison(fork, bundle, paths[a], paths[b], lazy)));
  return box;
}

function comparison(fork, bundle, pathA, pathB, lazy) {
  const unit = fork.unit;
  const nodes = bundle.paths.nodes || {};
  const shared = fork.shared_nodes
    ? `They agree on ${plural(fork.shared_nodes, "node")}`
      + ` (${num(unit === "tokens" ? fork.shared_tokens : fork.shared_chars)} ${unit}),`
      + ` up to ${fork.last_shared_node_id}`
      + `${fork.last_shared ? ` (${fork.last_shared.role ?? "-"}, ${fork.last_shared.author})` : ""}.`
    : "They share nothing: they start from different roots.";
  const named = partingForks(fork, bundle.graph?.forks);
  const kind = named.length
    ? el("span", {className: "fork-kinds"}, " They fork there: ",
      named.map((f, i) => [i ? "; " : "", forkBadge(f), ` at ${f.node_id} beside ${f.sibling_id} (${f.detail})`]), ".")
    : null;
  const cut = [fork.a_part, fork.b_part].some((part) => part?.next !== undefined)
    ? ` Shown: the first ${num(fork.a_part.to - fork.a_part.from)} and ${num(fork.b_part.to - fork.b_part.from)}`
      + ` of them; the Path tab has the rest.`
    : "";
  const then = `Then path ${fork.a} has ${plural(fork.a_nodes_after, "node")} from ${fork.a_node_id_first ?? "-"}`
    + ` and path ${fork.b} has ${num(fork.b_nodes_after)} from ${fork.b_node_id_first ?? "-"}.`;
  const column = (label, path, blocks) => {
    const readout = el("p", {className: "readout small"}, "hover a token");
    const list = el("div", {className: "blocks"},
      blocks.map((block) => blockElement(block, nodes[block.node_id], lazy, {unit, controls: false})));
    wireReadout(list, readout);
    return el("div", {className: "fork-side", dataset: {side: label}},
      el("h3", {}, `path ${path.index}`, el("span", {className: "muted small"}, ` → ${path.leaf_node_id}`)),
      strip(blocks, {unit}), readout, list);
  };
  return [
    el("p", {className: "fork-sentence"}, shared, kind, " ", then, cut),
    trainOnce(fork.train_once),
    fork.shared_blocks?.length
      ? el("div", {className: "blocks shared-blocks"}, el("h3", {className: "muted small"}, "last shared node"),
        fork.shared_blocks.map((block) =>
          blockElement(block, nodes[block.node_id], lazy, {unit, controls: false, dim: true})))
      : null,
    el("div", {className: "side-by-side"},
      column("a", pathA, fork.a_blocks || []), column("b", pathB, fork.b_blocks || [])),
  ];
}
